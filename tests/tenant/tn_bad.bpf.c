/* tn_bad — a launch policy that misbehaves on every call: a hold longer
 * than GPU_HOLD_MAX_US (kfunc misuse) and a return value that is no
 * decision. The executor disables it after 16 errors with one line; the
 * shim's launches then pass by the runtime's default. */
#include "gx_common.bpf.h"

__u64 nr_calls;

SEC("struct_ops/bad_launch")
int BPF_PROG(bad_launch, struct gpu_sched_ctx *gctx, struct gpu_tenant *t, struct gpu_launch *l)
{
	GX_STAT(nr_calls);
	bpf_gpu_hold_launch(gctx, l, GPU_HOLD_MAX_US + 1);
	return 7;
}

SEC(".struct_ops.link")
struct gpu_sched_ops bad_ops = {
	.task_launch = (void *)bad_launch,
	.name = "tnbad",
};
