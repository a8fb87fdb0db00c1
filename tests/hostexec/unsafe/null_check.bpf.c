/* Uses a map lookup's result without checking it for NULL. */
#include "hx_expect.h"
GX_EXPECT("map value pointer may be null (missing null check)");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} seen SEC(".maps");

SEC("struct_ops/null_check")
int BPF_PROG(null_check, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	__u32 key = r->space_id;
	__u64 *n = bpf_map_lookup_elem(&seen, &key);

	asm volatile("" : "+r"(n)); /* keep the compiler from assuming anything */
	*n += 1;
	return GPU_DEFAULT;
}
GX_MEM_PREFETCH(null_check);
