/* Reads above the frame (r10 + 8). */
#include "hx_expect.h"
GX_EXPECT("stack access out of bounds (offset 8, size 8)");

SEC("struct_ops/stack_oob")
int BPF_PROG(stack_oob, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	__u64 x;

	asm volatile("%0 = *(u64 *)(r10 + 8)" : "=r"(x));
	return x & 1;
}
GX_MEM_PREFETCH(stack_oob);
