/* A subprogram leaves the address of its own stack in the handler's stack;
 * after it returned, the handler stores that address. */
#include "hx_expect.h"
GX_EXPECT("holds the address of a returned frame");

__u64 last;

static __noinline void point_at_mine(__u64 *out)
{
	__u64 mine = 1;

	asm volatile("*(u64 *)(%0 + 0) = %1" : : "r"(out), "r"(&mine) : "memory");
}

SEC("struct_ops/leak_dangling")
int BPF_PROG(leak_dangling, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	__u64 where = 0;

	point_at_mine(&where);
	last = where;
	return GPU_DEFAULT;
}
GX_MEM_PREFETCH(leak_dangling);
