/* gx_tree — tree-style adaptive prefetch inside a region (after UVM's
 * bitmap-tree prefetcher).
 *
 * What: the region's 512 pages are the leaves of a binary tree. On a fault
 * at page p, walk the aligned subregions containing p (2, 4, ... 512 pages)
 * and pick the largest whose resident share (counting p) exceeds
 * `threshold` percent; prefetch all of it. Adaptive (`adaptive` = 1): each
 * fault that continues an ascending run in the same region lowers the
 * threshold by 10 points per step (down to 26), a jump resets it, so dense
 * streams prefetch big subregions early while scattered faults stay small.
 * When it wins: dense but not strictly sequential access (tiles, sorted
 * gathers) — the occupancy test fills the holes of a subregion once most of
 * it is in.
 * Trade-offs: looks only inside the faulting region; with a low threshold it
 * over-fetches on sparse data. */
#include "gx_common.bpf.h"

const volatile __u32 threshold = 51; /* percent */
const volatile __u32 adaptive = 1;

struct run_state {
	__u64 region;
	__u32 last_page;
	__u32 run;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* space id */
	__type(value, struct run_state);
} runs SEC(".maps");

__u64 nr_faults, nr_grown;

static __u32 pop_range(__u64 *w, __u32 start, __u32 size)
{
	__u32 n = 0, i;

	if (size < 64) {
		__u64 word = w[(start / 64) & 7];
		__u64 mask = ((1ULL << size) - 1) << (start % 64);

		return __builtin_popcountll(word & mask);
	}
	for (i = 0; i < 8; i++)
		if (i >= start / 64 && i < (start + size) / 64)
			n += __builtin_popcountll(w[i]);
	return n;
}

SEC("struct_ops/tree_prefetch")
int BPF_PROG(tree_prefetch, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	__u32 page = f->page & (GPU_REGION_PAGES - 1), thr = threshold, level, key = r->space_id;
	__u32 best_first = page, best_outer = page + 1;
	struct run_state *rs, init = {};
	__u64 w[8];

	GX_STAT(nr_faults);
	w[0] = r->resident_mask[0];
	w[1] = r->resident_mask[1];
	w[2] = r->resident_mask[2];
	w[3] = r->resident_mask[3];
	w[4] = r->resident_mask[4];
	w[5] = r->resident_mask[5];
	w[6] = r->resident_mask[6];
	w[7] = r->resident_mask[7];
	w[(page / 64) & 7] |= 1ULL << (page % 64);

	if (adaptive) {
		rs = bpf_map_lookup_elem(&runs, &key);
		if (!rs) {
			init.region = r->va_start;
			init.last_page = page;
			bpf_map_update_elem(&runs, &key, &init, BPF_ANY);
		} else {
			if (rs->region == r->va_start && page == rs->last_page + 1)
				rs->run = rs->run < 8 ? rs->run + 1 : 8;
			else
				rs->run = 0;
			rs->region = r->va_start;
			rs->last_page = page;
			thr = thr > rs->run * 10 + 26 ? thr - rs->run * 10 : 26;
		}
	}
	for (level = 1; level <= 9; level++) {
		__u32 size = 1U << level, start = page & ~(size - 1);

		if (pop_range(w, start, size) * 100 > thr * size) {
			best_first = start;
			best_outer = start + size;
		}
	}
	if (best_first < f->max_first || best_outer > f->max_outer)
		return GPU_DEFAULT;
	if (best_outer - best_first > 1)
		GX_STAT(nr_grown);
	bpf_gpu_set_prefetch_region(gctx, best_first, best_outer);
	return GPU_BYPASS;
}

SEC(".struct_ops.link")
struct gpu_mem_ops tree_ops = {
	.gpu_prefetch = (void *)tree_prefetch,
	.name = "tree",
};
