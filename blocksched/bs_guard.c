/* bs_guard.c — whether a kernel runs faster as its persistent copy, as its
 * static-only copy or as it is, decided from its own launches and judged
 * again on the launches after that decision (gx_blocksched.h, "the guard").
 *
 * Why: on the H200 the hardware's block scheduler beats every shipped policy
 * on most kernels (bench/results/2026-12-03-gpu-run38.md: +2 % to +111 %);
 * a policy that learns must at least learn when not to schedule. The choice
 * is per kernel and grid (bs_launch.c keeps one guard per function and
 * resets it when the grid changes), from medians, so one slow launch (a
 * context switch, a cold cache) does not decide it. The static-only copy
 * is the third arm because where no stealing pays, a static loop can still
 * beat the hardware (vadd, bench/results/2026-12-03-gpu-run43.md: 3 % faster
 * than native) while the claiming copy, run static, carries its claim path's
 * registers and branches.
 *
 * A choice made on ten or fifteen launches can be wrong or go stale (issue
 * 40: kernels nobody tuned for ran 2-15 % slower under the guarded policy),
 * so a settled kernel keeps being timed, cheaply: its first launches after
 * the exploration, then one in GX_BS_GUARD_MONITOR, and on a copy the
 * original now and then. A copy measurably slower than the original is
 * given up at once; a time that moves means the workload changed, and the
 * guard explores again. Exploring itself is bounded: a copy far slower than
 * the original is dropped after two timings. Pure logic: the launch side
 * times the launches and feeds them in. */
#include <string.h>

#include "blocksched/gx_blocksched.h"

void gx_bs_guard_init(struct gx_bs_guard *g, unsigned arms)
{
	memset(g, 0, sizeof(*g));
	g->arms = arms >= GX_BS_ARMS ? GX_BS_ARMS : 2;
	g->choice = -1;
	g->last_choice = -1;
	g->recheck = GX_BS_GUARD_RECHECK;
}

