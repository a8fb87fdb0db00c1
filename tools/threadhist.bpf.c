/* threadhist — how many blocks, warps and threads each SM executed: the
 * load-imbalance view of a run.
 *
 * A block probe (GDEV_HOOK_BLOCK): at the kernel's entry, or at its exits
 * in kernels whose warps meet at barriers, where an entry probe in warp 0
 * holds the whole block at the first barrier (a row softmax of 4 warps:
 * +10 % at entry, +7.6 % at exit on the H200; a stencil without barriers
 * the other way round, +1.6 % and +4.0 %). The trampoline calls it once per
 * warp there, on a leader lane. Only thread 0's call counts — warp 0, and
 * at an exit lane 0 among the lanes leaving (lane 0 may leave alone, before
 * or after the others; it leaves once) — for its whole block: 1 block,
 * ceil(threads / 32) warps, threads = blockDim.x * y * z — the block's warps
 * all run on warp 0's SM, so the per-SM rows are exact. The other warps
 * leave at once, having read nothing from memory (gdev_warpid() and
 * gdev_block_dim() read special registers, not the context), so a kernel of
 * many short blocks pays one counter update per block instead of one per
 * warp: with every warp updating, a stencil of 262 144 blocks of 8 warps ran
 * 4.9x slower on the H200, each block waiting on its warps' memory round
 * trips. The other warps' test is one uniform branch before the rewriter's
 * leader election (docs/devbpf-perf.md).
 *
 * Counters live in a per-warp-slot sharded array (shard = %smid x 64 +
 * hardware warp slot): a warp slot runs one warp at a time, so warp 0
 * updates its own shard — no contention, exact counts (the adds are
 * reductions, not read-modify-write round trips); the host sums an SM's 64
 * slots into its row.
 *
 * threadhist_lw (this file built with GX_TH_LAST_WARP; GX_TH_WARP=last
 * at load, issue 40) counts by the block's last warp instead: the same
 * figures, with the probe off warp 0's path (docs/devbpf-perf.md).
 *
 * Trade-offs: counts are per process run (all kernels together); per-kernel
 * splits would need a hash map keyed by kernel id (a CAS per new key). Counts
 * reach the host at flushes (periodic, and at context teardown/exit). Threads
 * are the block's threads, not lanes that reached the entry (the same at
 * kernel entry, where every thread of the block is active). */
#include "gpuext/gdev_helpers.h"
#include "tools/tools_common.h"

struct {
	__uint(type, GDEV_MAP_PERWARP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gx_th_val);
} th_counts SEC(".maps");

SEC("gdev/blockprobe/*")
int threadhist(struct gdev_ctx *ctx)
{
	/* ctx->warpid (warp index in the block), not gdev_warpid(): the same
	 * value, but a context word the rewriter knows to be warp-uniform, so
	 * this test runs before the leader election as a uniform branch and
	 * warps 1.. leave without diverging (ptx-rewrite/site_uniform.c). */
#ifdef GX_TH_LAST_WARP
	/* threadhist_lw (GX_TH_WARP=last at load, issue 40): the block's
	 * last warp counts it, not warp 0. In a kernel whose thread 0 finishes
	 * the block alone after the last barrier (a block reduction writing its
	 * result: tool_bench's reduce, CuPy's ReductionKernel), warp 0 is the
	 * block's critical path at the exit and the last warp has left: the
	 * probe then runs in that slack; where the last warp has less work
	 * (rowsoftmax: columns past the row's end) it runs in that. Same count: thread 32 x last leaves exactly once, as
	 * thread 0 does, and is there at the entry. At the entry too (one test,
	 * no branch on the hook: LLVM's branch there kept the rewriter from
	 * hoisting the test before the election). Block size is a uniform
	 * context word, so the test stays one uniform branch. */
	if (ctx->warpid != (ctx->ntid_x * ctx->ntid_y * ctx->ntid_z - 1) >> 5)
		return GDEV_DEFAULT;
#elif defined(GX_TH_WARP1)
	/* threadhist_w1 (GX_TH_WARP=1 at load, issue 40): warp 1 counts the
	 * block (warp 0 in a block of one warp). Meant for the site before
	 * the kernel's first barrier (GX_PTX_BLOCK_SITE=barrier,
	 * ptx-rewrite/block_barrier.c): warp 0's thread 0 is the one that does
	 * a block's odd jobs (a stencil's halo load), so warp 0 tends to be
	 * the last at the barrier and warp 1 to wait there anyway. Exact
	 * wherever it sits: thread 32 leaves once, as thread 0 does. */
	if (ctx->warpid != (ctx->ntid_x * ctx->ntid_y * ctx->ntid_z > 32 ? 1 : 0))
		return GDEV_DEFAULT;
#else
	if (ctx->warpid != 0)
		return GDEV_DEFAULT;
#endif
	/* At an exit, only thread 0's leaving counts (lane 0 may leave alone,
	 * before or after the others); at the entry every lane is there. The
	 * hook word is a constant at each site, so the test folds away at the
	 * entry. */
	if (ctx->hook == GDEV_HOOK_EXIT && !(ctx->active_mask & 1))
		return GDEV_DEFAULT;
	__u32 key = 0;
	struct gx_th_val *v = bpf_map_lookup_elem(&th_counts, &key);
	if (!v)
		return GDEV_DEFAULT;
	__u64 n = (__u64)gdev_block_dim(0) * gdev_block_dim(1) * gdev_block_dim(2);
	/* Atomic adds whose results are unused: the JIT makes them `red.global`,
	 * fire-and-forget, so warp 0 does not wait for its counters' round trip
	 * (a load-then-store update held every block's warp 0 for one L2 round
	 * trip: +9.8 % on a stencil of 262 144 short blocks). Uncontended: the
	 * shard is this warp slot's own. */
	__sync_fetch_and_add(&v->blocks, 1);
	__sync_fetch_and_add(&v->warps, (n + 31) / 32);
	__sync_fetch_and_add(&v->threads, n);
	return GDEV_DEFAULT;
}

GDEV_LICENSE("Dual BSD/GPL");
