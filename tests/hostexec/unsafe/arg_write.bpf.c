/* Writes into the fault it was given (arguments are read-only). */
#include "hx_expect.h"
GX_EXPECT("write into struct gpu_fault (handler arguments are read-only)");

SEC("struct_ops/arg_write")
int BPF_PROG(arg_write, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	f->max_outer = 512;
	return GPU_DEFAULT;
}
GX_MEM_PREFETCH(arg_write);
