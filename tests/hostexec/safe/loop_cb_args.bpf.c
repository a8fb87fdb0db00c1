/* A bpf_loop callback reads the region and fault through a context on the
 * handler's stack and sums into it; the handler uses the sum after the loop
 * (initialised before it: zero iterations leave 0). */
#include "hx_expect.h"

__u64 out;

struct sum_ctx {
	struct gpu_region *r;
	struct gpu_fault *f;
	__u64 sum;
};

static long sum_cb(__u32 i, void *data)
{
	struct sum_ctx *c = data;

	c->sum += c->r->resident_pages + c->f->page + i;
	return c->sum > 100000;
}

SEC("struct_ops/loop_cb_args")
int BPF_PROG(loop_cb_args, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	struct sum_ctx c = { .r = r, .f = f, .sum = 0 };

	bpf_loop(16, sum_cb, &c, 0);
	out = c.sum;
	return GPU_DEFAULT;
}
GX_MEM_PREFETCH(loop_cb_args);
