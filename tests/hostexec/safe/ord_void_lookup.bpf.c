/* A void helper whose last act is a map lookup: clang leaves the pointer in
 * r0 at its exit; the handler never uses it. */
#include "hx_expect.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} per_flag SEC(".maps");

static __noinline void bump(__u32 k)
{
	__u64 *v = bpf_map_lookup_elem(&per_flag, &k);

	if (v)
		*v += 1;
}

SEC("struct_ops/ord_void_lookup")
int BPF_PROG(ord_void_lookup, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	bump(f->flags & 3);
	bump(3);
	return GPU_DEFAULT;
}
GX_MEM_PREFETCH(ord_void_lookup);
