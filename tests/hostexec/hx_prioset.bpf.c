/* hx_prioset — a scheduling policy for tests: every queue bound gets the
 * priority of the `prio` knob (0..GPU_PRIO_MAX, default the highest), so a
 * stream's priority visibly differs from what the application asked: prio=7
 * raises every stream, prio=0 flattens the program's own priorities. */
#include "gx_common.bpf.h"

const volatile __u32 prio = GPU_PRIO_MAX;

__u64 nr_set;

SEC("struct_ops/prioset_task_init")
int BPF_PROG(prioset_task_init, struct gpu_sched_ctx *gctx, struct gpu_queue *q)
{
	if (bpf_gpu_set_attr(gctx, q, GPU_ATTR_PRIORITY, prio) == 0)
		GX_STAT(nr_set);
	return GPU_BYPASS;
}

SEC(".struct_ops.link")
struct gpu_sched_ops prioset_ops = {
	.task_init = (void *)prioset_task_init,
	.name = "prioset",
};
