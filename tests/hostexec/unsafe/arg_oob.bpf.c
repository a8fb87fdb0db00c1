/* Reads past the end of struct gpu_fault. */
#include "hx_expect.h"
GX_EXPECT("struct gpu_fault access out of bounds");

SEC("struct_ops/arg_oob")
int BPF_PROG(arg_oob, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	return ((volatile __u64 *)f)[6] ? GPU_BYPASS : GPU_DEFAULT;
}
GX_MEM_PREFETCH(arg_oob);
