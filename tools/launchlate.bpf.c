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

#ifdef GX_LL_RING
/* launchlate_ring (GX_LL_RING=1 at load): the records through a ring, as
 * before the record table. 4 MiB, not the 1 MiB its records need (26,000
 * launches between two drains): rings of 2 MiB and more take roomy hints
 * (gx_devrt.h), so block 0's record costs one L2 round trip less before its
 * payload. Still two or three round trips (the hint, the reservation, the
 * release of the payload) that block 0's warp 0 waits for at its entry:
 * +17 to +23 % on a 9 us CuPy reduction (GPU runs 99, 103). */
struct {
	__uint(type, GDEV_MAP_RINGBUF);
	__uint(max_entries, 1 << 22);
} ll_ring SEC(".maps");
#else
/* A record table (GDEV_F_RECORDS): launch L's record goes to slot
 * L mod GX_LL_SLOTS with four plain stores, nothing the warp waits for;
 * the shim's drainer turns slots into the same records a ring gave. A slot
 * is reused GX_LL_SLOTS launches later: the drainer takes a record within
 * two drain periods (40 ms), so up to ~800,000 launches a second lose none
 * (if %gridid counts launches one by one). 1 MiB, copied by the drainer
 * while launches come. */
#define GX_LL_SLOTS (1u << 15)
struct {
	__uint(type, GDEV_MAP_ARRAY);
	__uint(max_entries, GX_LL_SLOTS);
	__uint(map_flags, GDEV_F_RECORDS);
	__type(key, __u32);
	__type(value, struct gx_ll_rec);
} ll_slots SEC(".maps");
#endif

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
#ifdef GX_LL_RING
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
#else
	__u32 slot = (__u32)ctx->launch_id & (GX_LL_SLOTS - 1);
	/* as 8-byte words (struct gx_ll_rec's layout): four stores */
	__u64 *w = bpf_map_lookup_elem(&ll_slots, &slot);
	if (!w)
		return GDEV_DEFAULT;
	/* the time is never 0: no record is mistaken for an empty slot */
	w[0] = ctx->kernel_id;
	w[1] = gdev_globaltimer();
	w[2] = (__u64)(ctx->nctaid_x * ctx->nctaid_y * ctx->nctaid_z) << 32 | ctx->smid;
	w[3] = ctx->launch_id;
#endif
	return GDEV_DEFAULT;
}

GDEV_LICENSE("Dual BSD/GPL");
