/* A bpf_loop callback reads the region struct at an offset it advances in
 * the handler's stack: past struct gpu_region after a few calls. */
#include "hx_expect.h"
GX_EXPECT("struct gpu_region access out of bounds");

__u64 out;

struct region_ctx {
	struct gpu_region *r;
	__u64 off;
};

static long scan_cb(__u32 i, void *data)
{
	struct region_ctx *c = data;

	out += *(__u64 *)((char *)c->r + c->off);
	c->off += 8;
	return 0;
}

SEC("struct_ops/loop_cb_region")
int BPF_PROG(loop_cb_region, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	struct region_ctx c = { .r = r, .off = 0 };

	bpf_loop(64, scan_cb, &c, 0);
	return GPU_DEFAULT;
}
GX_MEM_PREFETCH(loop_cb_region);
