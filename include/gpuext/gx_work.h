/* gx_work.h — what a kernel under the persistent-worker transform
 * (ptx-rewrite/pass_persistent.c) shares with its launcher and its device
 * runtime (both in blocksched/, docs/blocksched.md).
 *
 * A transformed kernel has one more, trailing parameter, `.param .align 8
 * .b8 __gx_work[GX_WORK_SIZE]` (GX_WORK_PARAM): a struct gx_work_desc
 * passed by value, so a launch needs no copy to the device and a graph node
 * captured with it replays as it was launched. The kernel runs with any
 * number of blocks ("workers", SMs x occupancy as a 1-D grid) of the
 * original block size; each worker runs logical blocks ("units") 0 ..
 * total-1 of the original grid, one after another, with %ctaid/%nctaid
 * replaced by the unit's coordinates (x fastest) and grid_{x,y,z}.
 *
 * Which units a worker runs:
 *  - GX_WORK_STATIC: worker w takes w, w + W, w + 2W ... (W workers). No
 *    state, no atomics, no policy hook: the cheapest loop.
 *  - GX_WORK_CLAIM: units are claimed in chunks of `chunk` consecutive
 *    units through the device runtime (blocksched/bs_rt.c), in three phases:
 *    the chunks the previous launch of the kernel hinted as heavy (policy
 *    classes 15 .. 1, heaviest first, from a global cursor), then the
 *    worker's own contiguous range of chunks from its start, then — if the
 *    policy's should_try_steal says so — chunks taken from the top of the
 *    chunk space by a global cursor ("stealing"). Every chunk has a claim
 *    word, so a chunk runs exactly once whatever the policy decides, and
 *    every owner walks its whole range, so none is left behind.
 *
 * Plain C types only: included by the runtime compiled for NVPTX, by the
 * rewriter and by host code. */
#ifndef GX_WORK_H
#define GX_WORK_H

#define GX_WORK_PARAM "__gx_work"

enum gx_work_mode {
	GX_WORK_STATIC = 0,
	GX_WORK_CLAIM = 1,
};

/* The by-value kernel parameter. */
struct gx_work_desc {
	unsigned long long state; /* CLAIM: device address of the stream's struct gx_work_state */
	unsigned long long hints; /* CLAIM: the kernel's struct gx_work_hints, or 0 */
	unsigned long long stats; /* CLAIM: struct gx_work_wstat[workers] to fill (host
				   * memory mapped for the device: sampled launches), or 0 */
	unsigned int total;       /* units: grid_x * grid_y * grid_z */
	unsigned int grid_x, grid_y, grid_z; /* the original launch grid */
	unsigned int mode;        /* enum gx_work_mode */
	unsigned int chunk;       /* CLAIM: units per claim, >= 1 */
};

#define GX_WORK_OFF_STATE 0
#define GX_WORK_OFF_HINTS 8
#define GX_WORK_OFF_STATS 16
#define GX_WORK_OFF_TOTAL 24
#define GX_WORK_OFF_GRID 28
#define GX_WORK_OFF_MODE 40
#define GX_WORK_OFF_CHUNK 44
#define GX_WORK_SIZE 48

/* ---- CLAIM: the state of one stream (or one worker pool) in device memory.
 * Zeroed when allocated; a launch leaves it as it found it but for `epoch`,
 * which the launch's last worker bumps (it also resets the cursors), so the
 * next launch on the stream — ordered after this one — starts clean without
 * a copy or memset from the host. Claim words hold (epoch + 1) << 2 | how of
 * the launch that claimed the chunk; older launches' values read as free.
 * The host resets the whole state (memset on the stream) before epoch could
 * overflow 2^30. Each hot counter has its own 128-byte line. */
