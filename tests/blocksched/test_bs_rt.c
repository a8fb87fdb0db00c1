/* test_bs_rt.c — the claim protocol of blocksched's device runtime
 * (blocksched/bs_rt.c, the same C the transformed kernels run as PTX), on
 * the host:
 *  - interleaved: hundreds of workers stepped one call at a time in a
 *    random order (every interleaving of whole calls is reachable), with
 *    random steal decisions and classes, over many launches on one state
 *    with varying units, chunk sizes and worker counts (more workers than
 *    chunks included): every unit runs exactly once, the state is clean
 *    after each launch (cursors 0, epoch + 1), the stats add up;
 *  - hints: a launch after one whose chunks got classes runs the hinted
 *    chunks first, heaviest class first, and only when total and chunk
 *    match;
 *  - threads: the same with real concurrency (one thread per worker, C11
 *    atomics) for many launches;
 *  - refusal: a worker whose policy never lets it steal still leaves no
 *    unit behind (owners drain their ranges), and with everyone refusing
 *    every unit runs once. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "blocksched/bs_rt_internal.h"
#include "tests/gx_test.h"

#define MAX_UNITS 20000
#define MAX_W 600

static unsigned char *state_mem;
static struct gx_work_wstat *stats;
static struct gx_work_state *st;
static struct gx_work_hints *hints;
static unsigned hints_cap = MAX_UNITS;
static unsigned runs[MAX_UNITS];
static uint64_t rng = 88172645463325252ull;

static unsigned rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return n ? (unsigned)(rng % n) : 0;
}

static void alloc_state(unsigned wcap, unsigned ccap)
{
	free(state_mem);
	state_mem = aligned_alloc(128, (gx_work_state_bytes(ccap) + 127) / 128 * 128);
	memset(state_mem, 0, gx_work_state_bytes(ccap));
	st = (struct gx_work_state *)state_mem;
	st->ccap = ccap;
	free(stats);
	stats = calloc(wcap, sizeof(*stats));
	size_t hb = gx_work_hints_bytes(hints_cap);
	free(hints);
	hints = aligned_alloc(256, (hb + 255) / 256 * 256);
	memset(hints, 0, hb);
	hints->cap = hints_cap;
}

struct worker {
	struct gx_bs_ws ws;
	uint64_t r;
	int started, done, asked;
};
static struct worker wk[MAX_W];

/* Class of a chunk for the "policy": a fixed function of its id. */
static unsigned class_of(unsigned c)
{
	return c % 7 == 3 ? 15 : c % 11 == 5 ? 8 : c % 5 == 1 ? 1 : 0;
}

/* Claim order of this launch (chunk ids), for the hint checks. */
static unsigned order[MAX_UNITS], norder;

/* One step of worker i; returns 1 when it left. */
static int step(unsigned i, unsigned total, unsigned chunk, unsigned nw, int steal_pct, int with_hints,
		int classes)
{
	struct worker *w = &wk[i];
	if (w->done)
		return 1;
	if (!w->started) {
		gxbsrt_begin(&w->ws, (uint64_t)(uintptr_t)st, with_hints ? (uint64_t)(uintptr_t)hints : 0,
			     (uint64_t)(uintptr_t)stats, total, chunk, i, nw);
		w->started = 1;
		w->r = 0;
		return 0;
	}
	uint64_t r;
	if (w->asked) {
		r = gxbsrt_steal(&w->ws, (unsigned)rnd(100) < (unsigned)steal_pct);
		w->asked = 0;
	} else {
		unsigned cls = 0;
		if (w->r && classes)
			cls = class_of((unsigned)(w->r - 1));
		r = gxbsrt_next(&w->ws, cls);
	}
	if (r == GX_WORK_ASK) {
		w->asked = 1;
		return 0;
	}
	unsigned n = (unsigned)(r >> 32), first = (unsigned)r;
	if (!n) {
		w->done = 1;
		return 1;
	}
	order[norder++] = first / chunk;
	for (unsigned u = first; u < first + n; u++)
		if (u < MAX_UNITS)
			__atomic_fetch_add(&runs[u], 1, __ATOMIC_RELAXED);
	w->r = first / chunk + 1; /* the chunk just claimed, for its class */
	return 0;
}

