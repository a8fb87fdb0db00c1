/* bs_rt.c — the claim protocol of GX_WORK_CLAIM (bs_rt_internal.h says why it is C).
 *
 * Chunks are numbered 0 .. C-1 (chunk c = units [c*k, min((c+1)*k, total))).
 * Worker w owns the contiguous range [lo(w), lo(w+1)), lo(w) = w*C/W: it
 * starts on its own chunks at once, with no shared counter, so a cluster of
 * heavy units anywhere in the grid is started at time 0 by its owners
 * instead of last (the hardware dispatches blocks in index order).
 *
 * A chunk is claimed by raising its claim word to tag | how with one
 * atom.max (tag = (epoch + 1) << 2, above every older launch's value):
 * whoever sees an older value runs the chunk. Three claimants:
 *  - hinted chunks (the previous launch's policy classes, heaviest first,
 *    each class's list from its end): any worker, through the global
 *    cursor `pnext`;
 *  - the owner, walking its range upwards; it stops at the first chunk a
 *    thief claimed (everything above it was handed to thieves);
 *  - thieves, through the global cursor `taken` that hands out chunks from
 *    the top of the chunk space downwards, one each. A thief that finds a
 *    chunk its owner claimed knows the owner's range is claimed from lo up
 *    to there, and moves the cursor below that range with one atom.max: the
 *    cursor never visits a claimed prefix twice, so the thieves' total work
 *    is bounded by C + W probes whatever the schedule.
 * Why every chunk runs exactly once: the claim word decides; every chunk is
 * either tried by its owner (who only stops at a chunk the cursor already
 * passed) or handed to a thief by the cursor (which only skips ranges whose
 * owner already claimed them). A policy refusing to steal only ends that
 * worker's stealing. A hinted claim may overwrite an owner's mark (max):
 * that only hides a jump from thieves, never a chunk.
 *
 * The launch's last worker (done == W) resets the cursors, flips the hint
 * buffers and bumps the epoch: the state is clean for the next launch on
 * the stream with no work from the host. */
#include "blocksched/bs_rt_internal.h"

#ifdef __NVPTX__
typedef __attribute__((address_space(1))) bs_u32 gu32;
static inline bs_u64 rt_clock(void)
{
	bs_u64 t;
	__asm__ volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}
