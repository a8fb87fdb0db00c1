/* The low half of the region pointer through a 32-bit move, stored. */
#include "hx_expect.h"
GX_EXPECT("partial copy of pointer r2");

__u64 last;

SEC("struct_ops/leak_mov32")
int BPF_PROG(leak_mov32, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	__u64 lo;

	asm volatile("r2 = %1; w3 = w2; %0 = r3" : "=r"(lo) : "r"(r) : "r2", "r3");
	last = lo;
	return GPU_DEFAULT;
}
GX_MEM_PREFETCH(leak_mov32);
