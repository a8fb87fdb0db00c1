/* memtrace — a sample of the global memory accesses kernels make.
 *
 * A probe on every global/generic load, store, atomic and reduction, once
 * per warp access (the trampoline aggregates the lanes: leader address,
 * bytes per lane, active lanes). Each warp slot counts its accesses in its
 * own shard (per-warp-slot array: no atomics) and every N-th access emits a
 * ring record {kernel, address, size, op, SM, block, time}. N is cfg[0]
 * (GPUEXT_CFG / gpuext-run --sample N), 64 when unset.
 *
 * Trade-offs: the hook runs on every access, so even unsampled accesses pay a
 * call, a map lookup and an increment (memtrace is the expensive tool:
 * measure with bench/tool_overhead.sh). Sampling is per warp slot, so it is
 * even across SMs but not across kernels with very different access counts.
 * When the ring is full records are dropped and counted, never waited for. */
#include "devbpf/gdev_helpers.h"
#include "devbpf/tools/gx_tools.h"

struct {
	__uint(type, GDEV_MAP_ARRAY);
	__uint(max_entries, GX_TOOL_CFG_MAX);
	__type(key, __u32);
	__type(value, __u64);
} cfg SEC(".maps");

struct {
	__uint(type, GDEV_MAP_PERWARP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} mt_count SEC(".maps");

struct {
	__uint(type, GDEV_MAP_RINGBUF);
	__uint(max_entries, 1 << 24);
} mt_ring SEC(".maps");

SEC("gdev/mem/access")
int memtrace(struct gdev_ctx *ctx)
{
	__u32 key = 0;
	__u64 every = 64;
	__u64 *n = bpf_map_lookup_elem(&cfg, &key);
	if (n && *n)
		every = *n;
	__u64 *c = bpf_map_lookup_elem(&mt_count, &key);
	if (!c)
		return GDEV_DEFAULT;
	__u64 seen = *c + 1;
	*c = seen;
	/* a power of two (the default 64) needs no 64-bit division, which
	 * costs the GPU dozens of instructions on every access */
	if (every & (every - 1) ? seen % every : seen & (every - 1))
		return GDEV_DEFAULT;
	struct gx_mt_rec r = {
		.kernel_id = ctx->kernel_id,
		.addr = ctx->addr,
		.ts = gdev_globaltimer(),
		.size = ctx->size,
		.op = ctx->op,
		.space = ctx->space,
		.smid = ctx->smid,
		.nr_active = ctx->nr_active,
		.ctaid_x = ctx->ctaid_x,
	};
	bpf_ringbuf_output(&mt_ring, &r, sizeof(r), 0);
	return GDEV_DEFAULT;
}

GDEV_LICENSE("Dual BSD/GPL");
