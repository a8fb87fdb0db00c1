/* latency_budget — LatencyBudget(µs): a worker steals only while it has been
 * running for less than its budget.
 *
 * What: CLAIM mode; should_try_steal compares the worker's age — now
 * (%globaltimer, ns) minus ctx->sched_start (the worker's first claim, ns)
 * — with the knob budget_us (microseconds, default 200; times 1000 in the
 * comparison). Past the budget the worker leaves once its own range is
 * done; owners always drain their ranges.
 *
 * When it wins: shared GPUs, where a worker that leaves early frees its SM
 * slot for another tenant's blocks: no worker of this kernel holds a slot
 * much past budget_us of stealing. Alone on the GPU it is greedy for
 * kernels shorter than the budget and owner-only for longer ones.
 *
 * Trade-offs: the budget is wall time per worker, not per kernel: a budget
 * below the kernel's natural length turns off balancing exactly when a
 * long tail would need it (gpu_ext measured LatencyBudget about equal to
 * the baseline on a clustered heavy tail). */
#include "blocksched/policies/sched_common.h"

GX_SCHED_SETTINGS(GX_SCHED_CLAIM, 8);
GX_SCHED_GUARD(1); /* gx_sched_guard=0: unguarded */
GX_SCHED_KNOB(__u32, budget_us, 200);

SEC("gdev/sched/should_try_steal")
int latency_budget_steal(struct gdev_ctx *ctx)
{
	__u64 age_ns = gdev_globaltimer() - ctx->sched_start;
	return age_ns > (__u64)budget_us * 1000 ? GDEV_SCHED_NO_STEAL : GDEV_DEFAULT;
}

GDEV_LICENSE("Dual BSD/GPL");
