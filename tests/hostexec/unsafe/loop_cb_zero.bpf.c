/* The callback would put the map handle into the slot; with zero iterations
 * the forged value there reaches bpf_map_update_elem. */
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
};

static long set_map_cb(__u32 i, void *data)
{
	struct map_ctx *c = data;

	c->map = &counts;
	return 1;
}

SEC("struct_ops/loop_cb_zero")
int BPF_PROG(loop_cb_zero, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	struct map_ctx c = { .map = (void *)f->va };
	__u32 k = 0;
	__u64 one = 1;

	bpf_loop(f->page & 7, set_map_cb, &c, 0);
	bpf_map_update_elem(c.map, &k, &one, BPF_ANY);
	return GPU_DEFAULT;
}
GX_MEM_PREFETCH(loop_cb_zero);
