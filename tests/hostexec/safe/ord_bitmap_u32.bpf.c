/* 32-bit words: w[bit >> 5] after bit < 512, a multiple of 4 up to 60. */
#include "hx_expect.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32[16]);
} words SEC(".maps");

SEC("struct_ops/ord_bitmap_u32")
int BPF_PROG(ord_bitmap_u32, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	__u32 k = 0, bit = f->page;
	__u32 *w = bpf_map_lookup_elem(&words, &k);

	if (!w || bit >= 512)
		return GPU_DEFAULT;
	w[bit >> 5] |= 1u << (bit & 31);
	return GPU_DEFAULT;
}
GX_MEM_PREFETCH(ord_bitmap_u32);
