/* A subprogram returns bpf_map_lookup_elem's result; the handler stores
 * the checked pointer into a global (a map): an address leak. */
#include "hx_expect.h"
GX_EXPECT("storing a pointer into a map is not allowed");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} per_flag SEC(".maps");

__u64 where;

static __noinline __u64 *count_of(__u32 k)
{
	return bpf_map_lookup_elem(&per_flag, &k);
}

SEC("struct_ops/ord_ret_leak")
int BPF_PROG(ord_ret_leak, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	__u64 *c = count_of(f->flags & 3);

	if (c)
		where = (__u64)c;
	return GPU_DEFAULT;
}
GX_MEM_PREFETCH(ord_ret_leak);
