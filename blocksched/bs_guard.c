/* bs_guard.c — whether a kernel runs faster as its persistent copy, as its
 * static-only copy or as it is, decided from its own launches
 * (gx_blocksched.h, "the guard").
 *
 * Why: on the H200 the hardware's block scheduler beats every shipped policy
 * on most kernels (bench/results/2026-12-03-gpu-run38.md: +2 % to +111 %);
 * a policy that learns must at least learn when not to schedule. The choice
 * is per kernel and grid (bs_launch.c keeps one guard per function and
 * resets it when the grid changes), from medians, so one slow launch (a
 * context switch, a cold cache) does not decide it. The static-only copy
 * is the third arm because where no stealing pays, a static loop can still
 * beat the hardware (vadd, bench/results/2026-12-03-gpu-run43.md: 3 % faster than native) while the
 * claiming copy, run static, carries its claim path's registers and
 * branches. Pure logic: the launch side times the launches and feeds them
 * in. */
#include <string.h>

#include "blocksched/gx_blocksched.h"

void gx_bs_guard_init(struct gx_bs_guard *g, unsigned arms)
{
	memset(g, 0, sizeof(*g));
	g->arms = arms >= GX_BS_ARMS ? GX_BS_ARMS : 2;
	g->choice = -1;
}

int gx_bs_guard_next(struct gx_bs_guard *g)
{
	if (g->choice >= 0) {
		if (++g->since < GX_BS_GUARD_RECHECK)
			return g->choice;
		gx_bs_guard_init(g, g->arms); /* the kernel's inputs may have changed: look again */
	}
	if (++g->issued > GX_BS_GUARD_EXPLORE) {
		g->choice = GX_BS_ORIG; /* no timings came: the original is the safe side */
		g->since = 0;
		return GX_BS_ORIG;
	}
	/* the arm with the fewest timings; the copies first */
	int best = GX_BS_COPY;
	for (unsigned a = GX_BS_COPY + 1; a < g->arms; a++)
		if (g->n[a] < g->n[best])
			best = (int)a;
	return g->n[GX_BS_ORIG] < g->n[best] ? GX_BS_ORIG : best;
}

static float median(const float *v, unsigned n)
{
	float t[GX_BS_GUARD_SAMPLES];
	memcpy(t, v, n * sizeof(*t));
	for (unsigned i = 1; i < n; i++)
		for (unsigned j = i; j > 0 && t[j - 1] > t[j]; j--) {
			float x = t[j];
			t[j] = t[j - 1], t[j - 1] = x;
		}
	return t[n / 2];
}

int gx_bs_guard_sample(struct gx_bs_guard *g, int arm, float ms)
{
	if (g->choice >= 0 || ms < 0 || arm < 0 || (unsigned)arm >= g->arms || g->n[arm] >= GX_BS_GUARD_SAMPLES)
		return 0;
	g->ms[arm][g->n[arm]++] = ms;
	for (unsigned a = 0; a < g->arms; a++)
		if (g->n[a] < GX_BS_GUARD_SAMPLES)
			return 0;
	for (unsigned a = 0; a < g->arms; a++)
		g->med[a] = median(g->ms[a], GX_BS_GUARD_SAMPLES);
	int best = GX_BS_COPY;
	for (unsigned a = GX_BS_COPY + 1; a < g->arms; a++)
		if (g->med[a] < g->med[best])
			best = (int)a;
	g->choice = g->med[best] * 100 <= g->med[GX_BS_ORIG] * (100 - GX_BS_GUARD_MARGIN_PCT) ? best : GX_BS_ORIG;
	g->since = 0;
	return 1;
}
