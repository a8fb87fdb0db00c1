/* A static __noinline void helper: it sets no r0, the handler never reads
 * one after calling it. */
#include "hx_expect.h"

__u64 nr_faults, nr_pages;

static __noinline void add(__u64 *c, __u64 by)
{
	*c += by;
}

SEC("struct_ops/ord_void_helper")
int BPF_PROG(ord_void_helper, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	add(&nr_faults, 1);
	add(&nr_pages, r->resident_pages);
	return GPU_DEFAULT;
}
GX_MEM_PREFETCH(ord_void_helper);
