/* Pointers spilled and filled whole, numbers derived from what they point
 * to (not from their addresses) stored: nothing leaks. */
#include "hx_expect.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u64);
	__type(value, __u64);
} by_id SEC(".maps");

SEC("struct_ops/leak_none")
int BPF_PROG(leak_none, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	__u64 k = r->id, v = r->va_start + f->page;
	volatile struct gpu_region *keep = r;

	bpf_map_update_elem(&by_id, &k, &v, BPF_ANY);
	if (keep->resident_pages > 4)
		bpf_gpu_move_tail(gctx, r);
	return GPU_DEFAULT;
}
GX_MEM_PREFETCH(leak_none);
