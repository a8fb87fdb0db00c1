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
 * only (a hash of %clock, %warpid and the site, one vote for the warp), so
 * the N-1 accesses not sampled cost ~10 ALU instructions and a uniform
 * branch: no election, no context, no call, no memory. When this program
 * made the decision itself (a hash of address, time and SM after the
 * election, cfg[0] read from its map) every access paid the call and the
 * map load: 2.5-6.2x. With N = 1 (--sample 1) it records every warp
 * access: the full trace the sampled one is checked against
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

/* 1 warp access in this many reaches the program: the rewriter's sample
 * gate reads it (gx_hook_binding.sample); GPUEXT_MEM_SAMPLE / --sample N
 * replace it for a run, "memtrace.bpf.o,gx_mem_sample=N" for a policy. */
__u32 gx_mem_sample SEC(".data") = 1024;

struct {
	__uint(type, GDEV_MAP_RINGBUF);
	__uint(max_entries, 1 << 24);
} mt_ring SEC(".maps");

SEC("gdev/mem/access")
int memtrace(struct gdev_ctx *ctx)
{
	__u64 addr = ctx->addr;
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
