/* test_bs_guard — the guard's decision (blocksched/bs_guard.c): which arm
 * each launch runs while exploring, the choice from medians with the 1 %
 * margin, an outlier not deciding it, the safe side when no timings come,
 * exploring again after GX_BS_GUARD_RECHECK launches, and the third arm
 * (the static-only copy) chosen only when it is the fastest. The launch side's
 * timing (event pairs around the driver's call) is test_bs_launch's. */
#include "blocksched/gx_blocksched.h"
#include "tests/gx_test.h"

/* Explore with the copy taking copy_ms and the original orig_ms per launch
 * (an optional outlier on the copy's first launch); the launches it took. */
static unsigned explore(struct gx_bs_guard *g, float copy_ms, float orig_ms, float first_copy_ms)
{
	unsigned n = 0, copies = 0;
	while (g->choice < 0 && n < 100) {
		int c = gx_bs_guard_next(g);
		n++;
		if (g->choice >= 0)
			break;
		float ms = c ? (copies++ == 0 && first_copy_ms > 0 ? first_copy_ms : copy_ms) : orig_ms;
		gx_bs_guard_sample(g, c, ms);
	}
	return n;
}

/* Three arms from scratch, each arm's launch taking ms[arm] (-1: its timing
 * fails); the launches until a choice (at most max). */
static unsigned explore3(struct gx_bs_guard *g, const float ms[3], unsigned max)
{
	gx_bs_guard_init(g, 3);
	unsigned n = 0;
	while (g->choice < 0 && n < max) {
		int a = gx_bs_guard_next(g);
		n++;
		if (g->choice < 0)
			gx_bs_guard_sample(g, a, ms[a]);
	}
	return n;
}

int main(void)
{
	struct gx_bs_guard g;
	gx_bs_guard_init(&g, 2);
	int a = gx_bs_guard_next(&g);
	gx_bs_guard_sample(&g, a, 1.0f);
	int b = gx_bs_guard_next(&g);
	GX_CHECK(g.choice == -1 && a == 1 && b == 0, "exploring: the copy first, then the side with fewer timings");

	gx_bs_guard_init(&g, 2);
	unsigned n = explore(&g, 0.90f, 1.00f, 0);
	GX_CHECK(g.choice == 1 && n == 2 * GX_BS_GUARD_SAMPLES, "a copy 10 %% faster is chosen after %d + %d launches (%u)",
		 GX_BS_GUARD_SAMPLES, GX_BS_GUARD_SAMPLES, n);
	int all = 1;
	for (int i = 0; i < 100; i++)
		all &= gx_bs_guard_next(&g) == 1;
	GX_CHECK(all, "then every launch runs the copy");

	gx_bs_guard_init(&g, 2);
	explore(&g, 1.08f, 1.00f, 0);
	GX_CHECK(g.choice == 0 && gx_bs_guard_next(&g) == 0, "a copy 8 %% slower: the original runs");

	gx_bs_guard_init(&g, 2);
	explore(&g, 0.995f, 1.00f, 0);
	GX_CHECK(g.choice == 0, "a copy 0.5 %% faster is within the %d %% margin: the original runs",
		 GX_BS_GUARD_MARGIN_PCT);

	gx_bs_guard_init(&g, 2);
	explore(&g, 0.90f, 1.00f, 50.0f);
	GX_CHECK(g.choice == 1 && g.med[1] < 0.91f,
		 "one slow launch of the copy (50 ms) does not decide: median %.3f, the copy runs", (double)g.med[1]);

	gx_bs_guard_init(&g, 2);
	n = 0;
	while (g.choice < 0 && n < 1000) {
		gx_bs_guard_next(&g);
		n++;
	}
	GX_CHECK(g.choice == 0 && n == GX_BS_GUARD_EXPLORE + 1,
		 "no timings (a captured stream, events failing): the original after %u launches", n);
	GX_CHECK(gx_bs_guard_sample(&g, 1, 0.1f) == 0 && g.choice == 0, "a late timing does not change a settled choice");

	gx_bs_guard_init(&g, 2);
	explore(&g, 0.90f, 1.00f, 0);
	unsigned k = 0;
	while (g.choice == 1 && k < 2 * GX_BS_GUARD_RECHECK) {
		gx_bs_guard_next(&g);
		k++;
	}
	GX_CHECK(g.choice == -1 && k == GX_BS_GUARD_RECHECK, "explores again after %u launches (%u)",
		 GX_BS_GUARD_RECHECK, k);
	explore(&g, 1.20f, 1.00f, 0);
	GX_CHECK(g.choice == 0, "and follows a kernel that became slower as a copy");

	GX_CHECK(gx_bs_guard_sample(&g, 1, -1.0f) == 0, "a failed timing (-1) is no sample");
	GX_CHECK(gx_bs_guard_sample(&g, GX_BS_STATIC, 1.0f) == 0 && g.n[GX_BS_STATIC] == 0,
		 "two arms: a timing of a third is no sample");

	/* three arms: the original, the claiming copy, the static copy */
	gx_bs_guard_init(&g, 3);
	int order[3];
	for (int i = 0; i < 3; i++) {
		order[i] = gx_bs_guard_next(&g);
		gx_bs_guard_sample(&g, order[i], 1.0f);
	}
	GX_CHECK(order[0] == GX_BS_COPY && order[1] == GX_BS_STATIC && order[2] == GX_BS_ORIG,
		 "three arms: the copy, the static copy, then the original (%d %d %d)", order[0], order[1], order[2]);
	GX_CHECK(gx_bs_guard_next(&g) == GX_BS_COPY, "then round again from the copy");
	static const struct {
		float ms[3]; /* original, copy, static copy */
		int want;
		const char *what;
	} cases[] = {
		{ { 1.00f, 1.10f, 0.967f }, GX_BS_STATIC, "vadd (run 52): the static copy 3.3 % faster, the copy slower" },
		{ { 1.00f, 0.72f, 0.95f }, GX_BS_COPY, "an imbalanced GEMM: the claiming copy" },
		{ { 1.00f, 0.90f, 0.89f }, GX_BS_STATIC, "both copies faster: the faster of them" },
		{ { 1.00f, 1.05f, 0.995f }, GX_BS_ORIG, "a static copy 0.5 % faster is within the margin" },
		{ { 1.00f, 1.30f, 1.20f }, GX_BS_ORIG, "both copies slower: the original" },
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		n = explore3(&g, cases[c].ms, 100);
		int stays = 1;
		for (int i = 0; i < 50; i++)
			stays &= gx_bs_guard_next(&g) == cases[c].want;
		GX_CHECK(g.choice == cases[c].want && stays && n == 3 * GX_BS_GUARD_SAMPLES,
			 "three arms, %s (chose %d after %u launches)", cases[c].what, g.choice, n);
	}
	/* the static copy's timings fail (-1): no choice on two arms' medians */
	n = explore3(&g, (const float[3]){ 1.0f, 0.5f, -1.0f }, 1000);
	GX_CHECK(g.choice == GX_BS_ORIG && n == GX_BS_GUARD_EXPLORE + 1,
		 "three arms, one never timed: the original after %u launches", n);
	return gx_test_done();
}
