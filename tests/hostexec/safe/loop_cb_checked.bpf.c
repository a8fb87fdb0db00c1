/* A bpf_loop callback advances an offset in the handler's stack but checks
 * it against the value's size: safe for any number of iterations. */
#include "hx_expect.h"

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
	struct words *v;
	__u64 off;
};

static long fill_cb(__u32 i, void *data)
{
	struct off_ctx *c = data;
	__u64 off = c->off;

	if (off > 56)
		return 1;
	*(__u64 *)((char *)c->v + off) = i;
	c->off = off + 8;
	return 0;
}

SEC("struct_ops/loop_cb_checked")
int BPF_PROG(loop_cb_checked, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	__u32 k = 0;
	struct off_ctx c;

	c.v = bpf_map_lookup_elem(&vals, &k);
	if (!c.v)
		return GPU_DEFAULT;
	c.off = 0;
	bpf_loop(f->page & 1023, fill_cb, &c, 0);
	return GPU_DEFAULT;
}
GX_MEM_PREFETCH(loop_cb_checked);
