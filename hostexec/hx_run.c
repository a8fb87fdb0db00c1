/* hx_run.c — the executor's runtime: region table, eviction list, handler
 * calls through the devbpf interpreter, kfuncs, and the decision protocol
 * of gpuext.ko (docs/kmod.md) re-done on the events the shim sees.
 *
 * A launch argument pointing into managed memory stands for the device
 * touching that allocation from the pointer on (the shim cannot see page
 * faults): each non-resident page range is "faulted" at its first page and
 * the policy's gpu_prefetch chooses what to bring (BYPASS without a choice:
 * the GPU demand-pages it; DEFAULT: the runtime default, default_pages).
 * Chosen ranges are coalesced and leave through actions.prefetch. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uthash.h>
#include "common/gx_log.h"
#include "common/gx_util.h"
#include "devbpf/gx_bpf.h"
#include "hostexec/hx_internal.h"

struct hx_region {
	struct gpu_region r; /* what policies see (read-only to them) */
	uint64_t alloc_end;
	struct hx_region *prev, *next; /* eviction list; head evicted first */
	bool on_list;
	bool cold; /* evicted with GX_HX_ADV_COLD advice in force */
	UT_hash_handle hh;
};

struct hx_alloc {
	uint64_t va, len;
	bool all_resident; /* every page is resident (a full walk found so); reset by sync/eviction */
};

struct hx_queue {
	uint64_t id;
	struct gpu_queue q;
	UT_hash_handle hh;
};

struct hx_call { /* state of one handler call, for kfuncs and mem_ok */
	struct gx_hx *hx;
	struct hx_policy *pol;
	int slot;
	uint64_t ranges[8][3]; /* addr, len, writable */
	int nranges;
	/* prefetch decisions */
	struct gpu_fault *fault;
	struct hx_region *region;
	int64_t pf_first, pf_outer;
	uint64_t mig[GPU_MIGRATE_MAX][2];
	int nmig;
	bool rejected;
	bool moved;
	/* launch decisions */
	uint64_t hold_us;
	int64_t window;
};

struct gx_hx {
	struct gx_hx_opts o;
	struct hx_policy mem, sched;
	bool has_mem, has_sched;
	struct hx_region *regions; /* by va_start */
	struct hx_region *head, *tail;
	uint32_t nr_resident;
	struct hx_alloc *allocs;
	size_t nallocs, cap_allocs;
	struct hx_queue *queues;
	uint64_t next_id;
	struct hx_region *pinned; /* the region a fault is serving: never its own victim */
	/* coalesced pending prefetch */
	uint64_t pend_va, pend_len;
	int nactions;
	uint64_t touch_ns;
	struct gx_hx_stats st;
	FILE *rec; /* opts.record */
};

#define REC(hx, ...)                                     \
	do {                                             \
		if ((hx)->rec)                           \
			fprintf((hx)->rec, __VA_ARGS__); \
	} while (0)

static void policy_error(struct hx_policy *p, const char *what, int err)
{
	if (p->disabled)
		return;
	if (++p->errors >= GX_HX_MAX_ERRORS) {
		p->disabled = true;
		pr_warn("hostpolicy: %s: disabled after %d errors (last: %s %d); %s\n", p->name, p->errors, what, err,
			p->kind == HX_MEM ? "FIFO applies" : "the runtime's defaults apply (launches pass)");
	}
}

/* A fault inside the policy's code (hx_guard.c): whatever state it left
 * behind, it runs no more. One line. */
