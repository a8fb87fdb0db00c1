/* hx_loop — a loop the compiler cannot bound (tests only): the executor's
 * step budget stops each call and counts an error. */
#include "gx_common.bpf.h"

__u64 spins;

SEC("struct_ops/loop_prefetch")
int BPF_PROG(loop_prefetch, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	while (f->page != 0xffffffffu)
		__sync_fetch_and_add(&spins, 1);
	return GPU_BYPASS;
}

SEC(".struct_ops.link")
struct gpu_mem_ops loop_ops = {
	.gpu_prefetch = (void *)loop_prefetch,
	.name = "loop",
};
