/* Regions counted in a hash keyed by their address: the keys leak it. */
#include "hx_expect.h"
GX_EXPECT("bpf_map_update_elem: r2 leaks addr into map 'by_region'");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u64);
	__type(value, __u64);
} by_region SEC(".maps");

SEC("struct_ops/leak_key")
int BPF_PROG(leak_key, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	__u64 k = (__u64)r, one = 1;

	bpf_map_update_elem(&by_region, &k, &one, BPF_ANY);
	return GPU_DEFAULT;
}
GX_MEM_PREFETCH(leak_key);