static void policy_fault(struct hx_policy *p, const struct hx_prog *prog, const struct hx_guard *g)
{
	p->disabled = true;
	pr_warn("hostpolicy: %s: %s at %p in %s program %s; policy disabled, FIFO applies\n", p->name,
		g->sig == SIGBUS ? "SIGBUS" : "SIGSEGV", g->addr, prog->native ? "native" : "interpreted",
		prog->name);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------ eviction list */

static void list_del(struct gx_hx *hx, struct hx_region *r)
{
	if (!r->on_list)
		return;
	if (r->prev) r->prev->next = r->next; else hx->head = r->next;
	if (r->next) r->next->prev = r->prev; else hx->tail = r->prev;
	r->prev = r->next = NULL;
	r->on_list = false;
	hx->nr_resident--;
}

static void list_add_tail(struct gx_hx *hx, struct hx_region *r)
{
	r->prev = hx->tail;
	r->next = NULL;
	if (hx->tail) hx->tail->next = r; else hx->head = r;
	hx->tail = r;
	r->on_list = true;
	hx->nr_resident++;
}

static void list_add_head(struct gx_hx *hx, struct hx_region *r)
{
	r->next = hx->head;
	r->prev = NULL;
	if (hx->head) hx->head->prev = r; else hx->tail = r;
	hx->head = r;
	r->on_list = true;
	hx->nr_resident++;
}

/* ------------------------------------------------------------ interpreter */

static bool mem_ok(void *user, uint64_t addr, uint32_t size, bool write)
{
	struct hx_call *c = user;
	for (int i = 0; i < c->nranges; i++)
		if (addr >= c->ranges[i][0] && addr + size <= c->ranges[i][0] + c->ranges[i][1])
			return !write || c->ranges[i][2];
	struct hx_policy *p = c->pol;
	for (int i = 0; i < p->nmaps; i++) {
		uint64_t b = (uint64_t)(uintptr_t)p->maps[i].data;
		if (addr >= b && addr + size <= b + p->maps[i].data_len)
			return !write || !p->maps[i].rdonly;
	}
	return false;
}

static uint64_t map_addr(void *user, uint32_t idx, uint32_t off, bool value)
{
	struct hx_call *c = user;
	if (idx >= (uint32_t)c->pol->nmaps)
		return 0;
	return value ? (uint64_t)(uintptr_t)(c->pol->maps[idx].data + off)
		     : (uint64_t)(uintptr_t)&c->pol->maps[idx];
}

static struct hx_map *as_map(struct hx_call *c, uint64_t h)
{
	for (int i = 0; i < c->pol->nmaps; i++)
		if (h == (uint64_t)(uintptr_t)&c->pol->maps[i] && !c->pol->maps[i].internal)
			return &c->pol->maps[i];
	return NULL;
}

static bool key_ok(struct hx_call *c, uint64_t p, uint32_t n)
{
	/* keys/values come from the stack (not visible to mem_ok) or checked memory */
	(void)c;
	return p && n;
}

static uint64_t h_lookup(void *u, uint64_t m, uint64_t k, uint64_t a3, uint64_t a4, uint64_t a5)
{
	(void)a3, (void)a4, (void)a5;
	struct hx_map *map = as_map(u, m);
	if (!map || !key_ok(u, k, map->key_size))
		return 0;
	return (uint64_t)(uintptr_t)hx_map_lookup(map, (const void *)(uintptr_t)k);
}

static uint64_t h_update(void *u, uint64_t m, uint64_t k, uint64_t v, uint64_t fl, uint64_t a5)
{
	(void)a5;
	struct hx_map *map = as_map(u, m);
	if (!map || !key_ok(u, k, map->key_size) || !key_ok(u, v, map->value_size))
		return (uint64_t)-EINVAL;
	return (uint64_t)(int64_t)hx_map_update(map, (const void *)(uintptr_t)k, (const void *)(uintptr_t)v, fl);
}

static uint64_t h_delete(void *u, uint64_t m, uint64_t k, uint64_t a3, uint64_t a4, uint64_t a5)
{
	(void)a3, (void)a4, (void)a5;
	struct hx_map *map = as_map(u, m);
	if (!map || !key_ok(u, k, map->key_size))
		return (uint64_t)-EINVAL;
	return (uint64_t)(int64_t)hx_map_delete(map, (const void *)(uintptr_t)k);
}

static uint64_t h_ktime(void *u, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5)
{
	(void)u, (void)a1, (void)a2, (void)a3, (void)a4, (void)a5;
	return now_ns();
}

static uint64_t h_pidtgid(void *u, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5)
{
	(void)a1, (void)a2, (void)a3, (void)a4, (void)a5;
	struct hx_call *c = u;
	return ((uint64_t)c->hx->o.tgid << 32) | (uint32_t)gettid();
}

/* Kfunc misuse: -EINVAL to the policy and one error counted. */
static uint64_t misuse(struct hx_call *c)
{
	policy_error(c->pol, "kfunc misuse", -EINVAL);
	return (uint64_t)-EINVAL;
}

static uint64_t k_move(void *u, uint64_t ctx, uint64_t rp, bool head)
{
	struct hx_call *c = u;
	(void)ctx;
	if (c->slot > 2)
		return misuse(c);
	/* Policies only hold the region they were given. */
	struct hx_region *r = c->region && rp == (uint64_t)(uintptr_t)&c->region->r ? c->region : NULL;
	if (!r || !r->on_list)
		return misuse(c);
	list_del(c->hx, r);
	if (head)
		list_add_head(c->hx, r);
	else
		list_add_tail(c->hx, r);
	c->moved = true;
	return 0;
}

static uint64_t k_head(void *u, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5)
{
	(void)a3, (void)a4, (void)a5;
	return k_move(u, a1, a2, true);
}

static uint64_t k_tail(void *u, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5)
{
	(void)a3, (void)a4, (void)a5;
	return k_move(u, a1, a2, false);
}

static uint64_t k_setpf(void *u, uint64_t ctx, uint64_t first, uint64_t outer, uint64_t a4, uint64_t a5)
{
	(void)ctx, (void)a4, (void)a5;
	struct hx_call *c = u;
	first = (uint32_t)first;
	outer = (uint32_t)outer;
	if (c->slot != 3 || !c->fault || first >= outer || first < c->fault->max_first ||
	    outer > c->fault->max_outer)
		return misuse(c);
	c->pf_first = (int64_t)first;
	c->pf_outer = (int64_t)outer;
	return 0;
}

static uint64_t k_migrate(void *u, uint64_t ctx, uint64_t va, uint64_t len, uint64_t a4, uint64_t a5)
{
	(void)ctx, (void)a4, (void)a5;
	struct hx_call *c = u;
	if ((c->slot != 1 && c->slot != 3) || !len || len > GPU_MIGRATE_MAX_LEN || va + len < va)
		return misuse(c);
	if (c->nmig == GPU_MIGRATE_MAX)
		return (uint64_t)-ENOSPC;
	c->mig[c->nmig][0] = va;
	c->mig[c->nmig][1] = len;
	c->nmig++;
	return 0;
}

static struct gpu_queue *queue_arg(struct hx_call *c, uint64_t qp)
{
	for (int i = 0; i < c->nranges; i++)
		if (c->ranges[i][0] == qp && c->ranges[i][1] == sizeof(struct gpu_queue))
			return (struct gpu_queue *)(uintptr_t)qp;
	return NULL;
}

static uint64_t k_setattr(void *u, uint64_t ctx, uint64_t qp, uint64_t attr, uint64_t val, uint64_t a5)
{
	(void)ctx, (void)a5;
	struct hx_call *c = u;
	struct gpu_queue *q = queue_arg(c, qp);
	if (!q || c->slot != 0)
		return misuse(c);
	switch ((uint32_t)attr) {
	case GPU_ATTR_PRIORITY:
		if (val > GPU_PRIO_MAX) return misuse(c);
		q->priority = (int32_t)val;
		break;
	case GPU_ATTR_TIMESLICE_US:
		if (val < GPU_TIMESLICE_MIN_US || val > GPU_TIMESLICE_MAX_US) return misuse(c);
		q->timeslice_us = (uint32_t)val;
		break;
	case GPU_ATTR_INTERLEAVE:
		if (val > GPU_IL_HIGH) return misuse(c);
		q->interleave = (uint32_t)val;
		break;
	default:
		return misuse(c);
	}
	if (c->hx->o.act.queue_attr)
		c->hx->o.act.queue_attr(c->hx->o.act.user, q->id, (uint32_t)attr, val);
	return 0;
}

static uint64_t k_reject(void *u, uint64_t ctx, uint64_t qp, uint64_t a3, uint64_t a4, uint64_t a5)
{
	(void)ctx, (void)a3, (void)a4, (void)a5;
	struct hx_call *c = u;
	if (!queue_arg(c, qp) || c->slot != 0)
		return misuse(c);
	c->rejected = true;
	return 0;
}

/* The pointer a handler was given, as argument `i` of this call (its size). */
static bool is_arg(struct hx_call *c, uint64_t p, size_t size)
{
	for (int i = 1; i < c->nranges; i++)
		if (c->ranges[i][0] == p && c->ranges[i][1] == size)
			return true;
	return false;
}

static uint64_t k_hold(void *u, uint64_t ctx, uint64_t lp, uint64_t us, uint64_t a4, uint64_t a5)
{
	(void)ctx, (void)a4, (void)a5;
	struct hx_call *c = u;
	if (c->slot != 2 || !is_arg(c, lp, sizeof(struct gpu_launch)) || us > GPU_HOLD_MAX_US)
		return misuse(c);
	c->hold_us = us;
	return 0;
}

static uint64_t k_window(void *u, uint64_t ctx, uint64_t tp, uint64_t n, uint64_t a4, uint64_t a5)
{
	(void)ctx, (void)a4, (void)a5;
	struct hx_call *c = u;
	if (c->slot != 2 || !is_arg(c, tp, sizeof(struct gpu_tenant)) || n > UINT32_MAX)
		return misuse(c);
	c->window = (int64_t)n;
	return 0;
}

static const struct gx_bpf_helper_entry helpers[] = {
	{HX_H_LOOKUP, h_lookup}, {HX_H_UPDATE, h_update}, {HX_H_DELETE, h_delete},
	{HX_H_KTIME, h_ktime}, {HX_H_PIDTGID, h_pidtgid},
	{HX_KF_MOVE_HEAD, k_head}, {HX_KF_MOVE_TAIL, k_tail}, {HX_KF_SET_PREFETCH, k_setpf},
	{HX_KF_MIGRATE, k_migrate}, {HX_KF_SET_ATTR, k_setattr}, {HX_KF_REJECT, k_reject},
	{HX_KF_HOLD, k_hold}, {HX_KF_WINDOW, k_window},
};

/* The handler itself, under the fault guard: -EFAULT with g->sig set when
 * it faulted (only g is touched after the jump back). */
static int run_guarded(struct hx_policy *p, struct hx_prog *prog, uint64_t *args, struct hx_call *c,
		       const struct gx_bpf_interp_opts *o, uint64_t *ret, struct hx_guard *g)
{
	if (sigsetjmp(g->jb, 0))
		return -EFAULT;
	hx_guard_enter(g);
	int err = 0;
	if (prog->native)
		*ret = hx_native_run(p, prog, args, c);
	else
		err = gx_bpf_interp_run(prog->insns, prog->cnt, (uint64_t)(uintptr_t)args, o, ret);
	hx_guard_leave(g);
	return err;
}

/* Run handler `slot` of `p` with args a0..a2 (pointers, each readable for
 * its size). Returns the decision, or -1 on a policy error / no handler. */
static int call(struct gx_hx *hx, struct hx_policy *p, int slot, struct hx_call *c, void *a0, size_t s0,
		void *a1, size_t s1, void *a2, size_t s2)
{
	struct hx_prog *prog = p->handler[slot];
	if (!prog || p->disabled)
		return -1;
	uint64_t args[3] = {(uint64_t)(uintptr_t)a0, (uint64_t)(uintptr_t)a1, (uint64_t)(uintptr_t)a2};
	c->hx = hx;
	c->pol = p;
	c->slot = slot;
	c->nranges = 0;
	c->ranges[c->nranges][0] = (uint64_t)(uintptr_t)args;
	c->ranges[c->nranges][1] = sizeof(args);
	c->ranges[c->nranges++][2] = 0;
	void *a[3] = {a0, a1, a2};
	size_t s[3] = {s0, s1, s2};
	for (int i = 0; i < 3; i++)
		if (a[i]) {
			c->ranges[c->nranges][0] = (uint64_t)(uintptr_t)a[i];
			c->ranges[c->nranges][1] = s[i];
			c->ranges[c->nranges++][2] = 0;
		}
	struct gx_bpf_interp_opts o = {
		.sz = sizeof(o), .helpers = helpers, .nr_helpers = sizeof(helpers) / sizeof(helpers[0]),
		.user = c, .map_addr = map_addr, .mem_ok = mem_ok, .max_steps = HX_STEP_BUDGET,
	};
	uint64_t ret = 0;
	struct hx_guard g;
	hx->st.calls++;
	hx->st.native_calls += prog->native != NULL;
	int err = run_guarded(p, prog, args, c, &o, &ret, &g);
	if (g.sig) {
		policy_fault(p, prog, &g);
		return -1;
	}
	for (int i = 0; i < p->nmaps; i++)
		if (p->maps[i].tombs)
			hx_map_maintain(&p->maps[i]);
	if (err) {
		policy_error(p, "run-time fault", err);
		return -1;
	}
	if (ret != GPU_DEFAULT && ret != GPU_BYPASS) {
		policy_error(p, "bad return value", (int)ret);
		return -1;
	}
	return (int)ret;
}

/* ------------------------------------------------------------------ API */

struct gx_hx *gx_hx__new(const struct gx_hx_opts *opts)
{
	struct gx_hx *hx = calloc(1, sizeof(*hx));
	if (!hx)
		return NULL;
	if (gx_opts_copy(&hx->o, sizeof(hx->o), opts, opts ? opts->sz : 0)) {
		free(hx);
		errno = EINVAL;
		return NULL;
	}
	hx->o.sz = sizeof(hx->o);
	if (!hx->o.capacity)
		hx->o.capacity = 1u << 20;
	if (!hx->o.tgid)
		hx->o.tgid = (uint32_t)getpid();
	if (!hx->o.default_pages || hx->o.default_pages > GPU_REGION_PAGES)
		hx->o.default_pages = 16;
	if (!hx->o.max_walk)
		hx->o.max_walk = 4ull << 30;
	hx->next_id = 1;
	if (hx->o.record) {
		hx->rec = fopen(hx->o.record, "we");
		if (hx->rec) {
			setvbuf(hx->rec, NULL, _IOFBF, 1 << 16);
			fprintf(hx->rec, "# gpuext hostpolicy event stream v1 (tgid %u)\n", hx->o.tgid);
		} else {
			pr_warn("hostpolicy: cannot record events to %s: %s", hx->o.record, strerror(errno));
		}
		hx->o.record = NULL; /* the caller's string need not outlive this call */
	}
	return hx;
}

void gx_hx__free(struct gx_hx *hx)
{
	if (!hx)
		return;
	if (hx->rec)
		fclose(hx->rec);
	struct hx_region *r, *t;
	HASH_ITER(hh, hx->regions, r, t) {
		HASH_DEL(hx->regions, r);
		free(r);
	}
	struct hx_queue *q, *qt;
	HASH_ITER(hh, hx->queues, q, qt) {
		HASH_DEL(hx->queues, q);
		free(q);
	}
	if (hx->has_mem)
		hx_policy_free(&hx->mem);
	if (hx->has_sched)
		hx_policy_free(&hx->sched);
	free(hx->allocs);
	free(hx);
}

int gx_hx__load(struct gx_hx *hx, const char *path, const char *knobs)
{
	struct hx_policy p;
	char why[256];
	memset(&p, 0, sizeof(p));
	int err = hx_policy_load(&p, path, knobs, hx->o.shm_maps != 0, why, sizeof(why));
	if (!err && ((p.kind == HX_MEM && hx->has_mem) || (p.kind == HX_SCHED && hx->has_sched))) {
		snprintf(why, sizeof(why), "a %s policy is already attached", p.kind == HX_MEM ? "memory" : "scheduling");
		hx_policy_free(&p);
		err = -EEXIST;
	}
	if (err) {
		pr_warn("hostpolicy: %s: refused: %s\n", path, why);
		return err;
	}
	if (hx->o.native) {
		/* No JIT library here (e.g. no libLLVM-19): one line per
		 * process; a program the JIT cannot translate: one per policy. */
		static bool said_nolib;
		char nwhy[300] = "";
		int nerr = hx_native_compile(&p, helpers, sizeof(helpers) / sizeof(helpers[0]), nwhy, sizeof(nwhy));
		if (nerr == -ENOENT) {
			if (!said_nolib)
				pr_info("hostpolicy: native code unavailable (%s); policies interpreted\n", nwhy);
			said_nolib = true;
		} else if (nerr) {
			pr_info("hostpolicy: %s: native code unavailable (%s); interpreted\n", path, nwhy);
		}
	}
	/* before the first call: a fault in it disables the policy (hx_guard.c) */
	int gerr = hx_guard_install();
	if (gerr)
		pr_warn("hostpolicy: no fault guard (%s): a faulting policy would end the process\n", strerror(-gerr));
	struct hx_policy *dst = p.kind == HX_MEM ? &hx->mem : &hx->sched;
	*dst = p;
	hx_native_rebind(dst);
	for (int s = 0; s < HX_MAX_HANDLERS; s++) /* handlers point into progs[] */
		if (p.handler[s])
			dst->handler[s] = &dst->progs[p.handler[s] - p.progs];
	if (p.kind == HX_MEM)
		hx->has_mem = true;
	else
		hx->has_sched = true;
	pr_info("hostpolicy: %s: attached %s policy '%s' (%s)\n", path, p.kind == HX_MEM ? "memory" : "scheduling", p.name,
		p.native ? "native" : "interpreted");
	return 0;
}

const char *gx_hx__mem_policy(const struct gx_hx *hx) { return hx->has_mem ? hx->mem.name : ""; }
const char *gx_hx__sched_policy(const struct gx_hx *hx) { return hx->has_sched ? hx->sched.name : ""; }
int gx_hx__mem_enabled(const struct gx_hx *hx) { return hx->has_mem && !hx->mem.disabled; }

int64_t gx_hx__global(const struct gx_hx *hx, const char *name)
{
	const struct hx_policy *ps[2] = {hx->has_mem ? &hx->mem : NULL, hx->has_sched ? &hx->sched : NULL};
	for (int i = 0; i < 2; i++) {
		uint32_t sz = 0;
		void *v = ps[i] ? hx_policy_global(ps[i], name, &sz) : NULL;
		if (v && sz == 8)
			return *(int64_t *)v;
		if (v && sz == 4)
			return *(uint32_t *)v;
	}
	return -1;
}

/* Allocations are kept sorted by address (binary search: every word of
 * every launch argument is looked up). */
static struct hx_alloc *alloc_of(struct gx_hx *hx, uint64_t va)
{
	size_t lo = 0, hi = hx->nallocs;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		struct hx_alloc *a = &hx->allocs[mid];
		if (va < a->va)
			hi = mid;
		else if (va >= a->va + a->len)
			lo = mid + 1;
		else
			return a;
	}
	return NULL;
}

