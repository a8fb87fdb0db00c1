/* test_bs_guard — the guard's decisions (blocksched/bs_guard.c) on
 * simulated timings: which arm each launch runs while exploring (the first
 * launch of each arm untimed), the choice from medians with the 1 % margin,
 * an outlier not deciding it, a far slower copy dropped early, the safe
 * side when no timings come; then, settled, the judging on the launches
 * after the exploration: the copy given up as soon as it is slower (its
 * own time growing, or the original's probes getting faster), exploring
 * again when the time shifts, the periodic look with its back-off, what
 * monitoring costs, and the third arm (the static-only copy). The launch
 * side's timing (event pairs around the driver's call) is test_bs_launch's. */
#include "blocksched/gx_blocksched.h"
#include "tests/gx_test.h"

/* Per-arm launch times, possibly changing after launch `at` (to `then`). */
struct sim {
	float ms[GX_BS_ARMS], then[GX_BS_ARMS];
	unsigned long long at, launches;
	unsigned ran[GX_BS_ARMS], timed[GX_BS_ARMS];
	int events[4]; /* GX_BS_EV_* seen */
};

/* One launch: the guard's arm, timed as it asks (timings come back at once). */
static int step(struct gx_bs_guard *g, struct sim *s)
{
	int t = 0, a = gx_bs_guard_next(g, &t);
	const float *ms = s->at && s->launches >= s->at ? s->then : s->ms;
	s->launches++;
	s->ran[a]++;
	if (t) {
		s->timed[a]++;
		s->events[gx_bs_guard_sample(g, a, ms[a])]++;
	}
	return a;
}

/* Launches until the guard settles (at most max); how many. */
static unsigned until_settled(struct gx_bs_guard *g, struct sim *s, unsigned max)
{
	unsigned n = 0;
	while (g->choice < 0 && n < max) {
		step(g, s);
		n++;
	}
	return n;
}

static void sim_init(struct sim *s, float orig, float copy, float stat)
{
	*s = (struct sim){ .ms = { orig, copy, stat } };
}

