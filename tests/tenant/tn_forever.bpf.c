/* tn_forever — a launch policy that holds every launch for as long as it
 * may (GPU_HOLD_MAX_US, again and again): the runtime's hold limit
 * (GPUEXT_TENANT_MAX_HOLD_MS) lets each launch pass anyway. */
#include "gx_common.bpf.h"

SEC("struct_ops/forever_launch")
int BPF_PROG(forever_launch, struct gpu_sched_ctx *gctx, struct gpu_tenant *t, struct gpu_launch *l)
{
	bpf_gpu_hold_launch(gctx, l, GPU_HOLD_MAX_US);
	return GPU_BYPASS;
}

SEC(".struct_ops.link")
struct gpu_sched_ops forever_ops = {
	.task_launch = (void *)forever_launch,
	.name = "forever",
};