int gx_hx__alloc(struct gx_hx *hx, uint64_t va, uint64_t len)
{
	REC(hx, "alloc %#llx %llu\n", (unsigned long long)va, (unsigned long long)len);
	if (!len || va + len < va || alloc_of(hx, va) || alloc_of(hx, va + len - 1))
		return -EINVAL;
	if (hx->nallocs == hx->cap_allocs) {
		size_t nc = hx->cap_allocs ? hx->cap_allocs * 2 : 16;
		struct hx_alloc *na = realloc(hx->allocs, nc * sizeof(*na));
		if (!na)
			return -ENOMEM;
		hx->allocs = na;
		hx->cap_allocs = nc;
	}
	size_t at = 0;
	while (at < hx->nallocs && hx->allocs[at].va < va) /* rare event: linear is fine */
		at++;
	memmove(&hx->allocs[at + 1], &hx->allocs[at], (hx->nallocs - at) * sizeof(*hx->allocs));
	hx->allocs[at] = (struct hx_alloc){va, len, false};
	hx->nallocs++;
	for (uint64_t b = va & ~(GPU_REGION_SIZE - 1); b < va + len; b += GPU_REGION_SIZE) {
		struct hx_region *r = NULL;
		HASH_FIND(hh, hx->regions, &b, sizeof(b), r);
		if (r)
			continue; /* shared with a neighbouring small allocation */
		r = calloc(1, sizeof(*r));
		if (!r)
			return -ENOMEM;
		r->r.id = hx->next_id++;
		r->r.va_start = b;
		r->r.tgid = hx->o.tgid;
		r->r.space_id = 1;
		r->alloc_end = va + len;
		HASH_ADD(hh, hx->regions, r.va_start, sizeof(uint64_t), r);
	}
	return 0;
}

