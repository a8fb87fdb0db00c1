/* threadhist — how many blocks, warps and threads each SM executed: the
 * load-imbalance view of a run.
 *
 * A probe at every kernel entry, once per warp (leader lane). Counters live
 * in a per-warp-slot sharded array (shard = %smid x 64 + hardware warp slot):
 * a warp slot runs one warp at a time, so a leader increments its own shard
 * with plain loads and stores — no atomics, no contention, exact counts. The
 * host sums a SM's 64 slots into its row. Warp 0 of a block counts the block;
 * every warp counts itself and its active lanes as threads.
 *
 * Trade-offs: counts are per process run (all kernels together); per-kernel
 * splits would need a hash map keyed by kernel id (a CAS per new key). Counts
 * reach the host at flushes (periodic, and at context teardown/exit). */
#include "devbpf/gdev_helpers.h"
#include "devbpf/tools/gx_tools.h"

struct {
	__uint(type, GDEV_MAP_PERWARP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gx_th_val);
} th_counts SEC(".maps");

SEC("gdev/probe/*")
int threadhist(struct gdev_ctx *ctx)
{
	__u32 key = 0;
	struct gx_th_val *v = bpf_map_lookup_elem(&th_counts, &key);
	if (!v)
		return GDEV_DEFAULT;
	if (ctx->warpid == 0)
		v->blocks += 1;
	v->warps += 1;
	v->threads += ctx->nr_active;
	return GDEV_DEFAULT;
}

GDEV_LICENSE("Dual BSD/GPL");
