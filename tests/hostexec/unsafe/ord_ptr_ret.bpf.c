/* A subprogram returns the fault pointer; the handler stores it. Pointers
 * a subprogram leaves in r0 are unusable in its caller. */
#include "hx_expect.h"
GX_EXPECT("r0 holds a pointer returned by a subprogram");

__u64 last;

static __noinline __u64 pass_through(struct gpu_fault *f)
{
	__u64 r;

	asm volatile("%0 = %1" : "=r"(r) : "r"(f));
	return r;
}

SEC("struct_ops/ord_ptr_ret")
int BPF_PROG(ord_ptr_ret, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	last = pass_through(f);
	return GPU_DEFAULT;
}
GX_MEM_PREFETCH(ord_ptr_ret);