struct gx_work_state {
	unsigned int epoch;       /* launches finished on this state */
	unsigned int ccap;        /* host: claim words allocated */
	unsigned int pad0[30];
	unsigned int done;        /* workers finished (the last one cleans) */
	unsigned int pad1[31];
	unsigned int pnext;       /* cursor in the hinted chunks */
	unsigned int pad2[31];
	unsigned int taken;       /* thieves: chunks handed out from the top */
	unsigned int pad3[31];
	/* then: unsigned int claim[ccap] */
};
#define GX_WORK_STATE_HDR 512

/* What each worker of a sampled launch writes when it leaves (`gpuext
 * sched`): `done` last, after a system fence, so the host polling the
 * mapped memory sees the slot whole once done is set. */
struct gx_work_wstat {
	unsigned int units, chunks, steals, smid;
	unsigned long long t0, t1; /* %globaltimer ns: begin, leaving */
	unsigned int done;         /* 1 when written */
	unsigned int pad;
};
#define GX_WORK_WSTAT_SIZE 40

/* Claim word, low bits: who claimed the chunk in the current launch. */
#define GX_CLAIM_OWNER 1u
#define GX_CLAIM_HINT 2u
#define GX_CLAIM_THIEF 3u
#define GX_WORK_EPOCH_MAX (1u << 29) /* the host resets a state before this */

static inline unsigned long long gx_work_state_bytes(unsigned ccap)
{
	return GX_WORK_STATE_HDR + (unsigned long long)ccap * 4;
}

/* ---- CLAIM: what the previous launches of one kernel learned (one block
 * per context and kernel). A policy's gdev/sched/exit returns a class
 * 1..GX_WORK_CLASSES for the chunk that just ran (0: no hint); the runtime
 * appends the chunk to that class's list in the write buffer; the next
 * launch with the same total and chunk reads the lists, heaviest class
 * first. Launches of one kernel on several streams share the block: the
 * lists are only hints (claims stay exact), so a mixed or stale list costs
 * order, never correctness. */
#define GX_WORK_CLASSES 31
struct gx_work_hints {
	unsigned int gen;          /* read buffer: gen & 1 */
	unsigned int cap;          /* entries per list (host) */
	unsigned int key_total[2]; /* per buffer: total and chunk of the launch that wrote it */
	unsigned int key_chunk[2];
	unsigned int pad[2];
	unsigned int count[2][GX_WORK_CLASSES + 1]; /* per buffer and class (0 unused) */
	unsigned int pad2[56];
	/* then: unsigned int list[2][GX_WORK_CLASSES][cap] (chunk ids) */
};
#define GX_WORK_HINTS_HDR 512

static inline unsigned long long gx_work_hints_bytes(unsigned cap)
{
	return GX_WORK_HINTS_HDR + 2ull * GX_WORK_CLASSES * cap * 4;
}

/* ---- the device runtime's entry points (blocksched/bs_rt.c), called by
 * thread 0 of each worker in CLAIM mode; the transform links their PTX in
 * with the prefix `<fresh>_bs_` (GX_WORK_RT_PREFIX replaced).
 *   void begin(ws, state, hints, stats, total, chunk, worker, workers)
 *   u64  next(ws, cls)   cls: the exit hook's class for the chunk just run
 *   u64  steal(ws, ok)   after next() answered GX_WORK_ASK; ok: may steal
 * next/steal return a chunk as first unit | units << 32, GX_WORK_ASK, or
 * units 0 (done: the worker leaves; the runtime did its accounting). ws is
 * the worker's private state, GX_WORK_WS_SIZE bytes of .local. */
#define GX_WORK_RT_PREFIX "gxbsrt_"
#define GX_WORK_WS_SIZE 224
/* What the transform reads there for the sched hooks' context. */
#define GX_WORK_WS_OFF_T0 24     /* u64: the worker's start (%globaltimer ns) */
#define GX_WORK_WS_OFF_UNITS 84  /* u32: units run so far */
#define GX_WORK_WS_OFF_STEALS 92 /* u32: chunks stolen so far */
#define GX_WORK_ASK 0xffffffffffffffffull

#endif