/* A new exploration, keeping what the guard has learned about exploring. */
static void explore_again(struct gx_bs_guard *g)
{
	struct gx_bs_guard k = *g;
	gx_bs_guard_init(g, k.arms);
	g->last_choice = k.choice >= 0 ? k.choice : k.last_choice;
	g->recheck = k.recheck;
	g->explore_launches = k.explore_launches;
	g->explore_extra_ms = k.explore_extra_ms;
	g->explorations = k.explorations;
	g->gave_up = k.gave_up;
	g->untimed = k.untimed;
	g->shifted = k.shifted;
	g->explore_launches_all = k.explore_launches_all;
	g->explore_extra_ms_all = k.explore_extra_ms_all;
	memcpy(g->med, k.med, sizeof(g->med)); /* what was chosen on, for the log */
	memcpy(g->now, k.now, sizeof(g->now));
	g->base = k.base;
	memcpy(g->pend, k.pend, sizeof(g->pend)); /* timings still on their way */
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

/* settled: which launches are timed */
static int settled_next(struct gx_bs_guard *g, int *timed)
{
	g->since++;
	if (g->choice != GX_BS_ORIG && g->since % GX_BS_GUARD_PROBE == 0) {
		*timed = 1;
		g->pend[GX_BS_ORIG]++;
		return GX_BS_ORIG; /* the original's time, to judge the copy against */
	}
	*timed = g->since <= GX_BS_GUARD_SAMPLES || g->since % GX_BS_GUARD_MONITOR == 0;
	g->pend[g->choice] += (unsigned)*timed;
	return g->choice;
}

int gx_bs_guard_next(struct gx_bs_guard *g, int *timed)
{
	*timed = 0;
	if (g->choice >= 0) {
		if (g->since + 1 < g->recheck)
			return settled_next(g, timed);
		explore_again(g); /* the kernel's inputs may have changed: look again */
	}
	if (++g->issued > GX_BS_GUARD_EXPLORE) {
		/* no timings came: the original is the safe side */
		g->choice = GX_BS_ORIG;
		g->since = 0;
		g->explorations++;
		g->untimed++;
		g->explore_launches = g->issued - 1;
		g->explore_launches_all += g->issued - 1;
		g->explore_extra_ms = 0;
		memset(g->n, 0, sizeof(g->n)); /* its monitoring starts empty */
		memset(g->med, 0, sizeof(g->med));
		g->base = 0;
		return settled_next(g, timed);
	}
	/* the arm with the fewest timings (in or on their way); the copies first */
	int best = -1;
	for (unsigned a = GX_BS_COPY; a < g->arms; a++)
		if (!(g->out & (1u << a)) && (best < 0 || g->n[a] + g->pend[a] < g->n[best] + g->pend[best]))
			best = (int)a;
	if (best < 0 || g->n[GX_BS_ORIG] + g->pend[GX_BS_ORIG] < g->n[best] + g->pend[best])
		best = GX_BS_ORIG;
	if (!(g->warm & (1u << best))) {
		g->warm |= 1u << best; /* its first launch: not timed */
		return best;
	}
	*timed = 1;
	g->pend[best]++;
	return best;
}

static float max_of(const float *v, unsigned n)
{
	float m = v[0];
	for (unsigned i = 1; i < n; i++)
		m = v[i] > m ? v[i] : m;
	return m;
}

static float min_of(const float *v, unsigned n)
{
	float m = v[0];
	for (unsigned i = 1; i < n; i++)
		m = v[i] < m ? v[i] : m;
	return m;
}

/* The exploration is over: choose, account for it, and start judging. */
static int settle(struct gx_bs_guard *g)
{
	g->med[GX_BS_ORIG] = median(g->ms[GX_BS_ORIG], g->n[GX_BS_ORIG]);
	int best = -1;
	float extra = 0;
	for (unsigned a = GX_BS_COPY; a < g->arms; a++) {
		if (!g->n[a])
			continue;
		g->med[a] = median(g->ms[a], g->n[a]);
		for (unsigned i = 0; i < g->n[a]; i++)
			extra += g->ms[a][i] - g->med[GX_BS_ORIG];
		if (!(g->out & (1u << a)) && (best < 0 || g->med[a] < g->med[best]))
			best = (int)a;
	}
	g->choice = best >= 0 && g->med[best] * 100 <= g->med[GX_BS_ORIG] * (100 - GX_BS_GUARD_MARGIN_PCT) ? best
													   : GX_BS_ORIG;
	g->since = 0;
	g->explorations++;
	g->explore_launches = g->issued;
	g->explore_extra_ms = extra;
	g->explore_launches_all += g->issued;
	g->explore_extra_ms_all += extra;
	/* an exploration that confirms the last choice: the next one later */
	if (g->choice == g->last_choice && g->recheck < GX_BS_GUARD_RECHECK_MAX)
		g->recheck *= 2;
	else if (g->choice != g->last_choice)
		g->recheck = GX_BS_GUARD_RECHECK;
	/* the chosen arm is judged on its launches from now on; the original's
	 * timings stay as the reference of a copy */
	for (unsigned a = GX_BS_COPY; a < g->arms; a++)
		g->n[a] = 0;
	if (g->choice == GX_BS_ORIG)
		g->n[GX_BS_ORIG] = 0;
	memset(g->ring, 0, sizeof(g->ring));
	g->ring[GX_BS_ORIG] = g->n[GX_BS_ORIG] % GX_BS_GUARD_SAMPLES;
	g->base = 0;
	return GX_BS_EV_SETTLED;
}

static void ring_put(struct gx_bs_guard *g, int arm, float ms)
{
	g->ms[arm][g->ring[arm]] = ms;
	g->ring[arm] = (g->ring[arm] + 1) % GX_BS_GUARD_SAMPLES;
	if (g->n[arm] < GX_BS_GUARD_SAMPLES)
		g->n[arm]++;
}

/* settled: a timing of the chosen arm or of the original */
static int judge(struct gx_bs_guard *g, int arm, float ms)
{
	if (arm != g->choice && arm != GX_BS_ORIG)
		return GX_BS_EV_NONE; /* an exploring launch's, late */
	ring_put(g, arm, ms);
	int c = g->choice;
	if (g->n[c] < 3 || (c != GX_BS_ORIG && !g->n[GX_BS_ORIG]))
		return GX_BS_EV_NONE;
	g->now[0] = median(g->ms[c], g->n[c]);
	g->now[1] = c != GX_BS_ORIG ? median(g->ms[GX_BS_ORIG], g->n[GX_BS_ORIG]) : g->now[0];
	if (c != GX_BS_ORIG && g->now[0] * 100 > g->now[1] * (100 + GX_BS_GUARD_MARGIN_PCT)) {
		/* measurably slower than the original: give the copy up now */
		g->gave_up++;
		g->last_choice = c;
		g->choice = GX_BS_ORIG;
		g->med[GX_BS_ORIG] = g->now[1];
		g->since = 0;
		/* an exploration that chose a copy it then lost with: the
		 * next one later, so that a kernel that fools the exploration
		 * costs less and less */
		if (g->recheck < GX_BS_GUARD_RECHECK_MAX)
			g->recheck *= 2;
		memset(g->n, 0, sizeof(g->n));
		memset(g->ring, 0, sizeof(g->ring));
		g->base = 0;
		return GX_BS_EV_GAVE_UP;
	}
	if (arm != c || g->n[c] < GX_BS_GUARD_SAMPLES)
		return GX_BS_EV_NONE;
	/* The reference is the arm's own median over its first launches after
	 * the choice, not the exploration's: there each launch followed
	 * another arm's (other caches, other clocks), and a difference between
	 * the two would read as a shift at every settle. */
	if (g->base <= 0) {
		g->base = g->now[0];
		return GX_BS_EV_NONE;
	}
	float d = g->now[0] - g->base;
	if ((d < 0 ? -d : d) * 100 > g->base * GX_BS_GUARD_DRIFT_PCT) {
		g->shifted++;
		explore_again(g);
		return GX_BS_EV_SHIFTED;
	}
	return GX_BS_EV_NONE;
}

int gx_bs_guard_skip(struct gx_bs_guard *g, int arm)
{
	if (arm < 0 || (unsigned)arm >= g->arms)
		return GX_BS_ORIG;
	if (g->pend[arm])
		g->pend[arm]--;
	if (g->choice >= 0)
		return arm;
	/* GPU run 100: CuPy queued launches faster than their timing pairs
	 * came back, every exploring launch past the fourth found no free
	 * pair and was counted as a failed timing, and after 64 of them the
	 * guard gave up on kernels whose copies were 18 % faster */
	if (g->issued)
		g->issued--;
	return GX_BS_ORIG;
}

int gx_bs_guard_sample(struct gx_bs_guard *g, int arm, float ms)
{
	if (arm < 0 || (unsigned)arm >= g->arms)
		return GX_BS_EV_NONE;
	if (g->pend[arm])
		g->pend[arm]--;
	if (ms < 0)
		return GX_BS_EV_NONE;
	if (g->choice >= 0)
		return judge(g, arm, ms);
	if ((g->out & (1u << arm)) || g->n[arm] >= GX_BS_GUARD_SAMPLES)
		return GX_BS_EV_NONE;
	g->ms[arm][g->n[arm]++] = ms;
	/* a copy far slower than the original in every timing: no more of it */
	unsigned no = g->n[GX_BS_ORIG];
	for (unsigned a = GX_BS_COPY; a < g->arms; a++)
		if (!(g->out & (1u << a)) && g->n[a] >= GX_BS_GUARD_DROP_N && no >= GX_BS_GUARD_DROP_N &&
		    min_of(g->ms[a], g->n[a]) * 100 > max_of(g->ms[GX_BS_ORIG], no) * (100 + GX_BS_GUARD_DROP_PCT))
			g->out |= 1u << a;
	for (unsigned a = 0; a < g->arms; a++)
		if (!(g->out & (1u << a)) && g->n[a] < GX_BS_GUARD_SAMPLES)
			return GX_BS_EV_NONE;
	return settle(g);
}
