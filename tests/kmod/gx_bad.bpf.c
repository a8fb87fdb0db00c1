/* gx_bad — a deliberately broken memory policy (tests only): every handler
 * returns a value that is not a decision and misuses a kfunc, so the kernel
 * must count the errors, fall back to FIFO and finally disable it. */
#include "gx_common.bpf.h"

__u64 nr_calls;

SEC("struct_ops/bad_activate")
int BPF_PROG(bad_activate, struct gpu_mem_ctx *gctx, struct gpu_region *r)
{
	GX_STAT(nr_calls);
	bpf_gpu_set_prefetch_region(gctx, 7, 3); /* wrong hook, empty range */
	return 42;
}

SEC("struct_ops/bad_access")
int BPF_PROG(bad_access, struct gpu_mem_ctx *gctx, struct gpu_region *r)
{
	GX_STAT(nr_calls);
	return 1000;
}

SEC("struct_ops/bad_evict_prepare")
int BPF_PROG(bad_evict_prepare, struct gpu_mem_ctx *gctx, struct gpu_region *victim)
{
	GX_STAT(nr_calls);
	return -1;
}

SEC(".struct_ops.link")
struct gpu_mem_ops bad_ops = {
	.gpu_activate = (void *)bad_activate,
	.gpu_access = (void *)bad_access,
	.gpu_evict_prepare = (void *)bad_evict_prepare,
	.name = "bad",
};
