/* tools_common.h — record and map layouts shared by the shipped tools' device
 * programs (tools/NAME.bpf.c, clang -target bpf) and their reports
 * (tools/NAME.c); the shim stores the records unread (gpuext/gx_toollog.h).
 *
 * Why one header: a ring record is a struct the device writes and a
 * formatter decodes in another process, after the application exited; the
 * two sides must agree byte for byte. Plain fixed-width types, 8-byte
 * aligned fields, no pointers. */
#ifndef GX_TOOLS_COMMON_H
#define GX_TOOLS_COMMON_H

#include "gpuext/gdev_ctx.h"

/* Key 0.. of the "cfg" ARRAY map every tool may declare: u64 knobs the shim
 * fills from GPUEXT_CFG (comma-separated) before the first launch. */
#define GX_TOOL_CFG_MAX 8

/* kernelretsnoop: one per block (warp 0's leader at kernel exit).
 *
 * Launches of more than GX_KRS_FULL_BLOCKS blocks record a regular sample:
 * the blocks whose linear index (x + nx * (y + ny * z)) is a multiple of
 * gx_krs_sample_mask(blocks) + 1, a power of two chosen so that at most
 * GX_KRS_FULL_BLOCKS blocks of a launch record. Why: warp 0 of a recording
 * block retires only after its record (a few dependent loads and the ring's
 * fetch-add), which cost a 262k-block stencil +5.6 % (+2.9 % sampling down
 * to 65,536 blocks per launch, bench/results/2026-12-03-gpu-run14.md), and a ring drained every 20 ms
 * holds 262,144 records: one such launch filled it, and the records kept
 * were the first blocks of the first launches of each drain period, the
 * rest dropped. A regular sample of every launch (16,384 blocks: 124 per SM
 * of an H200, enough for the finish spread and the per-SM balance) is the
 * better picture at a fraction of the cost; the test that skips the others
 * reads only block indices, so the rewriter hoists it before the leader
 * election (a uniform branch). The formatter recomputes the mask from the
 * launch's grid. */
#define GX_KRS_FULL_SHIFT 14
#define GX_KRS_FULL_BLOCKS (1u << GX_KRS_FULL_SHIFT)

/* A lower per-launch cap (issue 40, GX_KRS_CAP=1024|256 at load: the
 * objects kernelretsnoop_c1024 / kernelretsnoop_c256, built from the same
 * source with GX_KRS_SHIFT 10 / 8): the same rule with 2^shift in place of
 * GX_KRS_FULL_BLOCKS. Their records say so in bits 24..31 of nctaid[2]
 * (a grid's z is at most 65,535: those bits are 0 in a default record,
 * which reads as GX_KRS_FULL_SHIFT), so the formatter recomputes the
 * sample of each launch with the cap its process ran. */
#define GX_KRS_SHIFT_BIT 24
#define GX_KRS_NZ_MASK ((1u << GX_KRS_SHIFT_BIT) - 1)
static inline gdev_u64 gx_krs_sample_mask_at(gdev_u64 blocks, unsigned shift)
{
	gdev_u64 x = blocks ? (blocks - 1) >> shift : 0;
	x |= x >> 1;
	x |= x >> 2;
	x |= x >> 4;
	x |= x >> 8;
	x |= x >> 16;
	x |= x >> 32;
	return x;
}
/* Mask of the linear block index: 0 (every block) up to GX_KRS_FULL_BLOCKS
 * blocks, else 2^k - 1 for the least k with blocks <= 2^(14 + k). Block
 * `lin` records iff (lin & mask) == 0 (the formatter's view). */
static inline gdev_u64 gx_krs_sample_mask(gdev_u64 blocks)
{
	return gx_krs_sample_mask_at(blocks, GX_KRS_FULL_SHIFT);
}
static inline int gx_krs_skip_at(gdev_u64 lin, gdev_u64 blocks, unsigned shift)
{
	return (lin & -lin) - 1 < (blocks - 1) >> shift;
}

/* The same decision as the device makes it (blocks >= 1): skip block `lin`
 * iff its lowest set bit is at most m = (blocks - 1) >> 14 — the mask above
 * is the least 2^k - 1 >= m, so (lin & mask) != 0 exactly then (lin = 0:
 * 0 - 1 is the largest value, never skipped). Four operations instead of the
 * mask's chain of shifts, on warp 0's way out of every block; on the H200
 * both forms measured the same (bench/results/2026-12-03-gpu-run14.md), this one is shorter. */
