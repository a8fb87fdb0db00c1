/* gx_seq — sequential prefetch.
 *
 * What: on a fault at page p of a region, bring in pages p..p+ahead of that
 * region (clamped to the region), and when the fault is in the upper half of
 * the region also ask for the next `next_regions` regions.
 * When it wins: forward streaming over managed memory (initialisation
 * loops, element-wise kernels, data loaders): one fault brings what the next
 * hundreds would have.
 * Trade-offs: wasted bandwidth and memory on random access; backward scans
 * gain nothing (the stride policy handles them). */
#include "gx_common.bpf.h"

const volatile __u32 ahead_pages = GPU_REGION_PAGES;
const volatile __u32 next_regions = 1;

__u64 nr_prefetch, nr_next;

SEC("struct_ops/seq_prefetch")
int BPF_PROG(seq_prefetch, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	__u32 first = f->page, outer = f->page + ahead_pages;

	if (outer > f->max_outer || outer < first)
		outer = f->max_outer;
	if (first < f->max_first)
		first = f->max_first;
	if (first < outer && bpf_gpu_set_prefetch_region(gctx, first, outer) == 0)
		GX_STAT(nr_prefetch);
	if (next_regions && f->page >= GPU_REGION_PAGES / 2 && next_regions <= 32) {
		bpf_gpu_migrate_range(gctx, r->va_start + GPU_REGION_SIZE,
				      (__u64)next_regions * GPU_REGION_SIZE);
		GX_STAT(nr_next);
	}
	return GPU_BYPASS;
}

SEC(".struct_ops.link")
struct gpu_mem_ops seq_ops = {
	.gpu_prefetch = (void *)seq_prefetch,
	.name = "seq",
};