int main(void)
{
	struct gx_bs_guard g;
	struct sim s;

	/* exploring: the copy first, each arm's first launch untimed */
	gx_bs_guard_init(&g, 2);
	int t0, t1, t2;
	int a0 = gx_bs_guard_next(&g, &t0), a1 = gx_bs_guard_next(&g, &t1);
	gx_bs_guard_sample(&g, a1, 1.0f);
	int a2 = gx_bs_guard_next(&g, &t2);
	GX_CHECK(a0 == GX_BS_COPY && !t0 && a1 == GX_BS_COPY && t1 && a2 == GX_BS_ORIG && !t2,
		 "exploring: the copy first (its first launch untimed), then the original (%d%d %d%d %d%d)", a0, t0, a1,
		 t1, a2, t2);
	/* a timing on its way counts: the next launch goes to the other arm */
	gx_bs_guard_init(&g, 2);
	gx_bs_guard_next(&g, &t0);
	a1 = gx_bs_guard_next(&g, &t1); /* timed copy, timing not in yet */
	gx_bs_guard_next(&g, &t2);	/* the original, untimed */
	int a3 = gx_bs_guard_next(&g, &t0);
	GX_CHECK(a1 == GX_BS_COPY && t1 && a3 == GX_BS_ORIG && t0,
		 "a timing still on its way counts as taken: the next timed launch is the original's");

	gx_bs_guard_init(&g, 2);
	sim_init(&s, 1.00f, 0.90f, 0);
	unsigned n = until_settled(&g, &s, 100);
	GX_CHECK(g.choice == GX_BS_COPY && n == 2 * (GX_BS_GUARD_SAMPLES + 1) && g.explore_launches == n,
		 "a copy 10 %% faster is chosen after %u launches (%d timed + 1 untimed each), and says so (%u)", n,
		 GX_BS_GUARD_SAMPLES, g.explore_launches);
	GX_CHECK(g.explore_extra_ms < -0.49f && g.explore_extra_ms > -0.51f && g.explorations == 1,
		 "what exploring cost: the timed copies -0.5 ms against the original (%.3f)",
		 (double)g.explore_extra_ms);
	/* judged after the exploration: its first launches timed, then one in
	 * GX_BS_GUARD_MONITOR, the original one in GX_BS_GUARD_PROBE */
	sim_init(&s, 1.00f, 0.90f, 0);
	for (int i = 0; i < GX_BS_GUARD_RECHECK - 1; i++)
		step(&g, &s);
	unsigned want_timed = GX_BS_GUARD_SAMPLES + (GX_BS_GUARD_RECHECK - 1) / GX_BS_GUARD_MONITOR -
			      (GX_BS_GUARD_RECHECK - 1) / GX_BS_GUARD_PROBE;
	GX_CHECK(g.choice == GX_BS_COPY && s.ran[GX_BS_ORIG] == (GX_BS_GUARD_RECHECK - 1) / GX_BS_GUARD_PROBE &&
			 s.timed[GX_BS_COPY] <= want_timed + 1 && s.timed[GX_BS_COPY] + 1 >= want_timed,
		 "settled on the copy: %u of %d launches run the original (probes), %u of the copy's are timed",
		 s.ran[GX_BS_ORIG], GX_BS_GUARD_RECHECK - 1, s.timed[GX_BS_COPY]);
	step(&g, &s);
	GX_CHECK(g.choice == -1, "explores again after %d launches", GX_BS_GUARD_RECHECK);
	until_settled(&g, &s, 100);
	GX_CHECK(g.choice == GX_BS_COPY && g.recheck == 2 * GX_BS_GUARD_RECHECK && g.explorations == 2,
		 "an exploration that confirms the choice: the next one after %llu launches", g.recheck);

	gx_bs_guard_init(&g, 2);
	sim_init(&s, 1.00f, 1.03f, 0);
	until_settled(&g, &s, 100);
	GX_CHECK(g.choice == GX_BS_ORIG && step(&g, &s) == GX_BS_ORIG, "a copy 3 %% slower: the original runs");

	gx_bs_guard_init(&g, 2);
	sim_init(&s, 1.00f, 2.60f, 0);
	n = until_settled(&g, &s, 100);
	GX_CHECK(g.choice == GX_BS_ORIG && (g.out & (1u << GX_BS_COPY)) && s.timed[GX_BS_COPY] == GX_BS_GUARD_DROP_N,
		 "a copy 2.6x slower (greedy on the sorted SpMV) is dropped after %u timings (%u launches exploring)",
		 s.timed[GX_BS_COPY], n);
	GX_CHECK(g.explore_extra_ms > 3.19f && g.explore_extra_ms < 3.21f,
		 "and its exploration cost the two timed launches' excess, +3.2 ms (%.3f)", (double)g.explore_extra_ms);

	gx_bs_guard_init(&g, 2);
	sim_init(&s, 1.00f, 0.995f, 0);
	until_settled(&g, &s, 100);
	GX_CHECK(g.choice == GX_BS_ORIG, "a copy 0.5 %% faster is within the %d %% margin: the original runs",
		 GX_BS_GUARD_MARGIN_PCT);

	/* one slow launch of the copy does not decide */
	gx_bs_guard_init(&g, 2);
	int seen = 0;
	while (g.choice < 0) {
		int t, a = gx_bs_guard_next(&g, &t);
		if (t)
			gx_bs_guard_sample(&g, a, a == GX_BS_COPY && !seen++ ? 50.0f : a == GX_BS_COPY ? 0.9f : 1.0f);
	}
	GX_CHECK(g.choice == GX_BS_COPY && g.med[GX_BS_COPY] < 0.91f,
		 "one slow launch of the copy (50 ms) does not decide: median %.3f, the copy runs", (double)g.med[1]);

	gx_bs_guard_init(&g, 2);
	n = 0;
	while (g.choice < 0 && n < 1000) {
		int t;
		gx_bs_guard_next(&g, &t);
		n++;
	}
	GX_CHECK(g.choice == GX_BS_ORIG && n == GX_BS_GUARD_EXPLORE + 1,
		 "no timings (a captured stream, events failing): the original after %u launches", n);
	GX_CHECK(gx_bs_guard_sample(&g, GX_BS_COPY, 0.1f) == GX_BS_EV_NONE && g.choice == GX_BS_ORIG,
		 "a late timing of another arm does not change a settled choice");
	GX_CHECK(gx_bs_guard_sample(&g, GX_BS_COPY, -1.0f) == GX_BS_EV_NONE, "a failed timing (-1) is no sample");
	GX_CHECK(gx_bs_guard_sample(&g, GX_BS_STATIC, 1.0f) == GX_BS_EV_NONE && g.n[GX_BS_STATIC] == 0,
		 "two arms: a timing of a third is no sample");

	/* gives up: the copy chosen at 0.9 ms takes 1.2 ms from the launch
	 * after its exploration on */
	gx_bs_guard_init(&g, 2);
	sim_init(&s, 1.00f, 0.90f, 0);
	until_settled(&g, &s, 100);
	s.at = s.launches;
	s.then[GX_BS_ORIG] = 1.00f, s.then[GX_BS_COPY] = 1.20f;
	unsigned k = 0;
	while (g.choice == GX_BS_COPY && k < 1000) {
		step(&g, &s);
		k++;
	}
	GX_CHECK(g.choice == GX_BS_ORIG && k == 3 && g.gave_up == 1 && s.events[GX_BS_EV_GAVE_UP] == 1,
		 "a copy that becomes 20 %% slower after its exploration is given up after %u of its launches", k);
	k = 0;
	while (k < 2000 && step(&g, &s) == GX_BS_ORIG)
		k++;
	GX_CHECK(k == 2000, "then the original runs (%u launches)", k);

	/* gives up: the original's probes get faster than the copy */
	gx_bs_guard_init(&g, 2);
	sim_init(&s, 1.00f, 0.90f, 0);
	until_settled(&g, &s, 100);
	s.at = s.launches;
	s.then[GX_BS_ORIG] = 0.80f, s.then[GX_BS_COPY] = 0.90f;
	k = 0;
	while (g.choice == GX_BS_COPY && k < 10000) {
		step(&g, &s);
		k++;
	}
	GX_CHECK(g.choice == GX_BS_ORIG && k == 3 * GX_BS_GUARD_PROBE,
		 "an original that became faster than the copy: given up at its third probe (%u launches)", k);

	/* the workload shifts: settled on the original (copy 1.2 ms), the
	 * original grows to 2 ms and the copy to 1.5 ms 100 launches later */
	gx_bs_guard_init(&g, 2);
	sim_init(&s, 1.00f, 1.20f, 0);
	until_settled(&g, &s, 100);
	s.at = s.launches + 100;
	s.then[GX_BS_ORIG] = 2.00f, s.then[GX_BS_COPY] = 1.50f;
	k = 0;
	while (g.choice >= 0 && k < 1000) {
		step(&g, &s);
		k++;
	}
	GX_CHECK(g.choice == -1 && g.shifted == 1 && k > 100 && k <= 100 + 3 * GX_BS_GUARD_MONITOR,
		 "the original's time moves 1.0 -> 2.0 ms: it explores again at the third monitored launch after (%u)",
		 k);
	n = until_settled(&g, &s, 100);
	GX_CHECK(g.choice == GX_BS_COPY && g.explorations == 2 && g.explore_launches == n,
		 "and now runs the copy (1.5 against 2.0 ms), %u launches exploring", n);
	/* launches after the choice 15 % slower than while exploring (caches,
	 * clocks): the reference, not a shift */
	gx_bs_guard_init(&g, 2);
	sim_init(&s, 1.00f, 1.50f, 0);
	until_settled(&g, &s, 100);
	s.at = s.launches;
	s.then[GX_BS_ORIG] = 1.15f, s.then[GX_BS_COPY] = 1.50f;
	for (unsigned i = 0; i < 2000; i++)
		step(&g, &s);
	GX_CHECK(g.choice == GX_BS_ORIG && g.shifted == 0 && g.base > 1.14f,
		 "a kernel 15 %% slower after its exploration than during it: that is its reference, no shift (%.3f)",
		 (double)g.base);
	/* noise within the drift band changes nothing */
	gx_bs_guard_init(&g, 2);
	sim_init(&s, 1.00f, 0.80f, 0);
	until_settled(&g, &s, 100);
	unsigned long long start = s.launches;
	for (unsigned i = 0; i < 3000; i++) {
		s.ms[GX_BS_COPY] = i % 2 ? 0.84f : 0.77f; /* +-5 % */
		step(&g, &s);
	}
	GX_CHECK(g.choice == GX_BS_COPY && g.explorations == 1 && s.launches - start == 3000,
		 "a copy whose time wobbles +-5 %% stays chosen, no exploration (%u)", g.explorations);

	/* three arms: the original, the claiming copy, the static copy */
	gx_bs_guard_init(&g, 3);
	int order[6];
	for (int i = 0; i < 6; i++) {
		int t;
		order[i] = gx_bs_guard_next(&g, &t);
		if (t)
			gx_bs_guard_sample(&g, order[i], 1.0f);
	}
	GX_CHECK(order[0] == GX_BS_COPY && order[1] == GX_BS_COPY && order[2] == GX_BS_STATIC &&
			 order[3] == GX_BS_STATIC && order[4] == GX_BS_ORIG && order[5] == GX_BS_ORIG,
		 "three arms: the copy, the static copy, then the original, each warmed once (%d %d %d %d %d %d)",
		 order[0], order[1], order[2], order[3], order[4], order[5]);
	static const struct {
		float ms[3]; /* original, copy, static copy */
		int want;
		const char *what;
	} cases[] = {
		{ { 1.00f, 1.10f, 0.967f },
		  GX_BS_STATIC,
		  "vadd (run 52): the static copy 3.3 % faster, the copy slower" },
		{ { 1.00f, 0.72f, 0.95f }, GX_BS_COPY, "an imbalanced GEMM: the claiming copy" },
		{ { 1.00f, 0.90f, 0.89f }, GX_BS_STATIC, "both copies faster: the faster of them" },
		{ { 1.00f, 1.04f, 0.995f }, GX_BS_ORIG, "a static copy 0.5 % faster is within the margin" },
		{ { 1.00f, 1.30f, 1.20f }, GX_BS_ORIG, "both copies far slower: the original, both dropped early" },
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		gx_bs_guard_init(&g, 3);
		sim_init(&s, cases[c].ms[0], cases[c].ms[1], cases[c].ms[2]);
		n = until_settled(&g, &s, 100);
		int stays = 1;
		for (int i = 0; i < 50; i++)
			stays &= step(&g, &s) == cases[c].want;
		/* a copy more than GX_BS_GUARD_DROP_PCT % slower leaves early */
		int drops = (cases[c].ms[1] > 1.05f) + (cases[c].ms[2] > 1.05f);
		unsigned full = 3 * (GX_BS_GUARD_SAMPLES + 1);
		GX_CHECK(g.choice == cases[c].want && stays && (drops ? n < full : n == full) &&
				 (unsigned)__builtin_popcount(g.out) == (unsigned)drops,
			 "three arms, %s (chose %d after %u launches, %d dropped)", cases[c].what, g.choice, n, drops);
	}
	/* the static copy's timings fail (-1): no choice on two arms' medians */
	gx_bs_guard_init(&g, 3);
	sim_init(&s, 1.0f, 0.5f, -1.0f);
	n = until_settled(&g, &s, 1000);
	GX_CHECK(g.choice == GX_BS_ORIG && n == GX_BS_GUARD_EXPLORE + 1,
		 "three arms, one never timed: the original after %u launches", n);
	return gx_test_done();
}
