/* jit_count.bpf.c — a small device policy for the JIT's CLI and GPU tests:
 * counts memory-access hook calls (and the lanes behind them) per SM, and
 * kernel entries per kernel in a hash map. Known answers: on a kernel of B
 * blocks x W warps, on_entry runs B*W times and counts[smid] sums nr_active. */
#include "gpuext/gdev_helpers.h"

struct {
	__uint(type, GDEV_MAP_ARRAY);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, __u64);
} counts SEC(".maps");

struct {
	__uint(type, GDEV_MAP_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, __u64);
} per_kernel SEC(".maps");

SEC("gdev/mem/access")
int count_access(struct gdev_ctx *ctx)
{
	__u32 k = ctx->smid & 255;
	__u64 *v = bpf_map_lookup_elem(&counts, &k);
	if (v)
		__sync_fetch_and_add(v, ctx->nr_active);
	return 0;
}

SEC("gdev/probe/*")
int on_entry(struct gdev_ctx *ctx)
{
	__u64 key = ctx->kernel_id, one = 1;
	__u64 *v = bpf_map_lookup_elem(&per_kernel, &key);
	if (v)
		__sync_fetch_and_add(v, 1);
	else
		bpf_map_update_elem(&per_kernel, &key, &one, GDEV_ANY);
	return 0;
}

GDEV_LICENSE("GPL");
