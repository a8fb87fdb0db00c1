/* A bpf_loop callback uses a map handle from the handler's stack, then
 * swaps it with a number: the second call passes a forged handle. */
#include "hx_expect.h"
GX_EXPECT("holds different types after different numbers of bpf_loop iterations");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u64);
} counts SEC(".maps");

struct map_ctx {
	void *map;
	__u64 other;
};

static long swap_cb(__u32 i, void *data)
{
	struct map_ctx *c = data;
	void *m = c->map;
	__u32 k = i;
	__u64 one = 1;

	bpf_map_update_elem(m, &k, &one, BPF_ANY);
	c->map = (void *)c->other;
	c->other = (__u64)m;
	return 0;
}

SEC("struct_ops/loop_cb_swap")
int BPF_PROG(loop_cb_swap, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	struct map_ctx c;

	c.map = &counts;
	c.other = f->va; /* a forged handle */
	bpf_loop(4, swap_cb, &c, 0);
	return GPU_DEFAULT;
}
GX_MEM_PREFETCH(loop_cb_swap);
