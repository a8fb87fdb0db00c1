/* launchlate — time from the host's launch call to the first block running.
 *
 * A probe at every kernel entry; the leader of warp 0 of block (0,0,0) emits
 * {kernel, %globaltimer, SM}: the hardware dispatches blocks in index order,
 * so block 0 is (within a dispatch round) the first to start. The shim logs
 * every launch with its host time (CLOCK_REALTIME) and calibrates
 * %globaltimer against that clock once per context with a tiny ping-pong
 * kernel; the formatter matches the k-th record of a kernel with the k-th
 * launch of that kernel and prints latency = device start - host launch.
 *
 * Trade-offs: launches of one kernel on several concurrent streams may be
 * matched out of order (latencies then mix, totals stay right). The
 * calibration error (half the ping-pong round trip, ~1 us) bounds accuracy.
 * One record per launch: no measurable cost on real kernels. */
#include "gpuext/gdev_helpers.h"
#include "tools/tools_common.h"

/* 4 MiB, not the 1 MiB its records need (26,000 launches between two
 * drains): rings of 2 MiB and more take roomy hints (gx_devrt.h), so block
 * 0's record costs one L2 round trip less before its payload. */
struct {
	__uint(type, GDEV_MAP_RINGBUF);
	__uint(max_entries, 1 << 22);
} ll_ring SEC(".maps");

SEC("gdev/probe/*")
int launchlate(struct gdev_ctx *ctx)
{
	/* Cheapest test first: the block index words are %ctaid reads, one OR and
	 * one compare; every warp of every other block leaves after it. The warp
	 * test (%tid/%ntid arithmetic) then runs in block 0 only. Both read
	 * context words the rewriter knows to be warp-uniform, so at an inlined
	 * site they run before the leader election as uniform branches: a warp
	 * that does not qualify never diverges (ptx-rewrite/site_uniform.c). */
	if ((ctx->ctaid_x | ctx->ctaid_y | ctx->ctaid_z) != 0)
		return GDEV_DEFAULT;
	if (ctx->warpid != 0)
		return GDEV_DEFAULT;
	/* Built as 8-byte words (the layout of struct gx_ll_rec): the ring
	 * helper reads them from registers, no stack frame is left. */
	union {
		struct gx_ll_rec r;
		__u64 w[4];
	} u;
	u.w[0] = ctx->kernel_id;
	u.w[1] = gdev_globaltimer();
	u.w[2] = (__u64)(ctx->nctaid_x * ctx->nctaid_y * ctx->nctaid_z) << 32 | ctx->smid;
	u.w[3] = ctx->launch_id;
	bpf_ringbuf_output(&ll_ring, &u, sizeof(u), 0);
	return GDEV_DEFAULT;
}

GDEV_LICENSE("Dual BSD/GPL");
