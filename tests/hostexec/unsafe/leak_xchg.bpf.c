/* xchg on a stack slot holding the region pointer: the old value comes
 * back as a number. */
#include "hx_expect.h"
GX_EXPECT("atomic operation on a spilled pointer (stack offset -8)");

__u64 last;

SEC("struct_ops/leak_xchg")
int BPF_PROG(leak_xchg, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	__u64 old;

	asm volatile("*(u64 *)(r10 - 8) = %1;"
		     "%0 = 0;"
		     "%0 = xchg_64(r10 - 8, %0)"
		     : "=&r"(old)
		     : "r"(r)
		     : "memory");
	last = old;
	return GPU_DEFAULT;
}
GX_MEM_PREFETCH(leak_xchg);
