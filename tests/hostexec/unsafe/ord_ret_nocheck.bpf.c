/* A subprogram returns bpf_map_lookup_elem's result; the handler writes
 * through it without the null check. */
#include "hx_expect.h"
GX_EXPECT("map value pointer may be null (missing null check)");

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

SEC("struct_ops/ord_ret_nocheck")
int BPF_PROG(ord_ret_nocheck, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	*count_of(f->flags & 3) += 1;
	return GPU_DEFAULT;
}
GX_MEM_PREFETCH(ord_ret_nocheck);
