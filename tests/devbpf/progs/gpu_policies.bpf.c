/* gpu_policies.bpf.c — device policies for the GPU differential test
 * (tests/gpu/devbpf.sh): every map type and the helpers, on inputs whose
 * final map state does not depend on scheduling (commutative updates, keys
 * from block indices, sharded maps compared through their merged view), so
 * the GPU run can be compared with the interpreter run of the same events. */
#include "gpuext/gdev_helpers.h"

struct {
	__uint(type, GDEV_MAP_ARRAY);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} blk_lanes SEC(".maps");

struct {
	__uint(type, GDEV_MAP_HASH);
	__uint(max_entries, 512);
	__type(key, __u64);
	__type(value, __u64);
} by_block SEC(".maps");

struct {
	__uint(type, GDEV_MAP_PERWARP_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} warp_calls SEC(".maps");

struct {
	__uint(type, GDEV_MAP_PERSM_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} sm_calls SEC(".maps");

struct {
	__uint(type, GDEV_MAP_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u64);
} checks SEC(".maps");

struct {
	__uint(type, GDEV_MAP_RINGBUF);
	__uint(max_entries, 1 << 16);
} events SEC(".maps");

struct event {
	__u32 block, warp;
};

static __always_inline void inc(void *map, __u32 k, __u64 by)
{
	__u64 *v = bpf_map_lookup_elem(map, &k);
	if (v)
		__sync_fetch_and_add(v, by);
}

SEC("gdev/mem/access")
int gpu_access(struct gdev_ctx *ctx)
{
	inc(&blk_lanes, ctx->ctaid_x & 63, ctx->nr_active);
	/* 16 x 8 keys: far below capacity, so every insert succeeds in any order */
	__u64 key = ((__u64)(ctx->ctaid_x & 15) << 32) | ((ctx->addr >> 2) & 7), one = 1;
	__u64 *v = bpf_map_lookup_elem(&by_block, &key);
	if (v)
		__sync_fetch_and_add(v, 1);
	else if (bpf_map_update_elem(&by_block, &key, &one, GDEV_NOEXIST)) {
		v = bpf_map_lookup_elem(&by_block, &key); /* another warp inserted it */
		if (v)
			__sync_fetch_and_add(v, 1);
	}
	/* per-warp shards: plain read-modify-write, no atomics */
	__u32 k0 = 0;
	__u64 *w = bpf_map_lookup_elem(&warp_calls, &k0);
	if (w)
		*w += 1;
	inc(&sm_calls, 0, 1);
	return 0;
}

SEC("gdev/probe/*")
int gpu_entry(struct gdev_ctx *ctx)
{
	inc(&checks, 0, 1);
	inc(&checks, 1, gdev_block_idx(0) == ctx->ctaid_x);
	inc(&checks, 2, gdev_block_dim(0) == ctx->ntid_x);
	inc(&checks, 3, gdev_grid_dim(0) == ctx->nctaid_x);
	inc(&checks, 4, gdev_smid() == ctx->smid);
	inc(&checks, 5, gdev_warpid() == ctx->warpid);
	inc(&checks, 6, bpf_ktime_get_ns() != 0);
	if (ctx->ctaid_x < 4) {
		struct event e = { ctx->ctaid_x, ctx->warpid };
		bpf_ringbuf_output(&events, &e, sizeof(e), 0);
	}
	if (ctx->ctaid_x == 0 && ctx->warpid == 0)
		inc(&checks, 7, gdev_printk("entry block %u warp %u", ctx->ctaid_x, ctx->warpid) > 0);
	return 0;
}

GDEV_LICENSE("GPL");
