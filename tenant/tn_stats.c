/* tn_stats.c — the hot path: what a process publishes about its launches
 * and what a policy sees of everybody's.
 *
 * Published per process (its own entry, one writer): launches in flight,
 * counts, the latest launch and completion, an estimate of one launch's
 * GPU time, latency quantiles of its recent launches, and — for bursts of
 * launches separated by idle gaps, as a latency-critical service makes them
 * — the period of those bursts and when the next one should start.
 *
 * Why these: a policy protecting LC work cannot preempt what BE tenants
 * already queued, only stop adding to it; to have the GPU idle when LC work
 * arrives it must know how much BE work is queued (in flight x GPU time per
 * launch) and when LC work comes (the burst prediction). The GPU time is
 * the median recent gap between completions of one busy period, not the
 * mean: tenants in other processes share the GPU by time slices, so some
 * gaps include somebody else's work. */
#include <stdlib.h>
#include <string.h>

#include "common/gx_util.h"
#include "tenant/tn_internal.h"

static struct tn_proc *me(struct gx_tn *tn)
{
	return &tn->t->procs[tn->slot];
}

void gx_tn_launched(struct gx_tn *tn, uint64_t now)
{
	if (!tn_mine(tn))
		return;
	struct tn_proc *p = me(tn);
	pthread_mutex_lock(&tn->mu);
	uint32_t in = LD(p->inflight);
	uint64_t last = LD(p->last_launch_ns), done = LD(p->last_complete_ns);
	/* A burst starts when nothing was in flight and the last activity is
	 * older than the gap. Its period: kept when the next burst comes
	 * within a quarter of it, a prediction after three regular ones. */
	if (!in && now - (last > done ? last : done) > tn->burst_gap_ns) {
		uint64_t prev = LD(p->burst_ns), per = LD(p->period_ns);
		if (prev && now > prev) {
			uint64_t iv = now - prev;
			uint64_t dev = per > iv ? per - iv : iv - per;
			if (per && dev < per / 4) {
				tn->regular++;
				per = (per * 7 + iv) / 8;
			} else {
				tn->regular = 0;
				per = iv;
			}
			ST(p->period_ns, per);
		}
		ST(p->burst_ns, now);
		ST(p->next_ns, tn->regular >= 3 && per ? now + per : 0);
	}
	ST(p->inflight, in + 1);
	if (in + 1 > LD(p->max_inflight))
		ST(p->max_inflight, in + 1);
	ST(p->launches, LD(p->launches) + 1);
	ST(p->last_launch_ns, now);
	pthread_mutex_unlock(&tn->mu);
	if (tn->t->tenants[tn->tenant].cls == GPU_CLASS_LC)
		tn_bump(tn->t); /* held BE launches look again */
}

void gx_tn_unlaunched(struct gx_tn *tn, bool went)
{
	if (!tn_mine(tn))
		return;
	struct tn_proc *p = me(tn);
	pthread_mutex_lock(&tn->mu);
	uint32_t in = LD(p->inflight);
	ST(p->inflight, in ? in - 1 : 0);
	if (!went) {
		uint64_t n = LD(p->launches);
		ST(p->launches, n ? n - 1 : 0);
	}
	pthread_mutex_unlock(&tn->mu);
	tn_bump(tn->t); /* a window slot is free again */
}

void gx_tn_untracked(struct gx_tn *tn)
{
	if (!tn_mine(tn))
		return;
	struct tn_proc *p = me(tn);
	__atomic_add_fetch(&p->untracked, 1, __ATOMIC_RELAXED);
}

/* Quantiles over the ring, every 16 completions (a sort of ≤ 512). */
static void quantiles(struct gx_tn *tn, struct tn_proc *p)
{
	uint32_t s[TN_LAT], n = tn->nlat;
	memcpy(s, tn->lat, n * sizeof(s[0]));
	qsort(s, n, sizeof(s[0]), gx_cmp_u32);
	ST(p->p50_ns, (uint64_t)s[n / 2] * 1000);
	ST(p->p99_ns, (uint64_t)s[(n * 99) / 100] * 1000);
	ST(p->p999_ns, (uint64_t)s[(n * 999) / 1000] * 1000);
}

