/* Void helpers calling void helpers, one of them with a stack buffer of
 * the caller's. */
#include "hx_expect.h"

__u64 sum;

static __noinline void add(__u64 *c, __u64 by)
{
	*c += by;
}

static __noinline void add_twice(__u64 *c, __u64 by)
{
	add(c, by);
	add(c, by);
}

SEC("struct_ops/ord_void_chain")
int BPF_PROG(ord_void_chain, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	__u64 local = 0;

	add_twice(&local, f->page);
	add(&sum, local);
	return GPU_DEFAULT;
}
GX_MEM_PREFETCH(ord_void_chain);
