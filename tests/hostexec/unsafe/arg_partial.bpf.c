/* Reads half of a pointer argument: its address would leak as a number. */
#include "hx_expect.h"
GX_EXPECT("partial read of pointer argument 1 (struct gpu_region *)");

SEC("struct_ops/arg_partial")
int BPF_PROG(arg_partial, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	__u32 lo;

	asm volatile("%0 = *(u32 *)(%1 + 8)" : "=r"(lo) : "r"(ctx));
	return lo & 1;
}
GX_MEM_PREFETCH(arg_partial);
