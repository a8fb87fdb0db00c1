/* bs_guard.c — whether a kernel runs faster as its persistent copy or as
 * it is, decided from its own launches (gx_blocksched.h, "the guard").
 *
 * Why: on the H200 the hardware's block scheduler beats every shipped policy
 * on most kernels (bench/results/2026-12-03-gpu-run38.md: +2 % to +111 %);
 * a policy that learns must at least learn when not to schedule. The choice
 * is per kernel and grid (bs_launch.c keeps one guard per function and
 * resets it when the grid changes), from medians, so one slow launch (a
 * context switch, a cold cache) does not decide it. Pure logic: the launch
 * side times the launches and feeds them in. */
#include <string.h>

#include "blocksched/gx_blocksched.h"

void gx_bs_guard_init(struct gx_bs_guard *g)
{
	memset(g, 0, sizeof(*g));
	g->choice = -1;
}

int gx_bs_guard_next(struct gx_bs_guard *g)
{
	if (g->choice >= 0) {
		if (++g->since < GX_BS_GUARD_RECHECK)
			return g->choice;
		gx_bs_guard_init(g); /* the kernel's inputs may have changed: look again */
	}
	if (++g->issued > GX_BS_GUARD_EXPLORE) {
		g->choice = 0; /* no timings came: the original is the safe side */
		g->since = 0;
		return 0;
	}
	/* the side with fewer timings; the copy first */
	return g->n[1] <= g->n[0] ? 1 : 0;
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

int gx_bs_guard_sample(struct gx_bs_guard *g, int copy, float ms)
{
	int side = copy ? 1 : 0;
	if (g->choice >= 0 || ms < 0 || g->n[side] >= GX_BS_GUARD_SAMPLES)
		return 0;
	g->ms[side][g->n[side]++] = ms;
	if (g->n[0] < GX_BS_GUARD_SAMPLES || g->n[1] < GX_BS_GUARD_SAMPLES)
		return 0;
	g->med[0] = median(g->ms[0], GX_BS_GUARD_SAMPLES);
	g->med[1] = median(g->ms[1], GX_BS_GUARD_SAMPLES);
	g->choice = g->med[1] * 100 <= g->med[0] * (100 - GX_BS_GUARD_MARGIN_PCT);
	g->since = 0;
	return 1;
}