static uint64_t svc_median(const struct gx_tn *tn)
{
	uint64_t s[TN_SVC];
	int n = 0;
	for (int i = 0; i < TN_SVC; i++)
		if (tn->svc[i])
			s[n++] = tn->svc[i];
	if (!n)
		return 0;
	qsort(s, (size_t)n, sizeof(s[0]), gx_cmp_u64);
	return s[n / 2];
}

void gx_tn_completed(struct gx_tn *tn, uint64_t launch_ns, uint64_t done_ns)
{
	if (!tn_mine(tn))
		return;
	struct tn_proc *p = me(tn);
	pthread_mutex_lock(&tn->mu);
	uint32_t in = LD(p->inflight);
	ST(p->inflight, in ? in - 1 : 0);
	ST(p->completions, LD(p->completions) + 1);
	/* Busy time: from the later of its launch and the previous completion
	 * (queued work runs back to back) to this completion. */
	uint64_t prev = LD(p->last_complete_ns), from = prev > launch_ns ? prev : launch_ns;
	if (done_ns > from)
		ST(p->gpu_ns, LD(p->gpu_ns) + (done_ns - from));
	ST(p->last_complete_ns, done_ns);
	uint64_t lat = done_ns > launch_ns ? done_ns - launch_ns : 0;
	tn->lat[tn->lat_pos] = (uint32_t)(lat / 1000 > UINT32_MAX ? UINT32_MAX : lat / 1000);
	tn->lat_pos = (tn->lat_pos + 1) % TN_LAT;
	if (tn->nlat < TN_LAT)
		tn->nlat++;
	if (++tn->since_q >= 16 || tn->nlat < 16) {
		tn->since_q = 0;
		quantiles(tn, p);
	}
	/* GPU time per launch: a quarter of the span of 4 completions in one
	 * busy period (launches queued all along). Concurrent kernels of
	 * several streams count at their throughput, serial ones at their
	 * length; the median of the recent samples: time slices given to other
	 * processes stretch some spans, and a tenant whose kernels differ (a
	 * training step: GEMMs and small element-wise kernels) is misjudged by
	 * its lowest one — a policy draining BE work before LC comes then
	 * counts a queue of GEMMs as a queue of small kernels. */
	memmove(&tn->done[0], &tn->done[1], 4 * sizeof(tn->done[0]));
	tn->done[4] = done_ns;
	if (tn->ndone < 5)
		tn->ndone++;
	if (tn->ndone == 5 && done_ns > tn->done[0]) {
		tn->svc[tn->svc_pos] = (done_ns - tn->done[0]) / 4;
		tn->svc_pos = (tn->svc_pos + 1) % TN_SVC;
		ST(p->kernel_ns, svc_median(tn));
	}
	if (!in || in == 1)
		tn->ndone = 0; /* idle now: the next busy period starts afresh */
	pthread_mutex_unlock(&tn->mu);
	tn_bump(tn->t);
}

void gx_tn_throttled(struct gx_tn *tn, uint64_t ns, int held)
{
	if (!tn_mine(tn))
		return;
	struct tn_proc *p = me(tn);
	__atomic_add_fetch(&p->throttled_ns, ns, __ATOMIC_RELAXED);
	if (held)
		__atomic_add_fetch(&p->held, 1, __ATOMIC_RELAXED);
}

void gx_tn_set_window(struct gx_tn *tn, uint32_t n)
{
	struct tn_tenant *tt = &tn->t->tenants[tn->tenant];
	if (LD(tt->window) != n) {
		ST(tt->window, n);
		tn_bump(tn->t);
	}
}

int gx_tn_class(const struct gx_tn *tn)
{
	return (int)LD(tn->t->tenants[tn->tenant].cls);
}

uint32_t gx_tn_window(const struct gx_tn *tn)
{
	return LD(tn->t->tenants[tn->tenant].window);
}

uint32_t gx_tn_inflight(const struct gx_tn *tn)
{
	return LD(tn->t->procs[tn->slot].inflight);
}

