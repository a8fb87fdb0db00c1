/* gx_lfu — least frequently used eviction, with aging.
 *
 * What: when the kernel proposes the head of the eviction list as victim,
 * the policy looks at how often the region was accessed since it was last
 * spared (the kernel counts accesses; the policy remembers the count at the
 * last reprieve). At least `hot_threshold` accesses: the region is moved to
 * the tail and the kernel re-picks; fewer: it is evicted. Sparing resets the
 * window, so a region that stopped being hot is evicted on its next turn
 * (aging without a periodic sweep).
 * When it wins: working sets with a hot core (embedding tables, KV caches,
 * weights reused every step) larger than memory together with cold data.
 * Trade-offs: the kernel bounds re-picks per eviction (then FIFO), so with
 * a list full of hot regions the oldest hot one goes; one map entry per
 * spared region (LRU hash, so it cannot grow without bound). */
#include "gx_common.bpf.h"

const volatile __u32 hot_threshold = 4;

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);   /* region id */
	__type(value, __u32); /* access_count when last spared */
} spared SEC(".maps");

__u64 nr_spared, nr_evicted;

SEC("struct_ops/lfu_evict_prepare")
int BPF_PROG(lfu_evict_prepare, struct gpu_mem_ctx *gctx, struct gpu_region *victim)
{
	__u64 id = victim->id;
	__u32 count = victim->access_count, *seen, base = 0;

	seen = bpf_map_lookup_elem(&spared, &id);
	if (seen)
		base = *seen;
	if (count - base >= hot_threshold) {
		bpf_map_update_elem(&spared, &id, &count, BPF_ANY);
		if (bpf_gpu_move_tail(gctx, victim) == 0) {
			GX_STAT(nr_spared);
			return GPU_BYPASS; /* re-pick */
		}
	}
	bpf_map_delete_elem(&spared, &id);
	GX_STAT(nr_evicted);
	return GPU_DEFAULT;
}

SEC(".struct_ops.link")
struct gpu_mem_ops lfu_ops = {
	.gpu_evict_prepare = (void *)lfu_evict_prepare,
	.name = "lfu",
};
