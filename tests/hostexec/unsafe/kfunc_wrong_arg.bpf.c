/* Hands bpf_gpu_move_head the fault instead of the region. */
#include "hx_expect.h"
GX_EXPECT("bpf_gpu_move_head: argument r2 must be struct gpu_region * as passed to the handler");

SEC("struct_ops/kfunc_wrong_arg")
int BPF_PROG(kfunc_wrong_arg, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	bpf_gpu_move_head(gctx, (struct gpu_region *)f);
	return GPU_DEFAULT;
}
GX_MEM_PREFETCH(kfunc_wrong_arg);
