/* Indexes a map value's array with a bound one too large. */
#include "hx_expect.h"
GX_EXPECT("map value access out of bounds");

struct hist {
	__u64 bucket[8];
};
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hist);
} h SEC(".maps");

SEC("struct_ops/map_oob")
int BPF_PROG(map_oob, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	__u32 key = 0, i = f->page & 15;
	struct hist *v = bpf_map_lookup_elem(&h, &key);

	if (v)
		v->bucket[i]++;
	return GPU_DEFAULT;
}
GX_MEM_PREFETCH(map_oob);
