/* bm[bit >> 6] after bit < 513: the last bit number is one word past a
 * 64-byte value (bit < 512 is accepted: tests/hostexec/hx_ordinary.bpf.c). */
#include "hx_expect.h"
GX_EXPECT("map value access out of bounds (offset 0..64, size 8, value_size 64)");

struct bits {
	__u64 bm[8];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bits);
} seen SEC(".maps");

SEC("struct_ops/ord_bitmap_oob")
int BPF_PROG(ord_bitmap_oob, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	__u32 k = 0, bit = f->page;
	struct bits *b = bpf_map_lookup_elem(&seen, &k);

	if (!b || bit >= 513)
		return GPU_DEFAULT;
	b->bm[bit >> 6] |= 1ull << (bit & 63);
	return GPU_DEFAULT;
}
GX_MEM_PREFETCH(ord_bitmap_oob);
