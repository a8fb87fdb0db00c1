/* hx_unsafe — writes to the read-only region (the kernel verifier refuses
 * this at load; the user-space executor stops it at run time and counts an
 * error). Tests only. */
#include "gx_common.bpf.h"

SEC("struct_ops/unsafe_prefetch")
int BPF_PROG(unsafe_prefetch, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	r->flags = 1;
	return GPU_BYPASS;
}

SEC(".struct_ops.link")
struct gpu_mem_ops unsafe_ops = {
	.gpu_prefetch = (void *)unsafe_prefetch,
	.name = "unsafe",
};
