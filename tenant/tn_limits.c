/* tn_limits.c — per-tenant limits in the tenant table: a device-memory
 * budget shared by all the tenant's processes, and a share of GPU time
 * (docs/limits.md).
 *
 * Memory, per GPU: the tenant's mem_used of a GPU is the one word every
 * process reserves from there, by compare-and-swap against that GPU's
 * limit (its own, else the tenant's mem_limit), so threads of several
 * processes racing the limit never take it past (no lock, no lost update).
 * Each process also counts its own part (its entry's mem_used): what the
 * survivors give back when it dies (tn_release_locked, under the table's
 * lock, within the 100 ms reaping period). Known race: a process killed
 * between the tenant's CAS and its own entry's add leaks that one
 * allocation's bytes until the tenant's last process leaves (the tenant row
 * is cleared then); the other order would give back bytes never taken.
 *
 * Compute: turns of a period (40 ms) laid out in table order over the live
 * BE tenants of the GPU that have a share, each turn as long as its share
 * of the sum. A launch passes in its own turn while its tenant's queued
 * work (in flight x GPU time per launch) ends before the turn does; in
 * another's turn only when that tenant is idle (nothing in flight, no
 * launch for 500 µs), and then with at most 2 ms of work queued, so the
 * owner finds the GPU soon when it comes back. Without MPS the GPU
 * time-slices between processes; turns keep one tenant's work on it at a
 * time, so wall time of a turn is GPU time of its owner. LC tenants and
 * tenants without a share are never held by this. */
#include <string.h>

#include "common/gx_util.h"
#include "tenant/tn_internal.h"

static uint64_t share_period_ns = 40000000ull, share_idle_ns = 500000ull, share_borrow_ns = 2000000ull;

void gx_tn_share_config(uint64_t period_ns, uint64_t idle_ns, uint64_t borrow_ns)
{
	if (period_ns)
		share_period_ns = period_ns;
	if (idle_ns)
		share_idle_ns = idle_ns;
	if (borrow_ns)
		share_borrow_ns = borrow_ns;
}

