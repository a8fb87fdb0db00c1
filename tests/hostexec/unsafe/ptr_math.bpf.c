/* Multiplies a pointer (only adding a bounded scalar is allowed). */
#include "hx_expect.h"
GX_EXPECT("invalid pointer arithmetic on argument");

SEC("struct_ops/ptr_math")
int BPF_PROG(ptr_math, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	__u64 p = (__u64)r;

	asm volatile("%0 *= 3" : "+r"(p));
	return *(volatile __u32 *)p & 1;
}
GX_MEM_PREFETCH(ptr_math);
