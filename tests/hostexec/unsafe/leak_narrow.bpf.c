/* The region pointer spilled, its low half read back as a number. */
#include "hx_expect.h"
GX_EXPECT("partial read of a spilled pointer (stack offset -8, size 4)");

__u64 last;

SEC("struct_ops/leak_narrow")
int BPF_PROG(leak_narrow, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	__u64 lo;

	asm volatile("*(u64 *)(r10 - 8) = %1; %0 = *(u32 *)(r10 - 8)" : "=r"(lo) : "r"(r) : "memory");
	last = lo;
	return GPU_DEFAULT;
}
GX_MEM_PREFETCH(leak_narrow);
