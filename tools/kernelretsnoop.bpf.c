/* kernelretsnoop — when did each block of each kernel finish, and where.
 *
 * A retprobe on every kernel: at each `ret`/`exit` the trampoline calls us
 * once per warp; the leader of warp 0 of the block writes one record
 * {kernel, block index, SM, %globaltimer, grid, launch id}. The formatter
 * groups records by launch (the shim's launch log says how many blocks each
 * launch of a kernel had) and shows, per launch, the finish spread and
 * per-SM block counts; the trace puts one slice per block on the track of
 * its SM.
 *
 * Where records go (issue 40): by default a record table (GDEV_F_RECORDS,
 * docs/devbpf.md): launch L's region is L mod 256 of 256 regions, its k-th
 * recorded block writes slot k with seven plain stores — no atomic, no
 * load, nothing the block's exit waits for but the stores themselves. A
 * ring made every recording block's warp 0 wait at its exit for the
 * reservation's round trips (the hint, the fetch-add on one head shared by
 * every SM, the release): +35 % on a 9 µs CuPy reduction, +24 % on a
 * stencil of 16,384 short blocks (GPU run 108). What the table costs:
 * launches of more than 256 blocks record a regular sample of 256 (every
 * 2nd, 4th, ... block by linear index: tools_common.h), and a launch's
 * region is reused 256 launches later — the drainer takes a record within
 * two drain periods (20 ms each), so beyond ~6,000 launches a second some
 * launches' records are overwritten before it sees them (the report counts
 * the blocks it expected and did not get). GX_KRS_RING=1 at load runs the
 * ring build (kernelretsnoop_ring: 16,384 blocks a launch, 262,144 records
 * between drains, a full ring refuses and counts; a refusal costs one
 * snapshot load and one sharded reduction, mapimpl_internal.h).
 *
 * Warp 0's exit stands for the block's: other warps may finish a little
 * later. A warp whose lanes leave through several `ret` sites calls the
 * hook once per site: the last one's record stays (in the table, the same
 * slot; from a ring, the formatter keeps the last record of a (launch,
 * block)).
 *
 * krs_counts (a hash map by kernel id, struct gx_krs_count) is what
 * `gpuext exporter` serves of kernelretsnoop: per kernel, launches seen
 * finishing on the device and their blocks. Block 0's thread 0 alone
 * counts, once per launch: a hash lookup and two fire-and-forget adds (a new
 * kernel's first launch inserts its key, one CAS). Counting at every
 * recorded block made every block of a launch contend on one counter: +130
 * to +260 % on tool_bench's 262,144-block kernels (GPU run 89), and its
 * code at the exits raised the registers of kernels with large blocks past
 * what their launch allows: tool_bench's gemm and stencil launches failed
 * under it (wrong checksums, no log). So the map is in the variant
 * kernelretsnoop_counts only (GX_KRS_COUNTS=1 at load; this file built with
 * GX_KRS_COUNTS, a ring build), not the default tool, until copies are
 * capped at the originals' limits (docs/metrics.md). */
#include "gpuext/gdev_helpers.h"
#include "tools/tools_common.h"

/* The ring builds: kernelretsnoop_ring (GX_KRS_RING), _all (every block),
 * _counts (the exporter's map), _c1024 / _c256 (a lower cap, GX_KRS_SHIFT
 * given: GX_KRS_CAP at load, attach/policy.c). The default: the table. */
#if defined(GX_KRS_RING) || defined(GX_KRS_ALL) || defined(GX_KRS_COUNTS) || defined(GX_KRS_SHIFT)
#define GX_KRS_USE_RING 1
#endif
/* The per-launch cap as a power of two: GX_KRS_FULL_SHIFT (16,384 blocks)
 * for the ring, GX_KRS_TABLE_SHIFT (256) for the table; records made with
 * another than the full cap are tagged with it. */
#ifndef GX_KRS_SHIFT
#ifdef GX_KRS_USE_RING
#define GX_KRS_SHIFT GX_KRS_FULL_SHIFT
#else
#define GX_KRS_SHIFT GX_KRS_TABLE_SHIFT
#endif
#endif
#if GX_KRS_SHIFT == GX_KRS_FULL_SHIFT
#define GX_KRS_TAG 0ull
#else
#define GX_KRS_TAG ((__u64)GX_KRS_SHIFT << GX_KRS_SHIFT_BIT)
#endif

#ifdef GX_KRS_USE_RING
struct {
	__uint(type, GDEV_MAP_RINGBUF);
	__uint(max_entries, 1 << 24);
} krs_ring SEC(".maps");
#else
struct {
	__uint(type, GDEV_MAP_ARRAY);
	__uint(max_entries, GX_KRS_TABLE_SLOTS);
	__uint(map_flags, GDEV_F_RECORDS);
	__type(key, __u32);
	__type(value, struct gx_krs_rec);
} krs_slots SEC(".maps");
#endif

