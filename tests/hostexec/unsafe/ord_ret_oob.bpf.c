/* A subprogram returns bpf_map_lookup_elem's result; the handler checks it
 * and writes one word past the 8-byte value. */
#include "hx_expect.h"
GX_EXPECT("map value access out of bounds (offset 8..8, size 8, value_size 8)");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} per_flag SEC(".maps");

static __noinline __u64 *count_of(__u32 k)
{
	return bpf_map_lookup_elem(&per_flag, &k);
}

SEC("struct_ops/ord_ret_oob")
int BPF_PROG(ord_ret_oob, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	__u64 *c = count_of(f->flags & 3);

	if (c)
		*(volatile __u64 *)(c + 1) = 1;
	return GPU_DEFAULT;
}
GX_MEM_PREFETCH(ord_ret_oob);
