/* max_steals — MaxSteals(N): a worker steals at most N chunks, then stops.
 *
 * What: CLAIM mode, as greedy, but should_try_steal refuses once this
 * worker's own count of stolen chunks (ctx->sched_steals, kept by the
 * runtime in the worker's registers: no map, no atomic) reaches the knob
 * max_steals (default 4; gpuext-run --sched max_steals.bpf.o,max_steals=N).
 * Owners still drain their own ranges, so no unit is ever left behind.
 *
 * When it wins: when stealing has a cost the owner would not pay — cache
 * locality of consecutive blocks, or a co-running kernel that wants the SM
 * slots back: a worker that stops stealing leaves and frees its slot. With
 * N large it is greedy; with N = 0 it is the owner-only schedule.
 *
 * Trade-offs: a fixed N fits one imbalance: too small and the last heavy
 * chunks wait for their owners; too large and it is greedy. */
#include "blocksched/policies/sched_common.h"

GX_SCHED_SETTINGS(GX_SCHED_CLAIM, 8);
GX_SCHED_GUARD(1); /* gx_sched_guard=0: unguarded */
GX_SCHED_KNOB(__u32, max_steals, 4);

SEC("gdev/sched/should_try_steal")
int max_steals_steal(struct gdev_ctx *ctx)
{
	return ctx->sched_steals >= max_steals ? GDEV_SCHED_NO_STEAL : GDEV_DEFAULT;
}

GDEV_LICENSE("Dual BSD/GPL");
