/* greedy — Greedy: every worker steals whenever it runs out of its own work.
 *
 * What: CLAIM mode. A worker runs its own contiguous range of chunks from
 * the start (no shared counter), then takes chunks from the top of the
 * chunk space until none is left (blocksched/bs_rt.c). The steal hook
 * always says yes.
 *
 * When it wins: imbalance whose heavy part is clustered in the grid. The
 * hardware dispatches blocks in index order, so a heavy cluster at the end
 * starts last and runs alone; contiguous ranges start it at time 0 on the
 * workers that own it, and the others come to help when they are done.
 *
 * Trade-offs: one atomic per claim and one barrier per chunk; no memory of
 * past launches (the order inside the ranges is the grid's). Steals take
 * the last chunks of other workers' ranges, which may have been in their
 * caches' future; with uniform work it steals almost nothing. */
#include "blocksched/policies/sched_common.h"

GX_SCHED_SETTINGS(GX_SCHED_CLAIM, 8);
GX_SCHED_GUARD(1); /* gx_sched_guard=0: unguarded */

SEC("gdev/sched/should_try_steal")
int greedy_steal(struct gdev_ctx *ctx)
{
	(void)ctx;
	return GDEV_DEFAULT;
}

GDEV_LICENSE("Dual BSD/GPL");
