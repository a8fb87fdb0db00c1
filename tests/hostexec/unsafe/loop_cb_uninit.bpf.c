/* Only the callback initialises the slot the handler reads after the loop:
 * after zero iterations it holds stale stack. */
#include "hx_expect.h"
GX_EXPECT("read of uninitialized stack");

__u64 out;

struct val_ctx {
	__u64 v;
};

static long fill_cb(__u32 i, void *data)
{
	struct val_ctx *c = data;

	c->v = i;
	return 0;
}

SEC("struct_ops/loop_cb_uninit")
int BPF_PROG(loop_cb_uninit, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	struct val_ctx c;

	bpf_loop(f->page & 7, fill_cb, &c, 0);
	out = c.v;
	return GPU_DEFAULT;
}
GX_MEM_PREFETCH(loop_cb_uninit);