#ifdef GX_KRS_COUNTS
struct {
	__uint(type, GDEV_MAP_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct gx_krs_count);
} krs_counts SEC(".maps");
#endif

SEC("gdev/retprobe/*")
int kernelretsnoop(struct gdev_ctx *ctx)
{
	/* ctx->warpid (warp index in the block), not gdev_warpid(): the same
	 * value, but a context word the rewriter knows to be warp-uniform, so
	 * this test runs before the leader election as a uniform branch and
	 * warps 1.. leave at once, without diverging
	 * (ptx-rewrite/site_uniform.c) */
	if (ctx->warpid != 0)
		return GDEV_DEFAULT;
#ifndef GX_KRS_ALL
	/* launches over GX_KRS_FULL_BLOCKS blocks: a regular sample of blocks
	 * (gx_tools.h says why); block indices only, so a uniform branch.
	 * kernelretsnoop_all (this file built with GX_KRS_ALL) records every
	 * block of every launch, at the old cost. */
	__u64 nx = ctx->nctaid_x, ny = ctx->nctaid_y;
	__u64 lin = ctx->ctaid_x + nx * (ctx->ctaid_y + ny * ctx->ctaid_z);
	if (gx_krs_skip_at(lin, nx * ny * ctx->nctaid_z, GX_KRS_SHIFT))
		return GDEV_DEFAULT;
#endif
#ifdef GX_KRS_USE_RING
	/* Built as 8-byte words (the layout of struct gx_krs_rec): the ring
	 * helper then reads them straight from registers, no u32 pieces
	 * reassembled through the stack. */
	union {
		struct gx_krs_rec r;
		__u64 w[7];
	} u;
	u.w[0] = ctx->kernel_id;
	u.w[1] = gdev_globaltimer();
	u.w[2] = (__u64)ctx->ctaid_y << 32 | ctx->ctaid_x;
	u.w[3] = (__u64)ctx->smid << 32 | ctx->ctaid_z;
	u.w[4] = (__u64)ctx->nctaid_y << 32 | ctx->nctaid_x;
	u.w[5] = (__u64)(ctx->ntid_x * ctx->ntid_y * ctx->ntid_z) << 32 | GX_KRS_TAG | ctx->nctaid_z;
	u.w[6] = ctx->launch_id;
	bpf_ringbuf_output(&krs_ring, &u, sizeof(u), 0);
#else
	/* The k-th block of this launch's sample, in slot k of its region;
	 * seven stores of 8 bytes (struct gx_krs_rec's layout), each word
	 * stored as soon as it is made: BPF has ten registers, and words held
	 * for one store sequence spill to the program's stack, which costs
	 * every thread of the kernel a local-memory frame. The time is never
	 * 0, so no record looks like an empty slot. */
	__u32 slot = gx_krs_table_slot(ctx->launch_id, gx_krs_sample_index(lin, nx * ny * ctx->nctaid_z, GX_KRS_SHIFT));
	__u64 *w = bpf_map_lookup_elem(&krs_slots, &slot);
	if (!w)
		return GDEV_DEFAULT;
	w[0] = ctx->kernel_id;
	w[1] = gdev_globaltimer();
	w[2] = (__u64)ctx->ctaid_y << 32 | ctx->ctaid_x;
	w[3] = (__u64)ctx->smid << 32 | ctx->ctaid_z;
	w[4] = (__u64)ctx->nctaid_y << 32 | ctx->nctaid_x;
	w[5] = (__u64)(ctx->ntid_x * ctx->ntid_y * ctx->ntid_z) << 32 | GX_KRS_TAG | ctx->nctaid_z;
	w[6] = ctx->launch_id;
#endif
#ifdef GX_KRS_COUNTS
	/* block 0's thread 0 only: once per launch (a warp leaving through
	 * several exit sites counts once: lane 0 leaves once) */
	if ((ctx->ctaid_x | ctx->ctaid_y | ctx->ctaid_z) != 0 || !(ctx->active_mask & 1))
		return GDEV_DEFAULT;
	__u64 kid = ctx->kernel_id;
	struct gx_krs_count *c = bpf_map_lookup_elem(&krs_counts, &kid);
	if (!c) {
		struct gx_krs_count zero = { 0, 0 };
		bpf_map_update_elem(&krs_counts, &kid, &zero, GDEV_NOEXIST);
		c = bpf_map_lookup_elem(&krs_counts, &kid);
		if (!c)
			return GDEV_DEFAULT; /* full: counted by nobody, the ring still has it */
	}
	__sync_fetch_and_add(&c->launches, 1);
	__sync_fetch_and_add(&c->blocks, (__u64)ctx->nctaid_x * ctx->nctaid_y * ctx->nctaid_z);
#endif
	return GDEV_DEFAULT;
}

GDEV_LICENSE("Dual BSD/GPL");
