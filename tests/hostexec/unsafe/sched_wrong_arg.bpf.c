/* A scheduling policy handing bpf_gpu_set_attr its context as the queue. */
#include "hx_expect.h"
GX_EXPECT("bpf_gpu_set_attr: argument r2 must be struct gpu_queue * as passed to the handler");

SEC("struct_ops/sched_wrong_arg")
int BPF_PROG(sched_wrong_arg, struct gpu_sched_ctx *gctx, struct gpu_queue *q)
{
	bpf_gpu_set_attr(gctx, (struct gpu_queue *)gctx, GPU_ATTR_PRIORITY, 7);
	return GPU_DEFAULT;
}

SEC(".struct_ops.link")
struct gpu_sched_ops sched_wrong_arg_ops = {
	.task_init = (void *)sched_wrong_arg,
	.name = "sched_wrong_arg",
};
