/* bm[bit >> 6] |= 1 << (bit & 63) after bit < 512, on a 64-byte value:
 * clang's (bit >> 3) & 0x1ffffff8 is a multiple of 8 up to 56. */
#include "hx_expect.h"

struct bits {
	__u64 bm[8];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bits);
} pages SEC(".maps");

SEC("struct_ops/ord_bitmap")
int BPF_PROG(ord_bitmap, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	__u32 k = 0, bit = f->page;
	struct bits *b = bpf_map_lookup_elem(&pages, &k);

	if (!b || bit >= 512)
		return GPU_DEFAULT;
	b->bm[bit >> 6] |= 1ull << (bit & 63);
	return GPU_DEFAULT;
}
GX_MEM_PREFETCH(ord_bitmap);
