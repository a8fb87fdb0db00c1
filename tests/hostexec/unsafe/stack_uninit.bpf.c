/* Reads a stack slot nothing wrote. */
#include "hx_expect.h"
GX_EXPECT("read of uninitialized stack (offset -64)");

SEC("struct_ops/stack_uninit")
int BPF_PROG(stack_uninit, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	__u64 x;

	asm volatile("%0 = *(u64 *)(r10 - 64)" : "=r"(x));
	return x & 1;
}
GX_MEM_PREFETCH(stack_uninit);
