/* fixed_work — FixedWork: each worker runs a fixed share of the units and
 * never steals.
 *
 * What: STATIC mode — worker w of W runs units w, w + W, w + 2W ... of the
 * original grid, with no claim, no atomic, no shared state and no hook on
 * the device: the cheapest persistent loop the transform makes (the
 * should_try_steal below only runs if someone forces gx_sched_mode=1; then
 * every worker drains its own range and stops).
 *
 * When it wins: balanced kernels whose blocks are short (element-wise
 * kernels, stencils of many small blocks): it saves the hardware's block
 * launch and teardown and pays only a loop. It is also the one schedule a
 * captured CUDA graph may replay (it needs no per-launch state).
 *
 * Trade-offs: no balancing at all — a worker that drew heavy units finishes
 * last, and the strided order starts a heavy cluster at the end of the grid
 * as late as the hardware does. Use it where the work per block is even. */
#include "blocksched/policies/sched_common.h"

GX_SCHED_SETTINGS(GX_SCHED_STATIC, 1);
GX_SCHED_GUARD(1); /* gx_sched_guard=0: unguarded */

SEC("gdev/sched/should_try_steal")
int fixed_work_steal(struct gdev_ctx *ctx)
{
	(void)ctx;
	return GDEV_SCHED_NO_STEAL;
}

GDEV_LICENSE("Dual BSD/GPL");
