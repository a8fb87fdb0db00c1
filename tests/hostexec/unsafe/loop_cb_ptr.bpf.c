/* A bpf_loop callback moves a map value pointer kept in the handler's stack
 * on by one word per call, as often as the fault's page number says. */
#include "hx_expect.h"
GX_EXPECT("map value access out of bounds");

struct words {
	__u64 w[8];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct words);
} vals SEC(".maps");

struct ptr_ctx {
	__u64 *p;
};

static long ptr_cb(__u32 i, void *data)
{
	struct ptr_ctx *c = data;

	*c->p = i;
	c->p++;
	return 0;
}

SEC("struct_ops/loop_cb_ptr")
int BPF_PROG(loop_cb_ptr, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	__u32 k = 0;
	struct words *v = bpf_map_lookup_elem(&vals, &k);
	struct ptr_ctx c;

	if (!v)
		return GPU_DEFAULT;
	c.p = &v->w[0];
	bpf_loop(f->page & 511, ptr_cb, &c, 0);
	return GPU_DEFAULT;
}
GX_MEM_PREFETCH(loop_cb_ptr);