static inline bs_u32 rt_smid(void)
{
	bs_u32 s;
	__asm__ volatile("mov.u32 %0, %%smid;" : "=r"(s));
	return s;
}
static inline void rt_fence(void)
{
	__asm__ volatile("membar.gl;" ::: "memory");
}
static inline void rt_fence_sys(void)
{
	__asm__ volatile("membar.sys;" ::: "memory");
}
static inline bs_u32 at_max(gu32 *p, bs_u32 v)
{
	bs_u32 old;
	__asm__ volatile("atom.global.max.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
	return old;
}
#else
typedef bs_u32 gu32;
bs_u64 (*gx_bs_host_clock)(void);
bs_u32 (*gx_bs_host_smid)(void);
static inline bs_u64 rt_clock(void)
{
	return gx_bs_host_clock ? gx_bs_host_clock() : 0;
}
static inline bs_u32 rt_smid(void)
{
	return gx_bs_host_smid ? gx_bs_host_smid() : 0;
}
static inline void rt_fence_sys(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}
static inline bs_u32 at_max(gu32 *p, bs_u32 v)
{
	bs_u32 old = __atomic_load_n(p, __ATOMIC_RELAXED);
	while (old < v && !__atomic_compare_exchange_n(p, &old, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	return old;
}
#endif

_Static_assert(sizeof(struct gx_bs_ws) <= GX_WORK_WS_SIZE, "worker state fits its .local");
_Static_assert(__builtin_offsetof(struct gx_bs_ws, t0) == GX_WORK_WS_OFF_T0, "ws.t0");
_Static_assert(__builtin_offsetof(struct gx_bs_ws, units) == GX_WORK_WS_OFF_UNITS, "ws.units");
_Static_assert(__builtin_offsetof(struct gx_bs_ws, steals) == GX_WORK_WS_OFF_STEALS, "ws.steals");
_Static_assert(sizeof(struct gx_work_state) == GX_WORK_STATE_HDR, "state header");
_Static_assert(sizeof(struct gx_work_hints) == GX_WORK_HINTS_HDR, "hints header");
_Static_assert(sizeof(struct gx_work_wstat) == GX_WORK_WSTAT_SIZE, "stats slot");
_Static_assert(sizeof(struct gx_work_desc) == GX_WORK_SIZE, "descriptor");

static inline bs_u32 at_add(gu32 *p, bs_u32 v)
{
	return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}

/* `done`: acquire-release, so the cleaner sees everyone's work done. */
static inline bs_u32 at_add_ar(gu32 *p, bs_u32 v)
{
#ifdef __NVPTX__
	rt_fence();
	bs_u32 r = at_add(p, v);
	rt_fence();
	return r;
#else
	return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL);
#endif
}

static inline void at_zero(gu32 *p)
{
	__atomic_store_n(p, 0, __ATOMIC_RELAXED);
}

static inline struct gx_work_state *st_of(const struct gx_bs_ws *ws)
{
	return (struct gx_work_state *)(unsigned long)ws->state;
}

static inline gu32 *g(unsigned int *p)
{
	return (gu32 *)p;
}

static inline unsigned int *claim_word(const struct gx_bs_ws *ws, bs_u32 c)
{
	return (unsigned int *)((char *)st_of(ws) + GX_WORK_STATE_HDR) + c;
}

static inline struct gx_work_hints *hints_of(const struct gx_bs_ws *ws)
{
	return (struct gx_work_hints *)(unsigned long)ws->hints;
}

static inline unsigned int *hint_list(struct gx_work_hints *h, bs_u32 buf, bs_u32 cls)
{
	return (unsigned int *)((char *)h + GX_WORK_HINTS_HDR) + ((bs_u64)buf * GX_WORK_CLASSES + (cls - 1)) * h->cap;
}

static inline bs_u32 lo_of(const struct gx_bs_ws *ws, bs_u32 w)
{
	return (bs_u32)((bs_u64)w * ws->nchunks / ws->nw);
}

/* The first chunk of the range that holds chunk c. */
static bs_u32 range_lo(const struct gx_bs_ws *ws, bs_u32 c)
{
	bs_u32 o = (bs_u32)((bs_u64)c * ws->nw / ws->nchunks);
	while (o + 1 < ws->nw && lo_of(ws, o + 1) <= c)
		o++;
	while (o > 0 && lo_of(ws, o) > c)
		o--;
	return lo_of(ws, o);
}

void gxbsrt_begin(struct gx_bs_ws *ws, bs_u64 state, bs_u64 hints, bs_u64 stats, bs_u32 total, bs_u32 chunk,
		  bs_u32 w, bs_u32 nw)
{
	struct gx_work_state *st = (struct gx_work_state *)(unsigned long)state;
	ws->state = state;
	ws->hints = hints;
	ws->stats = stats;
	ws->t0 = rt_clock();
	ws->total = total;
	ws->chunk = chunk ? chunk : 1;
	ws->nchunks = (bs_u32)(((bs_u64)total + ws->chunk - 1) / ws->chunk);
	ws->w = w;
	ws->nw = nw ? nw : 1;
	ws->tag = (__atomic_load_n(g(&st->epoch), __ATOMIC_RELAXED) + 1) << 2;
	ws->phase = BS_PH_HINT;
	ws->own_next = lo_of(ws, w);
	ws->own_hi = lo_of(ws, w + 1);
	ws->pri_n = 0;
	ws->rb = 0;
	ws->cur = ws->cur_n = 0;
	ws->units = ws->chunks = ws->steals = 0;
	struct gx_work_hints *h = hints_of(ws);
	if (h) {
		bs_u32 rb = h->gen & 1, n = 0;
		ws->rb = rb;
		int valid = h->key_total[rb] == total && h->key_chunk[rb] == ws->chunk;
		for (bs_u32 i = 0; i < GX_WORK_CLASSES; i++) {
			bs_u32 c = h->count[rb][GX_WORK_CLASSES - i];
			n += valid ? (c < h->cap ? c : h->cap) : 0;
			ws->pend[i] = n;
		}
		ws->pri_n = n;
	}
}

static bs_u64 chunk_ret(struct gx_bs_ws *ws, bs_u32 c)
{
	bs_u32 first = c * ws->chunk, n = ws->total - first < ws->chunk ? ws->total - first : ws->chunk;
	ws->cur = c;
	ws->cur_n = n;
	return first | (bs_u64)n << 32;
}

/* The worker leaves: stats, and the last one cleans the state. */
static bs_u64 finish(struct gx_bs_ws *ws)
{
	struct gx_work_state *st = st_of(ws);
	if (ws->phase == BS_PH_DONE)
		return ws->total;
	ws->phase = BS_PH_DONE;
	if (ws->stats) {
		struct gx_work_wstat *s = (struct gx_work_wstat *)(unsigned long)ws->stats + ws->w;
		s->units = ws->units;
		s->chunks = ws->chunks;
		s->steals = ws->steals;
		s->smid = rt_smid();
		s->t0 = ws->t0;
		s->t1 = rt_clock();
		rt_fence_sys();
		__atomic_store_n(&s->done, 1, __ATOMIC_RELAXED);
	}
	/* Acquire-release: this worker's claims come before its `done`, the
	 * cleaner's resets after everyone's (a returned atomic is complete on
	 * NVIDIA GPUs anyway; the fences make it so in the memory model). */
	if (at_add_ar(g(&st->done), 1) == ws->nw - 1) {
		/* Every worker has left: nobody reads the cursors any more. */
		at_zero(g(&st->pnext));
		at_zero(g(&st->taken));
		at_zero(g(&st->done));
		struct gx_work_hints *h = hints_of(ws);
		if (h) {
			bs_u32 wb = ws->rb ^ 1;
			h->key_total[wb] = ws->total;
			h->key_chunk[wb] = ws->chunk;
			for (bs_u32 c = 0; c <= GX_WORK_CLASSES; c++)
				h->count[ws->rb][c] = 0; /* the next launch writes there */
			h->gen = wb;
		}
		__atomic_store_n(g(&st->epoch), ws->tag >> 2, __ATOMIC_RELAXED);
	}
	return ws->total;
}

/* The chunk just run: counts, and its class into the hint lists. */
static void chunk_done(struct gx_bs_ws *ws, bs_u32 cls)
{
	if (!ws->cur_n)
		return;
	ws->units += ws->cur_n;
	ws->chunks++;
	ws->cur_n = 0;
	struct gx_work_hints *h = hints_of(ws);
	if (h && cls && cls <= GX_WORK_CLASSES) {
		bs_u32 wb = ws->rb ^ 1;
		bs_u32 i = at_add(g(&h->count[wb][cls]), 1);
		if (i < h->cap)
			hint_list(h, wb, cls)[i] = ws->cur;
	}
}

bs_u64 gxbsrt_next(struct gx_bs_ws *ws, bs_u32 cls)
{
	struct gx_work_state *st = st_of(ws);
	chunk_done(ws, cls);
	if (ws->phase == BS_PH_HINT) {
		struct gx_work_hints *h = hints_of(ws);
		while (ws->pri_n) {
			bs_u32 i = at_add(g(&st->pnext), 1);
			if (i >= ws->pri_n)
				break;
			bs_u32 k = 0;
			while (i >= ws->pend[k])
				k++;
			/* a class's list from its end: the last to finish first.
			 * Chunks of a class that started together (the previous
			 * launch ran them heaviest class first) finish lightest
			 * first, so this is heaviest first within the class too */
			bs_u32 c = hint_list(h, ws->rb, GX_WORK_CLASSES - k)[ws->pend[k] - 1 - i];
			if (c < ws->nchunks && at_max(g(claim_word(ws, c)), ws->tag | GX_CLAIM_HINT) < ws->tag)
				return chunk_ret(ws, c);
		}
		ws->phase = BS_PH_OWN;
	}
	if (ws->phase == BS_PH_OWN) {
		while (ws->own_next < ws->own_hi) {
			bs_u32 c = ws->own_next++;
			bs_u32 old = at_max(g(claim_word(ws, c)), ws->tag | GX_CLAIM_OWNER);
			if (old < ws->tag)
				return chunk_ret(ws, c);
			if ((old & 3) == GX_CLAIM_THIEF)
				ws->own_next = ws->own_hi;
		}
		ws->phase = BS_PH_STEAL;
	}
	if (ws->phase == BS_PH_STEAL)
		return GX_WORK_ASK;
	return finish(ws);
}

bs_u64 gxbsrt_steal(struct gx_bs_ws *ws, bs_u32 ok)
{
	struct gx_work_state *st = st_of(ws);
	if (!ok || ws->phase != BS_PH_STEAL)
		return finish(ws);
	for (;;) {
		bs_u32 t = at_add(g(&st->taken), 1);
		if (t >= ws->nchunks)
			return finish(ws);
		bs_u32 c = ws->nchunks - 1 - t;
		bs_u32 old = at_max(g(claim_word(ws, c)), ws->tag | GX_CLAIM_THIEF);
		if (old < ws->tag) {
			ws->steals++;
			return chunk_ret(ws, c);
		}
		if ((old & 3) == GX_CLAIM_OWNER) {
			/* The owner claimed its range up to c: skip to below it. */
			bs_u32 lo = range_lo(ws, c);
			if (lo < c)
				at_max(g(&st->taken), ws->nchunks - lo);
		}
	}
}