int gx_hx__free_range(struct gx_hx *hx, uint64_t va)
{
	struct hx_alloc *a = alloc_of(hx, va);
	if (!a || a->va != va)
		return -ENOENT;
	REC(hx, "free %#llx\n", (unsigned long long)va);
	uint64_t lo = a->va, hi = a->va + a->len;
	size_t at = (size_t)(a - hx->allocs);
	memmove(a, a + 1, (hx->nallocs - at - 1) * sizeof(*a));
	hx->nallocs--;
	for (uint64_t b = lo & ~(GPU_REGION_SIZE - 1); b < hi; b += GPU_REGION_SIZE) {
		struct hx_region *r = NULL;
		HASH_FIND(hh, hx->regions, &b, sizeof(b), r);
		bool shared = alloc_of(hx, b) || alloc_of(hx, b + GPU_REGION_SIZE - 1);
		if (!r || shared)
			continue;
		list_del(hx, r);
		HASH_DEL(hx->regions, r);
		free(r);
	}
	return 0;
}

static void flush(struct gx_hx *hx)
{
	if (!hx->pend_len)
		return;
	/* A range below min_prefetch is left to demand paging (it costs the
	 * caller an API call for what a fault brings as fast), unless it is
	 * all of a small allocation. */
	bool whole = false;
	for (size_t i = 0; i < hx->nallocs && !whole && hx->pend_len < hx->o.min_prefetch; i++)
		whole = hx->pend_va <= hx->allocs[i].va &&
			hx->pend_va + hx->pend_len >= hx->allocs[i].va + hx->allocs[i].len;
	if (hx->pend_len < hx->o.min_prefetch && !whole) {
		hx->st.small++;
		hx->st.small_bytes += hx->pend_len;
	} else {
		if (hx->o.act.prefetch)
			hx->o.act.prefetch(hx->o.act.user, hx->pend_va, hx->pend_len, 0);
		hx->nactions++;
		hx->st.prefetches++;
		hx->st.prefetch_bytes += hx->pend_len;
	}
	hx->pend_len = 0;
}

