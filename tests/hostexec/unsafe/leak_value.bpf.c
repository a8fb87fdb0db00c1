/* The region pointer as the value of bpf_map_update_elem: `gpuext map
 * dump` would show an address of the shim's process. */
#include "hx_expect.h"
GX_EXPECT("bpf_map_update_elem: r3 leaks addr into map 'last'");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} last SEC(".maps");

SEC("struct_ops/leak_value")
int BPF_PROG(leak_value, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	__u32 k = 0;
	__u64 v = (__u64)r;

	bpf_map_update_elem(&last, &k, &v, BPF_ANY);
	return GPU_DEFAULT;
}
GX_MEM_PREFETCH(leak_value);
