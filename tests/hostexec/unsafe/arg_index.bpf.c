/* Indexes the region's page mask with an unchecked page number. */
#include "hx_expect.h"
GX_EXPECT("struct gpu_region access out of bounds");

SEC("struct_ops/arg_index")
int BPF_PROG(arg_index, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	return r->resident_mask[f->page / 64] & 1 ? GPU_BYPASS : GPU_DEFAULT;
}
GX_MEM_PREFETCH(arg_index);
