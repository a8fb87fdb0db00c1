/* memtrace — a sample of the global memory accesses kernels make.
 *
 * A probe on every global/generic load, store, atomic and reduction, once
 * per warp access (the trampoline aggregates the lanes: leader address,
 * bytes per lane, active lanes), recorded whole into the ring: {kernel,
 * address, size, op, SM, block, lanes, time}, one reservation per sampled
 * warp access.
 *
 * The sampling is not here: the rewriter's sample gate
 * (ptx-rewrite/site_sample.c) lets 1 warp access in N reach this handler,
 * N = gx_mem_sample below (1024), or GPUEXT_MEM_SAMPLE / gpuext-run
 * --sample N. It decides before the leader election from registers
 * only (a countdown of geometric gaps per function, one vote for the
 * warp), so the N-1 accesses not sampled cost five instructions and a
 * uniform branch: no election, no context, no call, no memory; a sampled
 * one calls this handler with every lane of the warp (GPU run 101, H100:
 * 1.05-1.39x on tool_bench's kernels). When this program made the decision
 * itself (memtrace_prog, GX_MT_GATE=0 at load: a hash of address, time
 * and SM after the election, cfg[0] read from its map) every access paid
 * the election, the context and the handler: 3.5-5.2x inlined (run 101),
 * 2.5-17x called. With N = 1 (--sample 1) it records every warp access:
 * the full trace the sampled one is checked against
 * (tests/gpu/memtrace.sh).
 *
 * Why 1 in 1024: a memory-bound kernel on an H200 makes ~10^10 warp
 * accesses per second; 1 in 64 meant ~10^8 records (5 GB) per second, more
 * than a 16 MiB ring drained every 20 ms and the host's tool log can take
 * (the run did not finish). 1 in 1024 is ~30 M records/s at the very worst
 * (the ring then drops and counts the excess, never waits), a few thousand
 * per launch of the bench's kernels. When the ring is full records are
 * dropped and counted (the summary says how many), never waited for. */
#include "gpuext/gdev_helpers.h"
#include "tools/tools_common.h"

#ifndef GX_MT_PROG
/* 1 warp access in this many reaches the program: the rewriter's sample
 * gate reads it (gx_hook_binding.sample); GPUEXT_MEM_SAMPLE / --sample N
 * replace it for a run, "memtrace.bpf.o,gx_mem_sample=N" for a policy.
 * The default since GPU run 101; before it, the leader's call at each
 * memory site split warps (runs 90-97: stores recorded as 1 + 31 lanes,
 * tool_bench's reduce hung under this gate), and memtrace_prog (below)
 * was the default. memtrace_gate.bpf.o is this same build, under the name
 * GX_MT_GATE=1 selects. */
__u32 gx_mem_sample SEC(".data") = 1024;
#else
/* memtrace_prog (GX_MT_GATE=0 at load): the program samples; cfg[0]: 1
 * access in N (GPUEXT_CFG / gpuext-run --sample N), 1024 when unset. */
struct {
	__uint(type, GDEV_MAP_ARRAY);
	__uint(max_entries, GX_TOOL_CFG_MAX);
	__type(key, __u32);
	__type(value, __u64);
} cfg SEC(".maps");
#endif

struct {
	__uint(type, GDEV_MAP_RINGBUF);
	__uint(max_entries, 1 << 24);
} mt_ring SEC(".maps");

SEC("gdev/mem/access")
int memtrace(struct gdev_ctx *ctx)
{
	__u64 addr = ctx->addr;
#ifdef GX_MT_PROG
	/* the decision from registers only (the leader's address, time, SM),
	 * mixed by murmur3's 32-bit finaliser and compared by a multiply: an
	 * access not sampled touches no memory beyond the knob */
	__u32 key = 0;
	__u64 every = 1024;
	__u64 *n = bpf_map_lookup_elem(&cfg, &key);
	if (n && *n)
		every = *n < (1ull << 32) ? *n : (1ull << 32);
	__u32 x = (__u32)(addr >> 2) ^ (__u32)gdev_globaltimer() * 0x9e3779b1u ^ gdev_smid() << 20;
	x ^= x >> 16;
	x *= 0x85ebca6bu;
	x ^= x >> 13;
	x *= 0xc2b2ae35u;
	x ^= x >> 16;
	/* sampled iff x * every < 2^32: probability 1/every */
	if (((__u64)x * every) >> 32)
		return GDEV_DEFAULT;
#endif
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