static void want(struct gx_hx *hx, uint64_t va, uint64_t len)
{
	if (hx->pend_len && hx->pend_va + hx->pend_len == va) {
		hx->pend_len += len;
		if (hx->o.max_coalesce && hx->pend_len >= hx->o.max_coalesce)
			flush(hx);
		return;
	}
	flush(hx);
	hx->pend_va = va;
	hx->pend_len = len;
}

static uint32_t popcount_mask(const struct gpu_region *r)
{
	uint32_t n = 0;
	for (int i = 0; i < (int)(GPU_REGION_PAGES / 64); i++)
		n += (uint32_t)__builtin_popcountll(r->resident_mask[i]);
	return n;
}

/* Bits [lo, hi) of word w (0 <= lo < hi <= 64). */
static uint64_t bits(uint32_t lo, uint32_t hi)
{
	uint64_t up = hi >= 64 ? ~0ull : (1ull << hi) - 1;
	return up & ~((1ull << lo) - 1);
}

/* First page in [from, to) whose residency is `want`, or `to`. Word at a
 * time: the walk runs before every launch. */
static uint32_t find_page(const struct hx_region *r, uint32_t from, uint32_t to, bool want)
{
	while (from < to) {
		uint32_t w = from / 64, end = (w + 1) * 64 < to ? (w + 1) * 64 : to;
		uint64_t m = r->r.resident_mask[w];
		if (!want)
			m = ~m;
		m &= bits(from % 64, end - w * 64);
		if (m)
			return w * 64 + (uint32_t)__builtin_ctzll(m);
		from = end;
	}
	return to;
}

static uint32_t region_pages(const struct hx_region *r)
{
	uint64_t end = r->alloc_end;
	uint64_t lim = r->r.va_start + GPU_REGION_SIZE;
	if (end >= lim)
		return GPU_REGION_PAGES;
	return (uint32_t)((end - r->r.va_start + GPU_PAGE_SIZE - 1) >> GPU_PAGE_SHIFT);
}