static inline int gx_krs_skip(gdev_u64 lin, gdev_u64 blocks)
{
	return gx_krs_skip_at(lin, blocks, GX_KRS_FULL_SHIFT);
}
/* The k-th recorded block of a launch (0 for block 0): its linear index
 * shifted right by the bits of gx_krs_sample_mask_at's mask, so below
 * 2^shift. kernelretsnoop's record table puts a launch's records in
 * consecutive slots by it. A binary search on (blocks - 1) >> shift, not a
 * loop (the verifier) nor a count-leading-zeros (BPF has none); the tests
 * run uniform branches: every lane reads the same grid. */
static inline gdev_u64 gx_krs_sample_index(gdev_u64 lin, gdev_u64 blocks, unsigned shift)
{
	gdev_u64 m = blocks ? (blocks - 1) >> shift : 0;
	unsigned k = 0;
	if (m >> 32) {
		k += 32;
		m >>= 32;
	}
	if (m >> 16) {
		k += 16;
		m >>= 16;
	}
	if (m >> 8) {
		k += 8;
		m >>= 8;
	}
	if (m >> 4) {
		k += 4;
		m >>= 4;
	}
	if (m >> 2) {
		k += 2;
		m >>= 2;
	}
	if (m >> 1) {
		k += 1;
		m >>= 1;
	}
	return lin >> (k + (unsigned)m);
}

/* kernelretsnoop's record table (the default build, issue 40): a region of
 * 2^GX_KRS_TABLE_SHIFT slots per launch, GX_KRS_TABLE_LAUNCHES regions
 * (launch id mod that picks one); a launch records its sample of at most
 * 2^GX_KRS_TABLE_SHIFT blocks (the cap of GX_KRS_CAP=256), block k of the
 * sample in slot k of the region. 65,536 slots of 56 bytes: 3.7 MB, copied
 * by the drainer while launches come. */
#define GX_KRS_TABLE_SHIFT 8
#define GX_KRS_TABLE_LAUNCHES 256u
#define GX_KRS_TABLE_SLOTS (GX_KRS_TABLE_LAUNCHES << GX_KRS_TABLE_SHIFT)
static inline gdev_u32 gx_krs_table_slot(gdev_u64 launch_id, gdev_u64 k)
{
	return (gdev_u32)((launch_id & (GX_KRS_TABLE_LAUNCHES - 1)) << GX_KRS_TABLE_SHIFT | k);
}

/* The cap's shift a record was made with (GX_KRS_FULL_SHIFT for a default
 * record). */
static inline unsigned gx_krs_rec_shift(gdev_u32 nctaid_z)
{
	/* a tag no build writes (a damaged log) reads as the full cap */
	unsigned s = nctaid_z >> GX_KRS_SHIFT_BIT;
	return s && s <= GX_KRS_FULL_SHIFT ? s : GX_KRS_FULL_SHIFT;
}
struct gx_krs_rec {
	gdev_u64 kernel_id;
	gdev_u64 ts;        /* %globaltimer, ns */
	gdev_u32 ctaid[3];
	gdev_u32 smid;
	gdev_u32 nctaid[3];
	gdev_u32 ntid;      /* threads per block (x*y*z) */
	gdev_u64 launch_id; /* ctx->launch_id: %gridid, one per launch in a context */
};

/* kernelretsnoop's krs_counts: per kernel (hash key: kernel id, FNV-1a 64
 * of its name), what the device saw finish, for `gpuext exporter`
 * (deploy/exporter/kernelretsnoop.conf). Counted once per launch, at
 * block 0's thread 0's exit (block 0 is always recorded). */
struct gx_krs_count {
	gdev_u64 launches; /* launches whose block 0 finished */
	gdev_u64 blocks;   /* the blocks of those launches (their grids) */
};

/* threadhist: value of the per-warp-slot array (1 entry); the host sums the
 * 64 warp slots of an SM into that SM's row. */
struct gx_th_val {
	gdev_u64 blocks;
	gdev_u64 warps;
	gdev_u64 threads;
};

/* launchlate: one per launch (block (0,0,0), warp 0, at kernel entry). */
struct gx_ll_rec {
	gdev_u64 kernel_id;
	gdev_u64 ts;        /* %globaltimer at the first block's start */
	gdev_u32 smid;
	gdev_u32 nblocks;   /* grid size (x*y*z) */
	gdev_u64 launch_id; /* ctx->launch_id: %gridid, one per launch in a context */
};

/* memtrace: one per sampled warp access. */
struct gx_mt_rec {
	gdev_u64 kernel_id;
	gdev_u64 addr;      /* leader lane's address */
	gdev_u64 ts;
	gdev_u32 size;      /* bytes per lane */
	gdev_u32 op;        /* enum gdev_mem_op */
	gdev_u32 space;     /* enum gdev_space */
	gdev_u32 smid;
	gdev_u32 nr_active; /* lanes that made the access */
	gdev_u32 ctaid_x;
};

#endif
