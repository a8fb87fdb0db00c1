/* The region pointer spilled, its low half overwritten, the slot reloaded:
 * the high half of the address comes back as a number. */
#include "hx_expect.h"
GX_EXPECT("read of a partially overwritten spilled pointer (stack offset -8)");

__u64 last;

SEC("struct_ops/leak_partial")
int BPF_PROG(leak_partial, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	__u64 hi;

	asm volatile("*(u64 *)(r10 - 8) = %1;"
		     "*(u32 *)(r10 - 8) = 0;"
		     "%0 = *(u64 *)(r10 - 8)"
		     : "=r"(hi)
		     : "r"(r)
		     : "memory");
	last = hi;
	return GPU_DEFAULT;
}
GX_MEM_PREFETCH(leak_partial);
