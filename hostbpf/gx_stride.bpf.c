/* gx_stride — stride prefetch across regions.
 *
 * What: per address space, remember the last fault address and the last
 * difference between faults. When the same non-zero stride is seen
 * `confidence` times in a row, request the next `depth` predicted
 * addresses (fault + i*stride, `chunk` bytes each) with
 * bpf_gpu_migrate_range, ahead of the faults.
 * When it wins: strided sweeps where each access lands in another region
 * (column walks over row-major matrices, batched tensors, halo exchange):
 * the in-region prefetchers cannot see those.
 * Trade-offs: one fault stream per address space — interleaved streams from
 * many warps break the pattern (the confidence counter then stays low and
 * nothing is prefetched, which is the safe failure); a wrong prediction
 * costs `depth * chunk` bytes of migration. */
#include "gx_common.bpf.h"

const volatile __u32 confidence = 1;
const volatile __u32 depth = 2;
const volatile __u64 chunk = 64 * 1024;

struct stride_state {
	__u64 last_va;
	__s64 stride;
	__u32 hits;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* space id */
	__type(value, struct stride_state);
} streams SEC(".maps");

__u64 nr_predicted, nr_requests;

SEC("struct_ops/stride_prefetch")
int BPF_PROG(stride_prefetch, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	__u32 key = r->space_id, i;
	struct stride_state *st, init = {};
	__s64 d;

	st = bpf_map_lookup_elem(&streams, &key);
	if (!st) {
		init.last_va = f->va;
		bpf_map_update_elem(&streams, &key, &init, BPF_ANY);
		return GPU_DEFAULT;
	}
	d = (__s64)(f->va - st->last_va);
	if (d != 0 && d == st->stride) {
		if (st->hits < 1000)
			st->hits++;
	} else {
		st->stride = d;
		st->hits = 0;
	}
	st->last_va = f->va;
	if (st->hits < confidence || d == 0)
		return GPU_DEFAULT;
	GX_STAT(nr_predicted);
	for (i = 1; i <= GPU_MIGRATE_MAX && i <= depth; i++) {
		__u64 target = f->va + (__u64)(d * (__s64)i);

		if ((d < 0 && target > f->va) || (d > 0 && target < f->va))
			break; /* wrapped */
		target &= ~(GPU_PAGE_SIZE - 1);
		if (bpf_gpu_migrate_range(gctx, target, chunk) == 0)
			GX_STAT(nr_requests);
	}
	return GPU_DEFAULT; /* the faulting page itself: kernel default */
}

SEC(".struct_ops.link")
struct gpu_mem_ops stride_ops = {
	.gpu_prefetch = (void *)stride_prefetch,
	.name = "stride",
};
