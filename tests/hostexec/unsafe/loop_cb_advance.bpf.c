/* A bpf_loop callback advances an offset kept in the handler's stack and
 * writes a 64-byte map value there: after 8 calls it writes past the value. */
#include "hx_expect.h"
GX_EXPECT("map value access out of bounds (offset 0..64, size 8, value_size 64)");

struct words {
	__u64 w[8];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct words);
} vals SEC(".maps");

struct off_ctx {
	__u64 off;
};

static long advance_cb(__u32 i, void *data)
{
	struct off_ctx *c = data;
	__u32 k = 0;
	struct words *v = bpf_map_lookup_elem(&vals, &k);

	if (!v)
		return 1;
	*(__u64 *)((char *)v + c->off) = i;
	c->off += 8;
	return 0;
}

SEC("struct_ops/loop_cb_advance")
int BPF_PROG(loop_cb_advance, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	struct off_ctx c = { 0 };

	bpf_loop(100, advance_cb, &c, 0);
	return GPU_DEFAULT;
}
GX_MEM_PREFETCH(loop_cb_advance);
