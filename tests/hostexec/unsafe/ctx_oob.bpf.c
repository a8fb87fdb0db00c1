/* Reads a fourth argument of gpu_prefetch, which takes three. */
#include "hx_expect.h"
GX_EXPECT("context access out of bounds (offset 24, size 8)");

SEC("struct_ops/ctx_oob")
int BPF_PROG(ctx_oob, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	__u64 x;

	asm volatile("%0 = *(u64 *)(%1 + 24)" : "=r"(x) : "r"(ctx));
	return x ? GPU_BYPASS : GPU_DEFAULT;
}
GX_MEM_PREFETCH(ctx_oob);