static void max_u64(uint64_t *w, uint64_t v)
{
	uint64_t cur = __atomic_load_n(w, __ATOMIC_RELAXED);
	while (v > cur && !__atomic_compare_exchange_n(w, &cur, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* This entry's GPU of its tenant; NULL: not ours any more, or no slot. */
static struct tn_gpu *gpu_of(const struct gx_tn *tn)
{
	return tn && tn_mine(tn) && tn->gpu < TN_GPUS ? &tn->t->tenants[tn->tenant].gpus[tn->gpu] : NULL;
}

static uint64_t limit_of(const struct tn_tenant *tt, const struct tn_gpu *g)
{
	uint64_t lim = LD(g->mem_limit);
	return lim ? lim : LD(tt->mem_limit);
}

/* Bytes now on the GPU's count: the process's part and the tenant's sum. */
static void counted(struct gx_tn *tn, struct tn_gpu *g, uint64_t nu, uint64_t bytes)
{
	struct tn_tenant *tt = &tn->t->tenants[tn->tenant];
	struct tn_proc *p = &tn->t->procs[tn->slot];
	uint64_t mine = __atomic_add_fetch(&p->mem_used, bytes, __ATOMIC_RELAXED);
	uint64_t sum = __atomic_add_fetch(&tt->mem_used, bytes, __ATOMIC_RELAXED);
	max_u64(&g->mem_hiwater, nu);
	max_u64(&tt->mem_hiwater, sum);
	max_u64(&p->mem_hiwater, mine);
}

int gx_tn_mem_reserve(struct gx_tn *tn, uint64_t bytes)
{
	struct tn_gpu *g = gpu_of(tn);
	if (!g)
		return 0;
	struct tn_tenant *tt = &tn->t->tenants[tn->tenant];
	uint64_t used = __atomic_load_n(&g->mem_used, __ATOMIC_RELAXED), nu;
	do {
		uint64_t lim = limit_of(tt, g);
		nu = used + bytes;
		if (nu < used || (lim && nu > lim)) {
			__atomic_add_fetch(&g->mem_denied, 1, __ATOMIC_RELAXED);
			__atomic_add_fetch(&tt->mem_denied, 1, __ATOMIC_RELAXED);
			return -ENOMEM;
		}
	} while (!__atomic_compare_exchange_n(&g->mem_used, &used, nu, true, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED));
	counted(tn, g, nu, bytes);
	return 0;
}

void gx_tn_mem_charge(struct gx_tn *tn, uint64_t bytes)
{
	struct tn_gpu *g = gpu_of(tn);
	if (g && bytes)
		counted(tn, g, __atomic_add_fetch(&g->mem_used, bytes, __ATOMIC_ACQ_REL), bytes);
}

void tn_sub_floor(uint64_t *w, uint64_t n)
{
	uint64_t cur = __atomic_load_n(w, __ATOMIC_RELAXED);
	while (n &&
	       !__atomic_compare_exchange_n(w, &cur, cur > n ? cur - n : 0, true, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		;
}

void gx_tn_mem_release(struct gx_tn *tn, uint64_t bytes)
{
	struct tn_gpu *g = gpu_of(tn);
	if (!g || !bytes)
		return;
	struct tn_tenant *tt = &tn->t->tenants[tn->tenant];
	struct tn_proc *p = &tn->t->procs[tn->slot];
	/* Never more than this process's part: what was reserved before the
	 * entry was taken for dead and joined again was given back then. */
	uint64_t cur = __atomic_load_n(&p->mem_used, __ATOMIC_RELAXED), take;
	do {
		take = bytes < cur ? bytes : cur;
	} while (take && !__atomic_compare_exchange_n(&p->mem_used, &cur, cur - take, true, __ATOMIC_RELAXED,
						      __ATOMIC_RELAXED));
	/* the sum first: it then never reads more than its GPUs hold */
	tn_sub_floor(&tt->mem_used, take);
	tn_sub_floor(&g->mem_used, take);
}

void gx_tn_mem_get(const struct gx_tn *tn, uint64_t *limit, uint64_t *used)
{
	const struct tn_tenant *tt = &tn->t->tenants[tn->tenant];
	*limit = *used = 0;
	if (tn->gpu >= TN_GPUS)
		return;
	const struct tn_gpu *g = &tt->gpus[tn->gpu];
	*limit = limit_of(tt, g);
	*used = LD(g->mem_used);
}

struct share_tenant {
	uint32_t share;
	uint32_t inflight;
	uint64_t last_launch_ns;
	uint64_t queued_ns;
};

bool gx_tn_share_on(const struct gx_tn *tn)
{
	const struct tn_tenant *tt = &tn->t->tenants[tn->tenant];
	return LD(tt->gpu_share) && LD(tt->cls) != GPU_CLASS_LC;
}

uint64_t gx_tn_share_hold(struct gx_tn *tn, uint64_t now)
{
	struct tn_table *tab = tn->t;
	const struct tn_tenant *self = &tab->tenants[tn->tenant];
	if (!LD(self->gpu_share) || LD(self->cls) == GPU_CLASS_LC || !tn_mine(tn))
		return 0;
	struct share_tenant st[GX_TN_MAX_TENANTS];
	uint64_t seen = 0;
	const struct tn_proc *mine = &tab->procs[tn->slot];
	uint32_t hi = LD(tab->hiwater);
	for (uint32_t i = 0; i < hi && i < GX_TN_MAX_PROCS; i++) {
		const struct tn_proc *p = &tab->procs[i];
		if (!LD(p->pid) || memcmp(p->dev, mine->dev, 16))
			continue;
		if (p != mine && now > LD(p->heartbeat_ns) + tn->lease_ns)
			continue;
		uint32_t ti = LD(p->tenant) % GX_TN_MAX_TENANTS;
		const struct tn_tenant *tt = &tab->tenants[ti];
		uint32_t sh = LD(tt->gpu_share);
		if (!sh || LD(tt->cls) == GPU_CLASS_LC)
			continue;
		struct share_tenant *s = &st[ti];
		if (!(seen & (1ull << ti)))
			memset(s, 0, sizeof(*s));
		seen |= 1ull << ti;
		s->share = sh;
		uint32_t in = LD(p->inflight);
		s->inflight += in;
		s->queued_ns += (uint64_t)in * LD(p->kernel_ns);
		uint64_t a = LD(p->last_launch_ns);
		s->last_launch_ns = a > s->last_launch_ns ? a : s->last_launch_ns;
	}
	if (!(seen & (1ull << tn->tenant)) || !(seen & ~(1ull << tn->tenant)))
		return 0; /* alone with a share: nobody to share with */
	uint64_t sum = 0;
	for (uint32_t ti = 0; ti < GX_TN_MAX_TENANTS; ti++)
		if (seen & (1ull << ti))
			sum += st[ti].share;
	/* Whose turn: the same answer in every process (table order, one clock). */
	uint64_t P = share_period_ns, pos = now % P, start = 0, end = 0;
	uint32_t owner = 0;
	for (uint32_t ti = 0; ti < GX_TN_MAX_TENANTS; ti++) {
		if (!(seen & (1ull << ti)))
			continue;
		end = start + P * st[ti].share / sum;
		owner = ti;
		if (pos < end)
			break;
		start = end;
	}
	if (pos >= end)
		end = P; /* rounding: the last turn ends the period */
	const struct share_tenant *me = &st[tn->tenant];
	uint64_t left = end - pos; /* of the current turn */
	if (owner == tn->tenant) {
		/* Our turn: queue only what ends inside it (one launch at least). */
		if (!me->inflight || me->queued_ns < left)
			return 0;
		return left; /* woken earlier by our completions */
	}
	const struct share_tenant *o = &st[owner];
	bool idle = !o->inflight && now > o->last_launch_ns + share_idle_ns;
	if (idle && (!me->inflight || me->queued_ns < share_borrow_ns))
		return 0; /* its turn, lent: it has nothing to do */
	return idle ? share_idle_ns : left;
}

struct limits {
	int64_t mem_limit, gpu_share;
};

static void apply_limits(struct tn_tenant *tt, const void *arg)
{
	const struct limits *a = arg;
	if (a->mem_limit >= 0) { /* every GPU: their own limits go */
		__atomic_store_n(&tt->mem_limit, (uint64_t)a->mem_limit, __ATOMIC_RELAXED);
		for (int i = 0; i < TN_GPUS; i++)
			__atomic_store_n(&tt->gpus[i].mem_limit, 0, __ATOMIC_RELAXED);
	}
	if (a->gpu_share >= 0)
		ST(tt->gpu_share, (uint32_t)a->gpu_share);
}

int gx_tn_set_limits(const char *name, int64_t mem_limit, int64_t gpu_share)
{
	if (!name || gpu_share > 100)
		return gx_err(-EINVAL);
	struct limits a = { mem_limit, gpu_share };
	return gx_err(tn_update_tenant(name, apply_limits, &a));
}

struct gpu_limit {
	uint8_t dev[16];
	uint64_t bytes;
	int *found;
};

static void apply_gpu_limit(struct tn_tenant *tt, const void *arg)
{
	const struct gpu_limit *a = arg;
	for (int i = 0; i < TN_GPUS; i++)
		if (LD(tt->gpus[i].used) && !memcmp(tt->gpus[i].dev, a->dev, 16)) {
			__atomic_store_n(&tt->gpus[i].mem_limit, a->bytes, __ATOMIC_RELAXED);
			*a->found = 1;
		}
}

int gx_tn_set_gpu_mem_limit(const char *name, const uint8_t dev[16], uint64_t bytes)
{
	int found = 0;
	struct gpu_limit a = { .bytes = bytes, .found = &found };
	if (!name || !dev)
		return gx_err(-EINVAL);
	memcpy(a.dev, dev, 16);
	int err = tn_update_tenant(name, apply_gpu_limit, &a);
	return gx_err(err ? err : found ? 0 : -ENODEV);
}
