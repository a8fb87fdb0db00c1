/* Hands a kfunc a pointer into the middle of the region. */
#include "hx_expect.h"
GX_EXPECT("bpf_gpu_move_tail: argument r2 must be struct gpu_region * as passed to the handler");

SEC("struct_ops/kfunc_ptr_off")
int BPF_PROG(kfunc_ptr_off, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	bpf_gpu_move_tail(gctx, (struct gpu_region *)&r->resident_mask[1]);
	return GPU_DEFAULT;
}
GX_MEM_PREFETCH(kfunc_ptr_off);
