/* A 64-bit bit number (the region's number) tested in a 512-bit bitmap. */
#include "hx_expect.h"

struct bits {
	__u64 bm[8];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bits);
} regions SEC(".maps");

__u64 nr_known;

SEC("struct_ops/ord_bitmap64")
int BPF_PROG(ord_bitmap64, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	__u64 bit = r->id;
	__u32 k = 0;
	struct bits *b = bpf_map_lookup_elem(&regions, &k);

	if (!b || bit >= 512)
		return GPU_DEFAULT;
	if (b->bm[bit >> 6] & (1ull << (bit & 63)))
		nr_known++;
	else
		b->bm[bit >> 6] |= 1ull << (bit & 63);
	return GPU_DEFAULT;
}
GX_MEM_PREFETCH(ord_bitmap64);