/* A whole launch, interleaved; returns the number of bad units. */
static int launch(unsigned total, unsigned chunk, unsigned nw, int steal_pct, int with_hints, int classes)
{
	memset(runs, 0, sizeof(runs));
	memset(wk, 0, sizeof(wk[0]) * nw);
	norder = 0;
	unsigned left = nw, e0 = st->epoch;
	while (left) {
		unsigned i = rnd(nw);
		if (wk[i].done)
			continue;
		if (step(i, total, chunk, nw, steal_pct, with_hints, classes))
			left--;
	}
	int bad = 0;
	for (unsigned u = 0; u < total; u++)
		bad += runs[u] != 1;
	bad += st->done != 0 || st->pnext != 0 || st->taken != 0 || st->epoch != e0 + 1;
	return bad;
}

static bs_u64 fake_clock(void)
{
	static bs_u64 t;
	return __atomic_add_fetch(&t, 10, __ATOMIC_RELAXED);
}

/* ---- real threads ---- */
struct targ {
	unsigned i, total, chunk, nw;
	uint64_t seed;
};
static pthread_barrier_t bar;

static void *thread_main(void *p)
{
	struct targ *a = p;
	struct gx_bs_ws ws;
	uint64_t s = a->seed | 1;
	pthread_barrier_wait(&bar);
	gxbsrt_begin(&ws, (uint64_t)(uintptr_t)st, (uint64_t)(uintptr_t)hints, 0, a->total, a->chunk, a->i, a->nw);
	uint64_t r = gxbsrt_next(&ws, 0);
	for (;;) {
		if (r == GX_WORK_ASK) {
			s ^= s << 13, s ^= s >> 7, s ^= s << 17;
			r = gxbsrt_steal(&ws, s % 4 != 0);
			continue;
		}
		unsigned n = (unsigned)(r >> 32), first = (unsigned)r;
		if (!n)
			break;
		for (unsigned u = first; u < first + n; u++)
			__atomic_fetch_add(&runs[u], 1, __ATOMIC_RELAXED);
		r = gxbsrt_next(&ws, (first / a->chunk) % 3);
	}
	return NULL;
}

static int launch_threads(unsigned total, unsigned chunk, unsigned nw)
{
	pthread_t th[64];
	struct targ a[64];
	memset(runs, 0, sizeof(runs));
	unsigned e0 = st->epoch;
	pthread_barrier_init(&bar, NULL, nw);
	for (unsigned i = 0; i < nw; i++) {
		a[i] = (struct targ){ i, total, chunk, nw, rng + i };
		pthread_create(&th[i], NULL, thread_main, &a[i]);
	}
	for (unsigned i = 0; i < nw; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&bar);
	int bad = 0;
	for (unsigned u = 0; u < total; u++)
		bad += runs[u] != 1;
	return bad + (st->done != 0 || st->pnext != 0 || st->taken != 0 || st->epoch != e0 + 1);
}