static void evict_one(struct gx_hx *hx)
{
	struct hx_region *victim = hx->head;
	struct hx_policy *p = hx->has_mem ? &hx->mem : NULL;
	for (uint32_t attempt = 0; p && victim && attempt < 8; attempt++) {
		struct gpu_mem_ctx mc = {.event = GPU_EV_EVICT, .pressure = GPU_PRESSURE_EVICTING,
					 .nr_resident = hx->nr_resident, .capacity = hx->o.capacity,
					 .attempt = attempt, .tgid = hx->o.tgid};
		struct hx_call c = {.region = victim};
		int d = call(hx, p, 2, &c, &mc, sizeof(mc), &victim->r, sizeof(victim->r), NULL, 0);
		if (d != GPU_BYPASS || hx->head == victim)
			break;
		victim = hx->head;
	}
	victim = victim ? victim : hx->head;
	if (victim && victim == hx->pinned)
		victim = victim->next;
	if (!victim)
		return;
	list_del(hx, victim);
	hx->st.evictions++;
	for (size_t i = 0; i < hx->nallocs; i++)
		hx->allocs[i].all_resident = false;
	memset(victim->r.resident_mask, 0, sizeof(victim->r.resident_mask));
	victim->r.resident_pages = 0;
	uint64_t len = (uint64_t)region_pages(victim) << GPU_PAGE_SHIFT;
	if (hx->o.act.advise && !victim->cold) {
		hx->o.act.advise(hx->o.act.user, victim->r.va_start, len, GX_HX_ADV_COLD);
		hx->st.advice++;
	}
	victim->cold = true;
	if (hx->o.act.prefetch)
		hx->o.act.prefetch(hx->o.act.user, victim->r.va_start, len, 1);
}

/* Pages [first, outer) of r became resident; activate r if new. */
static void make_resident(struct gx_hx *hx, struct hx_region *r, uint32_t first, uint32_t outer)
{
	if (outer > GPU_REGION_PAGES)
		outer = GPU_REGION_PAGES;
	for (uint32_t pg = first; pg < outer;) {
		uint32_t w = pg / 64, end = (w + 1) * 64 < outer ? (w + 1) * 64 : outer;
		r->r.resident_mask[w] |= bits(pg % 64, end - w * 64);
		pg = end;
	}
	r->r.resident_pages = popcount_mask(&r->r);
	if (r->on_list)
		return;
	list_add_tail(hx, r);
	r->r.space_resident = hx->nr_resident;
	if (hx->has_mem) {
		struct gpu_mem_ctx mc = {.event = GPU_EV_ACTIVATE, .nr_resident = hx->nr_resident,
					 .capacity = hx->o.capacity, .tgid = hx->o.tgid};
		struct hx_call c = {.region = r};
		call(hx, &hx->mem, 0, &c, &mc, sizeof(mc), &r->r, sizeof(r->r), NULL, 0);
	}
	while (hx->nr_resident > hx->o.capacity && hx->nr_resident > 1)
		evict_one(hx);
}


static void apply_range(struct gx_hx *hx, uint64_t va, uint64_t len, bool act)
{
	/* Make [va, va+len) resident in the table (managed parts only). */
	uint64_t end = va + len;
	for (uint64_t b = va & ~(GPU_REGION_SIZE - 1); b < end; b += GPU_REGION_SIZE) {
		struct hx_region *r = NULL;
		HASH_FIND(hh, hx->regions, &b, sizeof(b), r);
		if (!r)
			continue;
		uint64_t lo = va > b ? va : b, hi = end < b + GPU_REGION_SIZE ? end : b + GPU_REGION_SIZE;
		uint32_t f = (uint32_t)((lo - b) >> GPU_PAGE_SHIFT);
		uint32_t o = (uint32_t)((hi - b + GPU_PAGE_SIZE - 1) >> GPU_PAGE_SHIFT);
		uint32_t rp = region_pages(r);
		if (o > rp)
			o = rp;
		if (f >= o)
			continue;
		if (act && r->cold) { /* a policy wants it back: advice off first */
			if (hx->o.act.advise) {
				flush(hx); /* keep advice and prefetch in order */
				hx->o.act.advise(hx->o.act.user, b, (uint64_t)rp << GPU_PAGE_SHIFT, GX_HX_ADV_HOT);
				hx->st.advice++;
			}
			r->cold = false;
		}
		/* Only what is not resident yet is asked for: runs of absent pages. */
		for (uint32_t pg = f; act && pg < o;) {
			pg = r->r.resident_pages ? find_page(r, pg, o, false) : pg;
			if (pg >= o)
				break;
			uint32_t e = r->r.resident_pages ? find_page(r, pg, o, true) : o;
			want(hx, b + ((uint64_t)pg << GPU_PAGE_SHIFT), (uint64_t)(e - pg) << GPU_PAGE_SHIFT);
			pg = e;
		}
		make_resident(hx, r, f, o);
	}
}

