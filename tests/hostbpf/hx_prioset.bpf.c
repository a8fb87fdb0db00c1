/* hx_prioset — a scheduling policy for tests: queues bound get the priority
 * of the `prio` knob (0..GPU_PRIO_MAX, default the highest), so a stream's
 * priority visibly differs from what the application asked. With `nth` > 0
 * only the nth queue this policy binds (the process's context counts as the
 * first) gets it; the others keep theirs: the policy, not the program,
 * decides which stream's launches go first. */
#include "gx_common.bpf.h"

const volatile __u32 prio = GPU_PRIO_MAX;
const volatile __u32 nth = 0;

__u64 nr_set, nr_binds;

SEC("struct_ops/prioset_task_init")
int BPF_PROG(prioset_task_init, struct gpu_sched_ctx *gctx, struct gpu_queue *q)
{
	__u64 n = __sync_fetch_and_add(&nr_binds, 1) + 1;

	if (nth && n != nth)
		return GPU_DEFAULT;
	if (bpf_gpu_set_attr(gctx, q, GPU_ATTR_PRIORITY, prio) == 0)
		GX_STAT(nr_set);
	return GPU_BYPASS;
}

SEC(".struct_ops.link")
struct gpu_sched_ops prioset_ops = {
	.task_init = (void *)prioset_task_init,
	.name = "prioset",
};
