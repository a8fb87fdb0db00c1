/* Passes a pointer where the kfunc takes a number (an address leak). */
#include "hx_expect.h"
GX_EXPECT("bpf_gpu_migrate_range: argument r2 must be a scalar");

SEC("struct_ops/kfunc_ptr_scalar")
int BPF_PROG(kfunc_ptr_scalar, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	bpf_gpu_migrate_range(gctx, (__u64)r, 4096);
	return GPU_DEFAULT;
}
GX_MEM_PREFETCH(kfunc_ptr_scalar);
