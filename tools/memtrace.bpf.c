/* memtrace — a sample of the global memory accesses kernels make.
 *
 * A probe on every global/generic load, store, atomic and reduction, once
 * per warp access (the trampoline aggregates the lanes: leader address,
 * bytes per lane, active lanes). Each access is recorded with probability
 * 1/N, N = cfg[0] (GPUEXT_CFG / gpuext-run --sample N), 1024 when unset:
 * a ring record {kernel, address, size, op, SM, block, time}.
 *
 * Why a hash and not a counter: the decision is made from registers only —
 * the leader's address, %globaltimer and the SM, mixed (murmur3's
 * 32-bit finaliser) and compared by a multiply, no division — so an access that is
 * not sampled (all but 1 in N) touches no memory beyond the knob. The old
 * per-warp-slot counter cost a load and a store on every access, and could
 * not sample small kernels at all at low rates (8448 warp slots on an H200:
 * a slot rarely sees N accesses). The expected sample count is exactly
 * accesses / N; samples of one warp are not evenly spaced.
 *
 * Why 1 in 1024: a memory-bound kernel on an H200 makes ~10^10 warp
 * accesses per second; 1 in 64 meant ~10^8 records (5 GB) per second, more
 * than a 16 MiB ring drained every 20 ms and the host's tool log can take
 * (the run did not finish). 1 in 1024 is ~30 M records/s at the very worst
 * (the ring then drops and counts the excess, never waits), a few thousand
 * per launch of the bench's kernels.
 *
 * Trade-offs: the hook runs on every access, so even unsampled accesses pay
 * the call into the policy (memtrace is the expensive tool: measure with
 * bench/tool_overhead.sh). When the ring is full records are dropped and
 * counted (the summary says how many), never waited for. */
#include "gpuext/gdev_helpers.h"
#include "tools/tools_common.h"

struct {
	__uint(type, GDEV_MAP_ARRAY);
	__uint(max_entries, GX_TOOL_CFG_MAX);
	__type(key, __u32);
	__type(value, __u64);
} cfg SEC(".maps");

struct {
	__uint(type, GDEV_MAP_RINGBUF);
	__uint(max_entries, 1 << 24);
} mt_ring SEC(".maps");

SEC("gdev/mem/access")
int memtrace(struct gdev_ctx *ctx)
{
	__u32 key = 0;
	__u64 every = 1024;
	__u64 *n = bpf_map_lookup_elem(&cfg, &key);
	if (n && *n)
		every = *n < (1ull << 32) ? *n : (1ull << 32);
	__u64 addr = ctx->addr;
	/* 32-bit mixing (murmur3's finaliser): a few IMADs on the GPU */
	__u32 x = (__u32)(addr >> 2) ^ (__u32)gdev_globaltimer() * 0x9e3779b1u ^ gdev_smid() << 20;
	x ^= x >> 16;
	x *= 0x85ebca6bu;
	x ^= x >> 13;
	x *= 0xc2b2ae35u;
	x ^= x >> 16;
	/* sampled iff x * every < 2^32: probability 1/every */
	if (((__u64)x * every) >> 32)
		return GDEV_DEFAULT;
	/* struct gx_mt_rec, built as 8-byte words: the ring helper reads them
	 * from registers (no u32 pieces reassembled through local memory) */
	union {
		struct gx_mt_rec r;
		__u64 w[6];
	} u;
	u.w[0] = ctx->kernel_id;
	u.w[1] = addr;
	u.w[2] = gdev_globaltimer();
	u.w[3] = (__u64)ctx->op << 32 | ctx->size;
	u.w[4] = (__u64)ctx->smid << 32 | ctx->space;
	u.w[5] = (__u64)ctx->ctaid_x << 32 | ctx->nr_active;
	bpf_ringbuf_output(&mt_ring, &u, sizeof(u), 0);
	return GDEV_DEFAULT;
}

GDEV_LICENSE("Dual BSD/GPL");