static void fault(struct gx_hx *hx, struct hx_region *r, uint32_t pg)
{
	uint32_t rp = region_pages(r);
	struct gpu_fault f = {.va = r->r.va_start + ((uint64_t)pg << GPU_PAGE_SHIFT), .page = pg,
			      .max_first = 0, .max_outer = rp, .default_first = pg,
			      .default_outer = pg + hx->o.default_pages < rp ? pg + hx->o.default_pages : rp};
	struct hx_call c = {.region = r, .fault = &f, .pf_first = -1};
	hx->pinned = r;
	hx->st.faults++;
	int d = -1;
	if (hx->has_mem) {
		r->r.space_resident = hx->nr_resident;
		struct gpu_mem_ctx mc = {.event = GPU_EV_PREFETCH, .nr_resident = hx->nr_resident,
					 .capacity = hx->o.capacity, .tgid = hx->o.tgid};
		d = call(hx, &hx->mem, 3, &c, &mc, sizeof(mc), &r->r, sizeof(r->r), &f, sizeof(f));
	}
	uint32_t first = f.default_first, outer = f.default_outer;
	bool act = false;
	if (d >= 0 && c.pf_first >= 0) {
		first = (uint32_t)c.pf_first;
		outer = (uint32_t)c.pf_outer;
		act = true;
	}
	/* The faulting page itself always comes in (demand paging). */
	if (pg < first || pg >= outer) {
		make_resident(hx, r, pg, pg + 1);
	}
	if (act)
		apply_range(hx, r->r.va_start + ((uint64_t)first << GPU_PAGE_SHIFT),
			    (uint64_t)(outer - first) << GPU_PAGE_SHIFT, true);
	else
		make_resident(hx, r, first, outer);
	for (int i = 0; d >= 0 && i < c.nmig; i++) {
		/* only managed memory of this process; others are ignored like
		 * unmapped ranges in the kernel */
		apply_range(hx, c.mig[i][0], c.mig[i][1], true);
	}
	hx->pinned = NULL;
}

static void touch_resident(struct gx_hx *hx, struct hx_region *r)
{
	r->r.space_resident = hx->nr_resident;
	if (!hx->has_mem)
		return;
	struct gpu_mem_ctx mc = {.event = GPU_EV_ACCESS, .nr_resident = hx->nr_resident,
				 .capacity = hx->o.capacity, .tgid = hx->o.tgid};
	struct hx_call c = {.region = r};
	call(hx, &hx->mem, 1, &c, &mc, sizeof(mc), &r->r, sizeof(r->r), NULL, 0);
	for (int i = 0; i < c.nmig; i++)
		apply_range(hx, c.mig[i][0], c.mig[i][1], true);
}

int gx_hx__touch(struct gx_hx *hx, uint64_t va, uint64_t len)
{
	struct hx_alloc *a = alloc_of(hx, va);
	if (!a)
		return -ENOENT;
	REC(hx, "touch %#llx %llu\n", (unsigned long long)va, (unsigned long long)len);
	uint64_t aend = a->va + a->len;
	uint64_t end = len ? va + len : va + hx->o.max_walk;
	if (end > aend || end < va)
		end = aend;
	hx->nactions = 0;
	/* All resident and a policy that only acts on faults: nothing to do
	 * (the common case of every launch after the first: no region walk). */
	bool faults_only = !hx->has_mem || hx->mem.disabled || (!hx->mem.handler[1] && !hx->mem.handler[2]);
	if (a->all_resident && faults_only)
		return 0;
	uint64_t ev0 = hx->st.evictions;
	hx->touch_ns = now_ns();
	for (uint64_t b = va & ~(GPU_REGION_SIZE - 1); b < end; b += GPU_REGION_SIZE) {
		struct hx_region *r = NULL;
		HASH_FIND(hh, hx->regions, &b, sizeof(b), r);
		if (!r)
			continue;
		uint32_t lo = b < va ? (uint32_t)((va - b) >> GPU_PAGE_SHIFT) : 0;
		uint64_t he = end < b + GPU_REGION_SIZE ? end : b + GPU_REGION_SIZE;
		uint32_t hi = (uint32_t)((he - b + GPU_PAGE_SIZE - 1) >> GPU_PAGE_SHIFT);
		bool faulted = false;
		/* one access per region per launch, however many pages fault */
		r->r.access_count++;
		r->r.last_access_ns = hx->touch_ns;
		/* fully resident (the common case on every launch): no page walk */
		uint32_t first_pg = r->r.resident_pages >= region_pages(r) ? hi : lo;
		for (uint32_t pg = find_page(r, first_pg, hi, false); pg < hi;) {
			/* One fault per region and launch: the first page the
			 * device would miss. What the policy leaves out of this
			 * region's footprint is the GPU's demand paging (marked
			 * resident: it will be after the kernel). Simulating every
			 * later fault cost thousands of policy calls and tiny
			 * prefetches per GiB before the launch. */
			fault(hx, r, pg);
			make_resident(hx, r, pg, hi);
			faulted = true;
			break;
		}
		if (!faulted)
			touch_resident(hx, r);
	}
	flush(hx);
	/* a is still valid: touches neither add nor remove allocations */
	if (va == a->va && end == aend && hx->st.evictions == ev0)
		a->all_resident = true;
	return hx->nactions;
}

void gx_hx__sync(struct gx_hx *hx)
{
	REC(hx, "sync\n");
	/* Residency is forgotten, the eviction order (the policy's state) kept. */
	for (size_t i = 0; i < hx->nallocs; i++)
		hx->allocs[i].all_resident = false;
	for (struct hx_region *r = hx->head; r; r = r->next) {
		memset(r->r.resident_mask, 0, sizeof(r->r.resident_mask));
		r->r.resident_pages = 0;
	}
}

int gx_hx__queue_create(struct gx_hx *hx, uint64_t id, int priority)
{
	REC(hx, "qcreate %#llx %d\n", (unsigned long long)id, priority);
	struct hx_queue *q = NULL;
	HASH_FIND(hh, hx->queues, &id, sizeof(id), q);
	if (q)
		return -EEXIST;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->id = id;
	q->q = (struct gpu_queue){.id = id, .tgid = hx->o.tgid,
				  .priority = priority < 0 ? 0 : priority > GPU_PRIO_MAX ? GPU_PRIO_MAX : priority,
				  .timeslice_us = GPU_TIMESLICE_DEFAULT_US, .interleave = GPU_IL_MEDIUM};
	uint32_t nq = HASH_COUNT(hx->queues);
	if (hx->has_sched) {
		struct gpu_sched_ctx sc = {.event = GPU_EV_TASK_INIT, .nr_queues = nq, .tgid = hx->o.tgid};
		struct hx_call c = {0};
		call(hx, &hx->sched, 0, &c, &sc, sizeof(sc), &q->q, sizeof(q->q), NULL, 0);
		if (c.rejected) {
			free(q);
			return -EPERM;
		}
	}
	HASH_ADD(hh, hx->queues, id, sizeof(uint64_t), q);
	return 0;
}