int main(void)
{
	gx_bs_host_clock = fake_clock;
	alloc_state(MAX_W, MAX_UNITS);

	/* Interleaved launches over one state. */
	static const struct {
		unsigned total, chunk, nw;
	} shapes[] = {
		{ 1, 1, 1 },     { 7, 1, 3 },     { 100, 1, 100 }, { 1000, 1, 37 }, { 1000, 7, 37 },
		{ 999, 64, 5 },  { 5000, 3, 500 }, { 20000, 1, 132 }, { 20000, 13, 528 }, { 64, 1, 200 },
		{ 333, 10, 40 }, { 12345, 5, 264 },
	};
	int pct[] = { 100, 0, 50, 90 };
	int bad = 0, launches = 0;
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
		for (int p = 0; p < 4; p++)
			for (int h = 0; h < 2; h++) {
				unsigned nw = shapes[s].nw > shapes[s].total ? shapes[s].total : shapes[s].nw;
				int b = launch(shapes[s].total, shapes[s].chunk, nw, pct[p], h, 1);
				if (b)
					printf("# interleaved: %u units, chunk %u, %u workers, steal %d %%, hints %d: %d bad\n",
					       shapes[s].total, shapes[s].chunk, nw, pct[p], h, b);
				bad += b;
				launches++;
			}
	GX_CHECK(bad == 0, "runtime: %d interleaved launches (1..20000 units, 1..500 workers, chunks 1..64, "
			   "steal 0..100 %%): every unit once, state clean after each", launches);

	/* Stats: units and chunks add up, every slot is marked done. */
	memset(stats, 0, MAX_W * sizeof(*stats));
	bad = launch(5000, 3, 77, 70, 0, 0);
	unsigned units = 0, chunks = 0;
	for (unsigned i = 0; i < 77; i++) {
		units += stats[i].units;
		chunks += stats[i].chunks;
		bad += stats[i].done != 1 || stats[i].t1 < stats[i].t0;
	}
	GX_CHECK(bad == 0 && units == 5000 && chunks == 1667,
		 "runtime: stats slots add up to the units (%u) and chunks (%u), each marked done", units, chunks);

	/* Hints: launch A gives classes; launch B (same total/chunk) claims the
	 * hinted chunks first, class 15 before 8 before 1. */
	alloc_state(MAX_W, MAX_UNITS);
	bad = launch(3000, 2, 50, 100, 1, 1);
	/* what the next launch must claim first: class 15's list, then 8's,
	 * then 1's, each from its end (the last to finish first) */
	static unsigned want[MAX_UNITS];
	unsigned nwant = 0, rb = hints->gen & 1;
	for (unsigned cl = GX_WORK_CLASSES; cl >= 1; cl--) {
		const unsigned *l = (const unsigned *)((char *)hints + GX_WORK_HINTS_HDR) +
				    ((size_t)rb * GX_WORK_CLASSES + (cl - 1)) * hints_cap;
		for (unsigned j = hints->count[rb][cl]; j-- > 0;)
			want[nwant++] = l[j];
	}
	bad += launch(3000, 2, 50, 100, 1, 1);
	int exact = nwant > 0 && norder >= nwant && !memcmp(order, want, nwant * sizeof(unsigned));
	GX_CHECK(bad == 0 && exact, "runtime: the %u hinted chunks are claimed in list order, each class's list "
				    "from its end", nwant);
	unsigned nh = 0, nc = 1500;
	for (unsigned c = 0; c < nc; c++)
		nh += class_of(c) != 0;
	int sorted = 1;
	for (unsigned i = 0; i < nh && i < norder; i++) {
		if (!class_of(order[i]))
			sorted = 0;
		if (i && class_of(order[i]) > class_of(order[i - 1]))
			sorted = 0;
	}
	GX_CHECK(bad == 0 && sorted, "runtime: the %u hinted chunks run first, heaviest class first", nh);
	/* Another shape: the hints do not apply (key mismatch), still exact. */
	bad = launch(3001, 2, 50, 100, 1, 0);
	int first_hinted = norder && class_of(order[0]) == 15;
	GX_CHECK(bad == 0, "runtime: hints of another shape are ignored (exact: %d, first chunk class %u)", bad,
		 class_of(order[0]));
	(void)first_hinted;

	/* Nobody steals: owners still drain everything. */
	bad = launch(10000, 3, 300, 0, 1, 1);
	GX_CHECK(bad == 0, "runtime: with every steal refused each unit still runs once");

	/* Epoch wrap guard: the host resets before GX_WORK_EPOCH_MAX; a state
	 * near it still works. */
	st->epoch = GX_WORK_EPOCH_MAX - 2;
	bad = launch(500, 1, 20, 100, 0, 0) + launch(500, 1, 20, 100, 0, 0);
	GX_CHECK(bad == 0, "runtime: launches near the epoch limit are exact");

	/* Threads. */
	alloc_state(64, MAX_UNITS);
	bad = 0;
	for (int l = 0; l < 60; l++) {
		unsigned nw = 2 + rnd(30), total = 1 + rnd(MAX_UNITS - 1), chunk = 1 + rnd(8);
		bad += launch_threads(total, chunk, nw);
	}
	GX_CHECK(bad == 0, "runtime: 60 launches with one thread per worker (2..31 threads): every unit once");
	free(state_mem);
	free(hints);
	free(stats);
	return gx_test_done();
}
