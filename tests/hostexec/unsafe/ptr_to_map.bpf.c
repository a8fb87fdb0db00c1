/* Stores the region pointer into a map (a kernel address leak). */
#include "hx_expect.h"
GX_EXPECT("storing a pointer into a map is not allowed");

__u64 last_region;

SEC("struct_ops/ptr_to_map")
int BPF_PROG(ptr_to_map, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	last_region = (__u64)r;
	return GPU_DEFAULT;
}
GX_MEM_PREFETCH(ptr_to_map);