int gx_hx__has_launch(const struct gx_hx *hx)
{
	return hx->has_sched && hx->sched.handler[2] && !hx->sched.disabled;
}

int gx_hx__launch(struct gx_hx *hx, const struct gpu_tenant *t, const struct gpu_launch *l, struct gx_hx_gate *g)
{
	*g = (struct gx_hx_gate){.decision = -1, .window = -1};
	if (!gx_hx__has_launch(hx))
		return -ENOENT;
	/* The handler reads copies: what it is given stays read-only to it,
	 * and the caller's structs are never touched. */
	struct gpu_tenant tc = *t;
	struct gpu_launch lc = *l;
	struct gpu_sched_ctx sc = {.event = GPU_EV_TASK_LAUNCH, .nr_queues = HASH_COUNT(hx->queues),
				   .tgid = t->tgid, .cgroup_id = t->cgroup_id};
	struct hx_call c = {.window = -1};
	int d = call(hx, &hx->sched, 2, &c, &sc, sizeof(sc), &tc, sizeof(tc), &lc, sizeof(lc));
	if (d < 0) /* a policy error this call: the runtime's default */
		return 0;
	g->decision = d;
	g->hold_us = d == GPU_BYPASS ? c.hold_us : 0;
	g->window = c.window;
	return 0;
}

void gx_hx__queue_destroy(struct gx_hx *hx, uint64_t id)
{
	struct hx_queue *q = NULL;
	HASH_FIND(hh, hx->queues, &id, sizeof(id), q);
	if (!q)
		return;
	REC(hx, "qdestroy %#llx\n", (unsigned long long)id);
	HASH_DEL(hx->queues, q);
	if (hx->has_sched) {
		struct gpu_sched_ctx sc = {.event = GPU_EV_TASK_DESTROY, .nr_queues = HASH_COUNT(hx->queues),
					   .tgid = hx->o.tgid};
		struct hx_call c = {0};
		call(hx, &hx->sched, 1, &c, &sc, sizeof(sc), &q->q, sizeof(q->q), NULL, 0);
	}
	free(q);
}

int gx_hx__queue_rekey(struct gx_hx *hx, uint64_t old_id, uint64_t new_id)
{
	struct hx_queue *q = NULL, *o = NULL;
	HASH_FIND(hh, hx->queues, &old_id, sizeof(old_id), q);
	if (!q)
		return -ENOENT;
	HASH_FIND(hh, hx->queues, &new_id, sizeof(new_id), o);
	if (o)
		return -EEXIST;
	REC(hx, "qrekey %#llx %#llx\n", (unsigned long long)old_id, (unsigned long long)new_id);
	HASH_DEL(hx->queues, q);
	q->id = new_id;
	q->q.id = new_id;
	HASH_ADD(hh, hx->queues, id, sizeof(uint64_t), q);
	return 0;
}

void gx_hx__stats(const struct gx_hx *hx, struct gx_hx_stats *st)
{
	*st = hx->st;
}

size_t gx_hx__resident(const struct gx_hx *hx, uint64_t *va, size_t max)
{
	size_t n = 0;
	for (struct hx_region *r = hx->head; r && n < max; r = r->next)
		va[n++] = r->r.va_start;
	return n;
}

/* One number of an event line: 0x hex or decimal, whole token. */
static bool num(const char *t, unsigned long long *v)
{
	char *end;
	if (!t)
		return false;
	errno = 0;
	*v = t[0] == '-' ? (unsigned long long)strtoll(t, &end, 0) : strtoull(t, &end, 0);
	return !errno && end != t && !*end;
}

long gx_hx__replay(struct gx_hx *hx, const char *path)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	char line[256];
	long n = 0, lineno = 0;
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		line[strcspn(line, "\r\n")] = 0;
		if (line[0] == '#' || !line[0])
			continue;
		char *save = NULL, *cmd = strtok_r(line, " ", &save);
		char *t1 = strtok_r(NULL, " ", &save), *t2 = strtok_r(NULL, " ", &save);
		bool extra = strtok_r(NULL, " ", &save) != NULL;
		unsigned long long a = 0, b = 0;
		bool ok = !extra;
		if (ok && !strcmp(cmd, "sync") && !t1)
			gx_hx__sync(hx);
		else if (ok && !strcmp(cmd, "alloc") && num(t1, &a) && num(t2, &b))
			gx_hx__alloc(hx, a, b);
		else if (ok && !strcmp(cmd, "free") && num(t1, &a) && !t2)
			gx_hx__free_range(hx, a);
		else if (ok && !strcmp(cmd, "touch") && num(t1, &a) && num(t2, &b))
			gx_hx__touch(hx, a, b);
		else if (ok && !strcmp(cmd, "qcreate") && num(t1, &a) && num(t2, &b))
			gx_hx__queue_create(hx, a, (int)(long long)b);
		else if (ok && !strcmp(cmd, "qdestroy") && num(t1, &a) && !t2)
			gx_hx__queue_destroy(hx, a);
		else if (ok && !strcmp(cmd, "qrekey") && num(t1, &a) && num(t2, &b))
			gx_hx__queue_rekey(hx, a, b);
		else {
			pr_warn("hostpolicy: %s:%ld: malformed event line", path, lineno);
			fclose(f);
			return -EINVAL;
		}
		n++;
	}
	fclose(f);
	return n;
}
