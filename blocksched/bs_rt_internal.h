/* bs_rt_internal.h — the device runtime of blocksched (bs_rt.c): how thread 0 of a
 * persistent worker claims its next chunk of units in GX_WORK_CLAIM mode
 * (include/gpuext/gx_work.h says what the phases are).
 *
 * Why C and not PTX written by hand: the claim protocol is the part whose
 * bugs lose or duplicate units, so it is written once and compiled twice —
 * to PTX by clang for the transformed kernels (linked in by the rewriter,
 * prefix GX_WORK_RT_PREFIX), and for the host, where tests run hundreds of
 * workers as threads against it (tests/blocksched/test_bs_rt.c) and a
 * simulator runs the policies on it. What differs between the two builds is
 * below: atomics, the clock and the SM id. */
#ifndef BS_RT_H
#define BS_RT_H

#include "gpuext/gx_work.h"

typedef unsigned int bs_u32;
typedef unsigned long long bs_u64;

/* The worker's private state (GX_WORK_WS_SIZE bytes of .local). */
struct gx_bs_ws {
	bs_u64 state, hints, stats;
	bs_u64 t0;
	bs_u32 total, chunk, nchunks, w, nw;
	bs_u32 tag;              /* (epoch + 1) << 2 */
	bs_u32 phase;            /* BS_PH_* */
	bs_u32 own_next, own_hi; /* chunks of the own range still to try */
	bs_u32 pri_n;            /* hinted chunks readable */
	bs_u32 rb;               /* hints: buffer read (gen & 1) */
	bs_u32 cur, cur_n;       /* the chunk being run (cur_n 0: none) */
	bs_u32 units, chunks, steals;
	bs_u32 pend[GX_WORK_CLASSES]; /* cumulative hinted counts, heaviest class first */
	bs_u32 pad;
};

enum { BS_PH_HINT, BS_PH_OWN, BS_PH_STEAL, BS_PH_DONE };

void gxbsrt_begin(struct gx_bs_ws *ws, bs_u64 state, bs_u64 hints, bs_u64 stats, bs_u32 total, bs_u32 chunk,
		  bs_u32 w, bs_u32 nw);
bs_u64 gxbsrt_next(struct gx_bs_ws *ws, bs_u32 cls);
bs_u64 gxbsrt_steal(struct gx_bs_ws *ws, bs_u32 ok);

/* Host build only: the clock and SM id the runtime reads (tests set them). */
#ifndef __NVPTX__
extern bs_u64 (*gx_bs_host_clock)(void);
extern bs_u32 (*gx_bs_host_smid)(void);
#endif

#endif
