/* Returns a pointer as the decision. */
#include "hx_expect.h"
GX_EXPECT("returning a pointer is not allowed");

SEC("struct_ops/ptr_return")
int BPF_PROG(ptr_return, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	return (long)f;
}
GX_MEM_PREFETCH(ptr_return);