void gx_tn_view(struct gx_tn *tn, uint64_t now, struct gpu_tenant *t, struct gpu_launch *l)
{
	struct tn_table *tab = tn->t;
	const struct tn_proc *mine = me(tn);
	const struct tn_tenant *tt = &tab->tenants[tn->tenant];
	uint64_t lc_seen = 0, be_seen = 0; /* tenants by bit (64 of them) */
	memset(t, 0, sizeof(*t));
	t->id = tn->tenant;
	t->cls = LD(tt->cls);
	t->window = LD(tt->window);
	t->tgid = LD(mine->pid);
	t->cgroup_id = mine->cgroup_id;
	t->launches = LD(tt->launches);
	t->completions = LD(tt->completions);
	t->throttled_ns = LD(tt->throttled_ns);
	l->now_ns = now;
	l->lc_tenants = l->be_tenants = l->lc_inflight = l->be_inflight = 0;
	l->lc_last_launch_ns = l->lc_last_complete_ns = l->lc_p50_ns = l->lc_p99_ns = 0;
	l->lc_next_ns = l->be_queued_ns = l->be_other_last_launch_ns = 0;
	l->be_rank = 0;
	uint32_t hi = LD(tab->hiwater);
	for (uint32_t i = 0; i < hi && i < GX_TN_MAX_PROCS; i++) {
		const struct tn_proc *p = &tab->procs[i];
		if (!LD(p->pid) || memcmp(p->dev, mine->dev, 16))
			continue;
		uint32_t ti = LD(p->tenant) % GX_TN_MAX_TENANTS;
		if (p != mine && now > LD(p->heartbeat_ns) + tn->lease_ns)
			continue; /* silent past its lease: a stopped or dying process */
		uint32_t in = LD(p->inflight);
		if (ti == tn->tenant) {
			t->inflight += in;
			t->nr_procs++;
			t->launches += LD(p->launches);
			t->completions += LD(p->completions);
			t->throttled_ns += LD(p->throttled_ns);
			uint64_t k = LD(p->kernel_ns);
			if (k && (!t->kernel_ns || k < t->kernel_ns))
				t->kernel_ns = k;
			uint64_t a = LD(p->last_launch_ns), b = LD(p->last_complete_ns);
			t->last_launch_ns = a > t->last_launch_ns ? a : t->last_launch_ns;
			t->last_complete_ns = b > t->last_complete_ns ? b : t->last_complete_ns;
		}
		if (LD(tab->tenants[ti].cls) == GPU_CLASS_LC) {
			lc_seen |= 1ull << ti;
			l->lc_inflight += in;
			uint64_t a = LD(p->last_launch_ns), b = LD(p->last_complete_ns);
			uint64_t q50 = LD(p->p50_ns), q99 = LD(p->p99_ns), nx = LD(p->next_ns);
			uint64_t per = LD(p->period_ns);
			l->lc_last_launch_ns = a > l->lc_last_launch_ns ? a : l->lc_last_launch_ns;
			l->lc_last_complete_ns = b > l->lc_last_complete_ns ? b : l->lc_last_complete_ns;
			l->lc_p50_ns = q50 > l->lc_p50_ns ? q50 : l->lc_p50_ns;
			l->lc_p99_ns = q99 > l->lc_p99_ns ? q99 : l->lc_p99_ns;
			/* A prediction counts until a quarter period past due. */
			if (nx && now < nx + per / 4 && (!l->lc_next_ns || nx < l->lc_next_ns))
				l->lc_next_ns = nx;
		} else {
			be_seen |= 1ull << ti;
			l->be_inflight += in;
			l->be_queued_ns += (uint64_t)in * LD(p->kernel_ns);
			uint64_t a = LD(p->last_launch_ns);
			if (ti != tn->tenant && a > l->be_other_last_launch_ns)
				l->be_other_last_launch_ns = a;
		}
	}
	l->lc_tenants = (uint32_t)__builtin_popcountll(lc_seen);
	l->be_tenants = (uint32_t)__builtin_popcountll(be_seen);
	/* The same order in every process (table slots), so that policies
	 * taking turns among BE tenants agree whose turn it is. */
	if (t->cls == GPU_CLASS_BE)
		l->be_rank = (uint32_t)__builtin_popcountll(be_seen & ((1ull << tn->tenant) - 1));
}
