/* bs_launch.c — blocksched's launch side (gx_blocksched.h).
 *
 * With GPUEXT_SCHED (a schedule policy) or GPUEXT_PERSISTENT (no policy:
 * `static`, or `1`/`dynamic` = claim and always steal), every module is
 * rewritten in copy mode: a kernel K the transform accepts stays as it is
 * and gains a transformed copy __gx_pw_K (ptx-rewrite/pass_persist_loop.c).
 * This file, a subscriber of the shim's launch events, swaps a launch of K
 * for the copy when K is selected (the policy's kernels=GLOB):
 *  - workers = blocks per SM (the driver's occupancy API, for the copy at
 *    the launch's block size and dynamic shared memory) x SMs, at most the
 *    original block count, as a 1-D grid;
 *  - the descriptor (include/gpuext/gx_work.h) is appended by value: units,
 *    grid, mode; in CLAIM mode also the stream's state (bs_mem.c), the
 *    kernel's hint block (with a policy attached), a stats area for sampled
 *    launches (bs_log.c), and the chunk: total / (workers x claims per
 *    worker), at least 1, so each worker makes about gx_sched_chunks claims;
 *  - in CLAIM mode nothing else is queued: the state is clean from the last
 *    launch on the stream (its last worker resets it).
 * Under a guarded policy (gx_sched_guard) the rewriter also adds a
 * static-only copy __gx_ps_K, and the guard (bs_guard.c) times K, the
 * claiming copy and the static one per kernel and grid, then runs the
 * fastest; the static copy launches like a STATIC policy's (no state,
 * captured as it is).
 * Every launch this file cannot vouch for runs the original K, with one log
 * line per reason: cooperative launches, parameters through `extra`,
 * cuLaunchKernelEx attributes other than priority/access policy/memory
 * sync domain, more than 2^31 blocks, zero occupancy, dynamic shared memory
 * the copy cannot get, memory that cannot be had; and, in CLAIM mode only,
 * launches into a stream being captured and graph kernel nodes (a graph may
 * be instantiated twice and the instances run at once: one state shared by
 * two launches would lose units — STATIC launches need no state and are
 * captured as they are). Launches from inside other event subscribers
 * (nested) are not seen and run the original too. */
#include <errno.h>
#include <fnmatch.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuext/gx_stats.h"
#include "blocksched/bs_internal.h"
#include "common/gx_capture.h"
#include "common/gx_tls.h"
#include "ptx-rewrite/gx_ptx.h"

/* A kernel with a persistent copy, from the rewriter's log. */
struct pmod {
	void *handle; /* CUmodule or CUlibrary */
	void *side;   /* where its copies are, when not in handle (gx_bs_module) */
	bool is_library;
	size_t n;
	struct gx_bs_kernel *k;
	UT_hash_handle hh;
};

/* What a launched handle resolves to in a context. */
struct pfunc_key {
	CUcontext ctx;
	void *f;
};
struct pfunc {
	struct pfunc_key key;
	void *mod;
	const struct gx_bs_kernel *k; /* NULL: no copy, or not selected: run as is */
	CUfunction copy;
	CUfunction scopy; /* the static-only copy (guarded policies), or NULL */
	int dev;
	unsigned occ_block, occ_smem; /* last occupancy query */
	int occ, occ_orig, occ_s;
	unsigned max_dyn_smem; /* copied from the original so far */
	unsigned announced;    /* 1 << arm: the arms whose first launch was logged */
	unsigned long long launches;
	CUdeviceptr hints; /* CLAIM with a policy: the kernel's hint block */
	unsigned hints_cap;
	/* the guard (a policy's gx_sched_guard): its decision for the grid of
	 * guard_units blocks over guard_arms arms, and timing pairs of launches
	 * it explores with */
	struct gx_bs_guard guard;
	unsigned long long guard_units;
	unsigned guard_arms;
	/* the timing pairs: an application may queue launches far ahead of
	 * the GPU, so enough for an exploration's timings (15) in flight */
	struct {
		CUevent ev[2]; /* around the launch: before the driver's call, after it */
		CUstream s;
		int arm;
		unsigned gen; /* the guard_gen it was taken for */
		int state;    /* 0 free, 1 started, 2 ended (its end event recorded) */
	} tp[16];
	unsigned guard_gen; /* bumped when the guard starts over on a new grid */
	/* why timings failed (the log says so when none came at all) */
	unsigned tfail_n;
	const char *tfail; /* the last failure's step */
	CUresult tfail_rc;
	UT_hash_handle hh;
};

#define MAX_DEVS 64

const struct gx_bs_host *bs_host;
pthread_mutex_t bs_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t cfg_once = PTHREAD_ONCE_INIT, sub_once = PTHREAD_ONCE_INIT;
static int mode = -1; /* -1 off, else enum gx_work_mode */
static unsigned chunks_per_worker = GX_BS_DEFAULT_CHUNKS;
static char glob[256] = "*";
static char tag[64]; /* the schedule policy ("" without one) */
static bool policy_checked;
static bool guard_on; /* the policy's gx_sched_guard */
static struct pmod *mods;
static struct pfunc *funcs;
static int sm_count[MAX_DEVS];
static int sub_id = -1;
static bool live; /* started by gx_bs_live_start */

/* ------------------------------------------------------------ config */

int gx_bs_parse_spec(const char *spec, char *obj, size_t on, char *knobs, size_t kn, char *g, size_t gn)
{
	const char *c = strchr(spec, ',');
	snprintf(obj, on, "%.*s", (int)(c ? (size_t)(c - spec) : strlen(spec)), spec);
	snprintf(g, gn, "*");
	if (kn)
		knobs[0] = 0;
	while (c) {
		const char *k = c + 1, *e = strchr(k, ',');
		size_t len = e ? (size_t)(e - k) : strlen(k);
		const char *eq = memchr(k, '=', len);
		if (!len) {
		} else if (!eq) {
			return -EINVAL;
		} else if (eq - k == 7 && !strncmp(k, "kernels", 7)) {
			snprintf(g, gn, "%.*s", (int)(len - 8), eq + 1);
		} else {
			size_t l = strlen(knobs);
			snprintf(knobs + l, kn - l, "%s%.*s", l ? "," : "", (int)len, k);
		}
		c = e;
	}
	return 0;
}

static void read_cfg(void)
{
	const char *e = bs_host->persistent;
	if (bs_host->sched && *bs_host->sched) {
		char obj[4096], knobs[1024];
		if (gx_bs_parse_spec(bs_host->sched, obj, sizeof(obj), knobs, sizeof(knobs), glob, sizeof(glob))) {
			pr_warn("blocksched: GPUEXT_SCHED=%s: a knob without '=' (name=value); kernels run unchanged",
				bs_host->sched);
			return;
		}
		char *b = basename(obj), *dot = strstr(b, ".bpf.o");
		snprintf(tag, sizeof(tag), "%.*s", (int)(dot ? (size_t)(dot - b) : strlen(b)), b);
		mode = GX_WORK_CLAIM;
		return;
	}
	if (!e || !*e || !strcmp(e, "0") || !strcmp(e, "off"))
		return;
	if (!strcmp(e, "1") || !strcmp(e, "dynamic") || !strcmp(e, "claim"))
		mode = GX_WORK_CLAIM;
	else if (!strcmp(e, "static"))
		mode = GX_WORK_STATIC;
	else
		pr_warn("GPUEXT_PERSISTENT=%s: unknown value (1, dynamic, static or 0); persistent workers off", e);
}

/* The policy's own settings, once it is attached (first launch). */
static void read_policy_locked(void)
{
	if (policy_checked || !tag[0])
		return;
	policy_checked = true;
	unsigned v;
	int r = bs_host->policy_var(tag, GX_BS_VAR_MODE, &v, sizeof(v));
	if (r == -ENODEV) {
		pr_warn("blocksched: policy %s is not attached (see the lines above); kernels run unchanged", tag);
		mode = -1;
		return;
	}
	if (r == 0)
		mode = v == GX_WORK_STATIC ? GX_WORK_STATIC : GX_WORK_CLAIM;
	if (bs_host->policy_var(tag, GX_BS_VAR_CHUNKS, &v, sizeof(v)) == 0 && v > 0 && v <= 1024)
		chunks_per_worker = v;
	guard_on = bs_host->policy_var(tag, GX_BS_VAR_GUARD, &v, sizeof(v)) == 0 && v;
	pr_info("blocksched: policy %s schedules kernels matching '%s' (%s, %u claims per worker%s)", tag, glob,
		mode == GX_WORK_STATIC ? "static" : "claim", chunks_per_worker,
		guard_on ? ", each kernel kept as it is unless its copy is timed faster"
			 : "; unguarded (gx_sched_guard=0): copies run even where they are slower");
}

const char *gx_bs_policy_tag(void)
{
	return tag;
}

/* A driver error's name, for the log. */
static const char *bs_cu_err(CUresult rc)
{
	const char *en = NULL;
	return CU(cuGetErrorName)(rc, &en) == CUDA_SUCCESS && en ? en : "an unknown error";
}

/* ------------------------------------------------------------ module records */

static void pmod_free(struct pmod *m)
{
	gx_bs_kernels_free(m->k, m->n);
	free(m);
}

/* Forget a module's functions (handles may be reused after an unload). */
/* A function's entry, its timing events with it (its context still alive). */
static void pfunc_free(struct pfunc *f, bool events)
{
	for (size_t i = 0; events && i < sizeof(f->tp) / sizeof(f->tp[0]); i++)
		for (int j = 0; j < 2; j++)
			if (f->tp[i].ev[j])
				CU(cuEventDestroy_v2)(f->tp[i].ev[j]);
	free(f);
}

static void forget_mod_locked(void *handle)
{
	struct pmod *m;
	HASH_FIND_PTR(mods, &handle, m);
	if (m) {
		HASH_DEL(mods, m);
		pmod_free(m);
	}
	struct pfunc *f, *t;
	HASH_ITER(hh, funcs, f, t)
	{
		if (f->mod == handle || f->key.f == handle) {
			HASH_DEL(funcs, f);
			bs_mem_retire(f->key.ctx, f->hints, NULL);
			pfunc_free(f, true);
		}
	}
}

/* Every module and kernel forgotten. live: the driver is there, so the
 * kernels' device hints are retired and their events destroyed; else (a
 * reset, the process's exit) both are left as they are. */
static void forget_all_locked(bool live_driver)
{
	struct pmod *m, *mt;
	HASH_ITER(hh, mods, m, mt)
	{
		HASH_DEL(mods, m);
		pmod_free(m);
	}
	struct pfunc *f, *ft;
	HASH_ITER(hh, funcs, f, ft)
	{
		HASH_DEL(funcs, f);
		if (live_driver && f->hints)
			bs_mem_retire(f->key.ctx, f->hints, NULL);
		pfunc_free(f, live_driver);
	}
}

void gx_bs_module(void *handle, bool is_library, const char *log, void *side)
{
	if (mode < 0 || !handle)
		return;
	struct gx_bs_kernel *k;
	size_t n;
	if (gx_bs_parse_log(log, &k, &n) < 0) {
		pr_warn("blocksched: out of memory recording a module's copies; its kernels run unchanged");
		gx_bs_kernels_free(k, n);
		return;
	}
	pthread_mutex_lock(&bs_lock);
	forget_mod_locked(handle);
	struct pmod *m = n ? calloc(1, sizeof(*m)) : NULL;
	if (m) {
		m->handle = handle;
		m->side = side;
		m->is_library = is_library;
		m->n = n;
		m->k = k;
		k = NULL;
		HASH_ADD_PTR(mods, handle, m);
	}
	pthread_mutex_unlock(&bs_lock);
	if (k)
		gx_bs_kernels_free(k, n);
}

/* ---------------------------------------------------------------- launches */

/* The copies of kernel `name` of module mod, and the module (or library)
 * they are in: mod itself, or the module loaded beside it. */
static const struct gx_bs_kernel *find_kern(void *mod, const char *name, bool *is_library, void **code)
{
	struct pmod *m;
	HASH_FIND_PTR(mods, &mod, m);
	if (!m)
		return NULL;
	*is_library = m->is_library;
	*code = m->side ? m->side : mod;
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->k[i].name, name))
			return &m->k[i];
	return NULL;
}

/* A copy's function handle in a module or library. */
static CUresult copy_func(void *mod, bool is_library, const char *name, CUfunction *f)
{
	if (!is_library)
		return CU(cuModuleGetFunction)(f, (CUmodule)mod, name);
	CUkernel kk;
	CUresult rc = CU(cuLibraryGetKernel)(&kk, (CUlibrary)mod, name);
	return rc == CUDA_SUCCESS ? CU(cuKernelGetFunction)(f, kk) : rc;
}

/* Resolve a launched handle (under bs_lock). NULL only on ENOMEM. */
static struct pfunc *resolve_locked(CUcontext ctx, void *f)
{
	struct pfunc_key key;
	memset(&key, 0, sizeof(key));
	key.ctx = ctx;
	key.f = f;
	struct pfunc *pf;
	HASH_FIND(hh, funcs, &key, sizeof(key), pf);
	if (pf)
		return pf;
	pf = calloc(1, sizeof(*pf));
	if (!pf)
		return NULL;
	pf->key = key;
	pf->dev = -1;
	char name[512];
	void *mod = NULL;
	bool is_library = false;
	if (bs_host->func_info(ctx, f, name, sizeof(name), &mod) == 0 && mod) {
		pf->mod = mod;
		void *code = mod;
		const struct gx_bs_kernel *k = find_kern(mod, name, &is_library, &code);
		CUfunction copy = NULL;
		CUresult rc = CUDA_ERROR_NOT_FOUND;
		if (fnmatch(glob, name, 0)) { /* it has no copy either (persist_kernels) */
			bs_log_decision(name, "runs unchanged: not selected by policy %s (kernels=%s)", tag, glob);
			k = NULL;
		}
		if (k)
			rc = copy_func(code, is_library, k->copy, &copy);
		if (k && rc == CUDA_SUCCESS) {
			pf->k = k;
			pf->copy = copy;
			/* other subscribers (device policies) may look the copy up */
			bs_host->add_func(ctx, copy, mod, k->copy);
			if (k->scopy && (rc = copy_func(code, is_library, k->scopy, &pf->scopy)) == CUDA_SUCCESS) {
				bs_host->add_func(ctx, pf->scopy, mod, k->scopy);
			} else if (k->scopy) {
				bs_log_decision(name,
						"its static copy %s cannot be found (%s): the guard times two arms",
						k->scopy, bs_cu_err(rc));
				pf->scopy = NULL;
			}
		} else if (k) {
			bs_log_decision(name, "runs unchanged: its copy %s cannot be found (%s)", k->copy,
					bs_cu_err(rc));
		}
	}
	CUdevice d;
	if (pf->k && CU(cuCtxGetDevice)(&d) == CUDA_SUCCESS && d >= 0 && d < MAX_DEVS) {
		pf->dev = d;
		if (!sm_count[d] &&
		    CU(cuDeviceGetAttribute)(&sm_count[d], CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d) != CUDA_SUCCESS)
			sm_count[d] = 0;
	}
	if (pf->k && (pf->dev < 0 || sm_count[pf->dev] <= 0)) {
		bs_log_decision(name, "runs unchanged: no SM count for the current device");
		pf->k = NULL;
	}
	HASH_ADD(hh, funcs, key, sizeof(pf->key), pf);
	return pf;
}

/* One log line per fallback reason. */
enum { FB_COOP, FB_EXTRA, FB_ATTR, FB_CAPTURE, FB_GRAPH, FB_OCC, FB_MEM, FB_SMEM, FB_GRID, FB_STATIC, FB__N };
static int fb_said[FB__N];
static const char *const fb_why[FB__N] = {
	[FB_COOP] = "cooperative launches",
	[FB_EXTRA] = "launches passing parameters through `extra`",
	[FB_ATTR] = "cuLaunchKernelEx launches with cluster, cooperative or other attributes",
	[FB_CAPTURE] = "launches into a stream being captured (claiming policies)",
	[FB_GRAPH] = "graph kernel nodes (claiming policies)",
	[FB_OCC] = "launches whose block size or shared memory leaves no block per SM",
	[FB_MEM] = "launches whose device state could not be set up",
	[FB_SMEM] = "launches whose dynamic shared memory the copy cannot be given",
	[FB_GRID] = "launches of more than 2^31 blocks",
	[FB_STATIC] = "claiming launches of copies made static only (the mode changed after the load)",
};

/* What launches of kernels with a copy became, for the stats file
 * (gx_bs_stats): relaxed atomics, no lock. */
static uint64_t n_claim, n_static, n_unchanged[GX_STATS_BS__COUNT];
static const int fb_stat[FB__N] = {
	[FB_COOP] = GX_STATS_BS_COOPERATIVE,
	[FB_EXTRA] = GX_STATS_BS_EXTRA,
	[FB_ATTR] = GX_STATS_BS_ATTRIBUTES,
	[FB_CAPTURE] = GX_STATS_BS_CAPTURE,
	[FB_GRAPH] = -1,
	[FB_OCC] = GX_STATS_BS_OCCUPANCY,
	[FB_MEM] = GX_STATS_BS_MEMORY,
	[FB_SMEM] = GX_STATS_BS_SHARED_MEM,
	[FB_GRID] = GX_STATS_BS_GRID,
	[FB_STATIC] = GX_STATS_BS_STATIC_ONLY,
};
static uint64_t live_base[2 + GX_STATS_BS__COUNT]; /* the counts at gx_bs_live_start */
static void unchanged(int why)
{
	if (why >= 0)
		__atomic_fetch_add(&n_unchanged[why], 1, __ATOMIC_RELAXED);
}

void gx_bs_stats(struct gx_stats_file *f)
{
	if (mode < 0 || sub_id < 0)
		return;
	f->flags |= GX_STATS_F_SCHED;
	f->bs_persistent_claim = __atomic_load_n(&n_claim, __ATOMIC_RELAXED);
	f->bs_persistent_static = __atomic_load_n(&n_static, __ATOMIC_RELAXED);
	for (int i = 0; i < GX_STATS_BS__COUNT; i++)
		f->bs_unchanged[i] = __atomic_load_n(&n_unchanged[i], __ATOMIC_RELAXED);
	bs_log_counts(&f->bs_sampled_launches, &f->bs_steals);
}

static CUresult fallback(int why, const char *name)
{
	unchanged(fb_stat[why]);
	if (!__atomic_exchange_n(&fb_said[why], 1, __ATOMIC_RELAXED))
		bs_log_decision(name ? name : "?", "runs unchanged: %s run the original kernels (first of them)",
				fb_why[why]);
	return CUDA_SUCCESS;
}

static bool attrs_ok(const CUlaunchConfig *c)
{
	for (unsigned i = 0; c && i < c->numAttrs; i++) {
		switch (c->attrs[i].id) {
		case CU_LAUNCH_ATTRIBUTE_IGNORE:
		case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
		case CU_LAUNCH_ATTRIBUTE_PRIORITY:
		case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
		case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
			break;
		default:
			return false;
		}
	}
	return true;
}

/* Give the copies the original's dynamic shared memory limit (set by the
 * application with cuFuncSetAttribute) when the launch needs more than the
 * default 48 KiB. */
static bool smem_ok(struct pfunc *pf, void *orig, int is_kernel, unsigned smem)
{
	if (smem <= 48 * 1024 || smem <= pf->max_dyn_smem)
		return true;
	int v = 0;
	CUresult rc = is_kernel ? CU(cuKernelGetAttribute)(&v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
							   (CUkernel)orig, pf->dev)
				: CU(cuFuncGetAttribute)(&v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
							 (CUfunction)orig);
	if (rc != CUDA_SUCCESS || v < (int)smem ||
	    CU(cuFuncSetAttribute)(pf->copy, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, v) != CUDA_SUCCESS ||
	    (pf->scopy &&
	     CU(cuFuncSetAttribute)(pf->scopy, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, v) != CUDA_SUCCESS))
		return false;
	pf->max_dyn_smem = (unsigned)v;
	return true;
}

/* ---- the guard: timing pairs ---- */
/* The pair this thread started for its launch in flight (LAUNCH_DONE
 * records its end; a launch the driver refused leaves it to be freed). */
static __thread struct {
	struct pfunc_key key;
	int i;
} tl_tp = { .i = -1 };

static struct pfunc *find_locked(const struct pfunc_key *key)
{
	struct pfunc *pf;
	HASH_FIND(hh, funcs, key, sizeof(*key), pf);
	return pf;
}

/* A timing that will not come: counted, and the guard told. */
static void timing_failed_locked(struct pfunc *pf, int arm, unsigned gen, const char *what, CUresult rc)
{
	pf->tfail_n++;
	pf->tfail = what;
	pf->tfail_rc = rc;
	if (gen == pf->guard_gen)
		gx_bs_guard_sample(&pf->guard, arm, -1);
}

/* The guard's events, one log line each (gpuext sched shows them). */
static void guard_said(const struct gx_bs_guard *g, const char *name, int ev)
{
	static const char *const arm_name[GX_BS_ARMS] = { "the original", "its copy", "its static copy" };
	if (ev == GX_BS_EV_SETTLED) {
		char st[64] = "";
		if (g->arms > GX_BS_STATIC)
			snprintf(st, sizeof(st), ", its static copy %.3f ms", (double)g->med[GX_BS_STATIC]);
		bs_log_decision(
			name,
			"guard: its copy %.3f ms%s, as it is %.3f ms (medians of up to %d launches each%s): %s; "
			"exploring took %u launches, the timed copies %+.3f ms against the original",
			(double)g->med[GX_BS_COPY], st, (double)g->med[GX_BS_ORIG], GX_BS_GUARD_SAMPLES,
			g->out ? ", a copy far slower dropped early" : "",
			g->choice == GX_BS_COPY	    ? "runs the copy"
			: g->choice == GX_BS_STATIC ? "runs the static copy"
						    : "runs unchanged",
			g->explore_launches, (double)g->explore_extra_ms);
	} else if (ev == GX_BS_EV_GAVE_UP) {
		bs_log_decision(name,
				"guard: gives up %s: %.3f ms against the original's %.3f ms (medians of its last "
				"launches): runs unchanged (%u time%s)",
				arm_name[g->last_choice > 0 ? g->last_choice : 1], (double)g->now[0], (double)g->now[1],
				g->gave_up, g->gave_up == 1 ? "" : "s");
	} else if (ev == GX_BS_EV_SHIFTED) {
		bs_log_decision(name, "guard: %s now takes %.3f ms, %.3f ms after it was chosen: explores again",
				arm_name[g->last_choice >= 0 ? g->last_choice : 0], (double)g->now[0], (double)g->base);
	}
}

/* Feed the finished pairs to the guard (never waits). */
static void guard_harvest_locked(struct pfunc *pf, const char *name)
{
	for (size_t i = 0; i < sizeof(pf->tp) / sizeof(pf->tp[0]); i++) {
		if (pf->tp[i].state != 2)
			continue;
		CUresult q = CU(cuEventQuery)(pf->tp[i].ev[1]);
		if (q == CUDA_ERROR_NOT_READY)
			continue;
		float ms = -1;
		CUresult e = q == CUDA_SUCCESS ? CU(cuEventElapsedTime)(&ms, pf->tp[i].ev[0], pf->tp[i].ev[1]) : q;
		pf->tp[i].state = 0;
		if (e != CUDA_SUCCESS)
			timing_failed_locked(pf, pf->tp[i].arm, pf->tp[i].gen,
					     q != CUDA_SUCCESS ? "cuEventQuery" : "cuEventElapsedTime", e);
		else if (pf->tp[i].gen == pf->guard_gen)
			guard_said(&pf->guard, name, gx_bs_guard_sample(&pf->guard, pf->tp[i].arm, ms));
	}
}

/* This launch of pf (units blocks on stream s, `arms` arms): its arm; a
 * launch the guard wants timed gets a timing pair when the stream can take
 * events (else the guard hears that no timing comes). */
static int guard_pick_locked(struct pfunc *pf, const char *name, unsigned long long units, unsigned arms, CUstream s,
			     bool can_time)
{
	if (can_time)
		guard_harvest_locked(pf, name); /* nothing of ours near a capture */
	if (pf->guard_units != units || pf->guard_arms != arms) {
		gx_bs_guard_init(&pf->guard, arms); /* a new grid: its own decision */
		pf->guard_units = units;
		pf->guard_arms = arms;
		pf->guard_gen++; /* pairs in flight belong to the old one */
	}
	unsigned untimed = pf->guard.untimed;
	int timed = 0, arm = gx_bs_guard_next(&pf->guard, &timed);
	if (pf->guard.untimed != untimed)
		bs_log_decision(
			name,
			"guard: no timing of its launches came back in %u launches (%u failed, the last at %s%s%s): "
			"runs unchanged",
			pf->guard.explore_launches, pf->tfail_n, pf->tfail ? pf->tfail : "none",
			pf->tfail_rc ? ": " : "", pf->tfail_rc ? bs_cu_err(pf->tfail_rc) : "");
	if (!timed)
		return arm;
	const char *what = can_time ? "a free timing pair" : "a stream being captured";
	CUresult rc = CUDA_SUCCESS;
	bool busy = can_time;
	for (int i = 0; can_time && i < (int)(sizeof(pf->tp) / sizeof(pf->tp[0])); i++) {
		if (pf->tp[i].state)
			continue;
		busy = false;
		for (int j = 0; j < 2 && rc == CUDA_SUCCESS; j++)
			if (!pf->tp[i].ev[j] && (rc = CU(cuEventCreate)(&pf->tp[i].ev[j], CU_EVENT_DEFAULT)))
				what = "cuEventCreate";
		if (rc == CUDA_SUCCESS && (rc = CU(cuEventRecord)(pf->tp[i].ev[0], s)))
			what = "cuEventRecord (before the launch)";
		if (rc != CUDA_SUCCESS)
			break;
		pf->tp[i].s = s;
		pf->tp[i].arm = arm;
		pf->tp[i].gen = pf->guard_gen;
		pf->tp[i].state = 1;
		tl_tp.key = pf->key;
		tl_tp.i = i;
		return arm;
	}
	if (busy) /* every pair in flight: later launches get timed */
		return gx_bs_guard_skip(&pf->guard, arm);
	timing_failed_locked(pf, arm, pf->guard_gen, what, rc); /* no timing */
	return arm;
}

/* After the driver took the launch: the end of its timing pair. */
static void guard_launched(void)
{
	if (tl_tp.i < 0)
		return;
	pthread_mutex_lock(&bs_lock);
	struct pfunc *pf = find_locked(&tl_tp.key);
	if (pf && pf->tp[tl_tp.i].state == 1) {
		CUresult rc = CU(cuEventRecord)(pf->tp[tl_tp.i].ev[1], pf->tp[tl_tp.i].s);
		pf->tp[tl_tp.i].state = rc == CUDA_SUCCESS ? 2 : 0;
		if (rc != CUDA_SUCCESS)
			timing_failed_locked(pf, pf->tp[tl_tp.i].arm, pf->tp[tl_tp.i].gen,
					     "cuEventRecord (after the launch)", rc);
	}
	tl_tp.i = -1;
	pthread_mutex_unlock(&bs_lock);
}

/* A pair whose launch never reached LAUNCH_DONE (the driver refused it). */
static void guard_abandon_locked(void)
{
	if (tl_tp.i < 0)
		return;
	struct pfunc *pf = find_locked(&tl_tp.key);
	if (pf && pf->tp[tl_tp.i].state == 1) {
		pf->tp[tl_tp.i].state = 0;
		timing_failed_locked(pf, pf->tp[tl_tp.i].arm, pf->tp[tl_tp.i].gen,
				     "the launch's end (no LAUNCH_DONE: refused, or not delivered)", CUDA_SUCCESS);
	}
	tl_tp.i = -1;
}

/* A copy was picked and timed, but the original runs after all. */
static void guard_untimed(void)
{
	if (tl_tp.i < 0)
		return;
	pthread_mutex_lock(&bs_lock);
	guard_abandon_locked();
	pthread_mutex_unlock(&bs_lock);
}

/* Per thread (the shim calls the driver on this thread right after the
 * subscribers): the launch's arguments with the descriptor appended, and
 * the kernel's names copied under the lock. On the heap (common/gx_tls.h
 * says why not __thread). */
struct launch_tls {
	void **params;
	unsigned cap;
	struct gx_work_desc desc;
	char name[256], copy[256], scopy[256];
};
static void launch_tls_fini(void *p)
{
	free(((struct launch_tls *)p)->params);
}
static struct gx_tls_heap launch_tls = GX_TLS_HEAP(sizeof(struct launch_tls), launch_tls_fini);

/* The copies' and the original's resident blocks per SM at this block size
 * and shared memory (occ_s: 0 without a static copy). */
static void occupancy(struct gx_launch_event *l, CUfunction copy, CUfunction scopy, unsigned block, int *occ,
		      int *occ_orig, int *occ_s)
{
	CUfunction of = (CUfunction)l->func;
	if (l->is_kernel && CU(cuKernelGetFunction)(&of, (CUkernel)l->func) != CUDA_SUCCESS)
		of = NULL;
	if (CU(cuOccupancyMaxActiveBlocksPerMultiprocessor)(occ, copy, (int)block, l->shared_mem) != CUDA_SUCCESS)
		*occ = 0;
	if (!of ||
	    CU(cuOccupancyMaxActiveBlocksPerMultiprocessor)(occ_orig, of, (int)block, l->shared_mem) != CUDA_SUCCESS)
		*occ_orig = 0;
	if (!scopy ||
	    CU(cuOccupancyMaxActiveBlocksPerMultiprocessor)(occ_s, scopy, (int)block, l->shared_mem) != CUDA_SUCCESS)
		*occ_s = 0;
}

static CUresult on_launch(struct gx_event *ev)
{
	struct gx_launch_event *l = &ev->launch;
	if (!ev->ctx || !l->func)
		return CUDA_SUCCESS;
	pthread_mutex_lock(&bs_lock);
	guard_abandon_locked();
	read_policy_locked();
	bs_log_poll(false);
	struct pfunc *pf = resolve_locked(ev->ctx, l->func);
	struct launch_tls *t = pf && pf->k ? gx_tls_heap_get(&launch_tls) : NULL;
	if (!t) {
		pthread_mutex_unlock(&bs_lock);
		return CUDA_SUCCESS; /* no copy (or no memory): as it is */
	}
	/* What a launch needs of its records, copied under the lock (a module
	 * may be unloaded by another thread meanwhile). */
	struct gx_bs_kernel kc = *pf->k, *k = &kc;
	snprintf(t->name, sizeof(t->name), "%s", pf->k->name);
	snprintf(t->copy, sizeof(t->copy), "%s", pf->k->copy);
	snprintf(t->scopy, sizeof(t->scopy), "%s", pf->k->scopy ? pf->k->scopy : "");
	kc.name = t->name;
	kc.copy = t->copy;
	kc.scopy = t->scopy;
	CUfunction copy = pf->copy, scopy = pf->scopy;
	int dev = pf->dev;
	unsigned block = l->block[0] * l->block[1] * l->block[2];
	bool smem = smem_ok(pf, l->func, l->is_kernel, l->shared_mem);
	bool occ_known = pf->occ_block == block && pf->occ_smem == l->shared_mem;
	int occ = occ_known ? pf->occ : -1, occ_orig = pf->occ_orig, occ_s = pf->occ_s;
	int m = mode;
	bool guard = guard_on;
	pthread_mutex_unlock(&bs_lock);
	if (m < 0)
		return CUDA_SUCCESS;
	if (m == GX_WORK_CLAIM && k->static_only)
		return fallback(FB_STATIC, k->name);

	if (l->api == GX_LAUNCH_COOPERATIVE)
		return fallback(FB_COOP, k->name);
	if (!l->kernel_params && (l->extra || k->nparams > 1))
		return fallback(FB_EXTRA, k->name);
	if (l->api == GX_LAUNCH_KERNEL_EX && !attrs_ok(l->config))
		return fallback(FB_ATTR, k->name);
	unsigned long long units = (unsigned long long)l->grid[0] * l->grid[1] * l->grid[2];
	if (!units || units > INT32_MAX)
		return fallback(FB_GRID, k->name);
	if (!smem)
		return fallback(FB_SMEM, k->name);
	/* A stream being captured takes STATIC launches only: a guarded kernel
	 * with a static copy may still run it there (the guard decides). */
	CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
	bool cs_ok = (m == GX_WORK_CLAIM || guard) && CU(cuStreamIsCapturing)(l->stream, &cs) == CUDA_SUCCESS;
	bool capturing = !cs_ok || cs != CU_STREAM_CAPTURE_STATUS_NONE;
	if (m == GX_WORK_CLAIM && capturing && !(guard && scopy))
		return fallback(FB_CAPTURE, k->name);
	if (!occ_known) {
		occupancy(l, copy, scopy, block, &occ, &occ_orig, &occ_s);
		pthread_mutex_lock(&bs_lock);
		if ((pf = resolve_locked(ev->ctx, l->func)))
			pf->occ_block = block, pf->occ_smem = l->shared_mem, pf->occ = occ, pf->occ_orig = occ_orig,
			pf->occ_s = occ_s;
		pthread_mutex_unlock(&bs_lock);
		if (occ > 0 && occ < occ_orig)
			bs_log_decision(k->name,
					"runs unchanged at %u threads per block: its copy keeps %d of the "
					"original's %d blocks per SM",
					block, occ, occ_orig);
	}
	if (occ <= 0)
		return fallback(FB_OCC, k->name);
	if (occ < occ_orig)
		return unchanged(GX_STATS_BS_OCCUPANCY), CUDA_SUCCESS; /* said once per block size, above */
	/* the static copy is an arm only where it keeps the original's blocks */
	unsigned arms = scopy && occ_s >= occ_orig ? GX_BS_ARMS : 2;
	int arm = GX_BS_COPY;
	bool announce = false;
	unsigned long long nth = 0;
	pthread_mutex_lock(&bs_lock);
	pf = resolve_locked(ev->ctx, l->func);
	if (pf && pf->k && guard)
		arm = guard_pick_locked(pf, k->name, units, arms, l->stream, !capturing);
	if (arm == GX_BS_ORIG || (arm == GX_BS_COPY && m == GX_WORK_CLAIM && capturing)) {
		pthread_mutex_unlock(&bs_lock);
		/* the original is faster (or being timed), or the copy would claim
		 * in a captured stream */
		return arm == GX_BS_ORIG ? (unchanged(GX_STATS_BS_GUARD), CUDA_SUCCESS) : fallback(FB_CAPTURE, k->name);
	}
	bool st = arm == GX_BS_STATIC;
	int am = st ? GX_WORK_STATIC : m, aocc = st ? occ_s : occ;
	CUfunction lf = st ? scopy : copy;
	const char *lname = st ? k->scopy : k->copy;
	unsigned long long workers = (unsigned long long)aocc * (unsigned)sm_count[dev];
	if (workers > units)
		workers = units;
	struct gx_work_desc d = {
		.total = (unsigned)units,
		.grid_x = l->grid[0],
		.grid_y = l->grid[1],
		.grid_z = l->grid[2],
		.mode = (unsigned)am,
		.chunk = 1,
	};
	if (pf && pf->k) {
		announce = !(pf->announced & (1u << arm));
		pf->announced |= 1u << arm;
		nth = pf->launches++;
	}
	if (pf && pf->k && am == GX_WORK_CLAIM) {
		unsigned long long per = workers * chunks_per_worker;
		d.chunk = (unsigned)((units + per - 1) / per);
		unsigned nchunks = (unsigned)((units + d.chunk - 1) / d.chunk);
		d.state = bs_state_get(ev->ctx, l->stream, nchunks);
		if (d.state && tag[0])
			d.hints = bs_hints_get(ev->ctx, l->stream, &pf->hints, &pf->hints_cap, nchunks);
		if (d.state)
			d.stats = bs_log_sample(ev->ctx, k->name, nth, (unsigned)workers, (unsigned)units, d.chunk,
						l->grid, (unsigned)occ, (unsigned)sm_count[dev]);
	}
	pthread_mutex_unlock(&bs_lock);
	if (!pf || !pf->k)
		return guard_untimed(), CUDA_SUCCESS; /* unloaded meanwhile: as it is */
	if (am == GX_WORK_CLAIM && !d.state)
		return guard_untimed(), fallback(FB_MEM, k->name);
	if (k->nparams > t->cap) {
		void **np = realloc(t->params, k->nparams * sizeof(*np));
		if (!np)
			return guard_untimed(), fallback(FB_MEM, k->name);
		t->params = np, t->cap = k->nparams;
	}
	for (unsigned i = 0; i + 1 < k->nparams; i++)
		t->params[i] = l->kernel_params[i];
	t->desc = d;
	t->params[k->nparams - 1] = &t->desc;

	if (announce)
		bs_log_decision(k->name,
				"launched as %s, %llu workers (%d per SM x %d SMs, capped at %llu blocks), %s%s%s",
				lname, workers, aocc, sm_count[dev], units, am == GX_WORK_STATIC ? "static" : "claim",
				am == GX_WORK_STATIC ? ""
				: k->unit_bar	     ? ", unit barrier"
						     : ", no unit barrier",
				!tag[0] ? ""
				: guard ? ", guarded (timed against the original)"
					: ", UNGUARDED (gx_sched_guard=0: the copy runs even where it is slower)");
	__atomic_fetch_add(am == GX_WORK_STATIC ? &n_static : &n_claim, 1, __ATOMIC_RELAXED);
	l->func = lf;
	l->is_kernel = 0;
	l->name = lname;
	l->grid[0] = (unsigned)workers, l->grid[1] = 1, l->grid[2] = 1;
	l->kernel_params = t->params;
	l->extra = NULL;
	return CUDA_SUCCESS;
}

static CUresult dispatch(struct gx_event *ev)
{
	switch (ev->kind) {
	case GX_EV_LAUNCH:
		return on_launch(ev);
	case GX_EV_LAUNCH_DONE:
		guard_launched();
		return CUDA_SUCCESS;
	case GX_EV_GRAPH_KERNEL_NODE: {
		/* STATIC copies could be given here too; graph nodes keep the
		 * original (one fallback line says so). */
		void *f = ev->graph.params.func ? (void *)ev->graph.params.func : (void *)ev->graph.params.kern;
		pthread_mutex_lock(&bs_lock);
		struct pfunc *pf = ev->ctx && f ? resolve_locked(ev->ctx, f) : NULL;
		char name[256] = "";
		if (pf && pf->k)
			snprintf(name, sizeof(name), "%s", pf->k->name);
		pthread_mutex_unlock(&bs_lock);
		if (name[0])
			fallback(FB_GRAPH, name);
		return CUDA_SUCCESS;
	}
	case GX_EV_SYNC:
		pthread_mutex_lock(&bs_lock);
		bs_log_poll(false);
		if (ev->ctx)
			bs_retired_reap(ev->ctx, false);
		pthread_mutex_unlock(&bs_lock);
		return CUDA_SUCCESS;
	case GX_EV_MODULE_UNLOAD:
		pthread_mutex_lock(&bs_lock);
		forget_mod_locked(ev->module.handle);
		pthread_mutex_unlock(&bs_lock);
		return CUDA_SUCCESS;
	case GX_EV_STREAM_DESTROY:
		pthread_mutex_lock(&bs_lock);
		bs_mem_stream_gone(ev->ctx, ev->stream.stream);
		pthread_mutex_unlock(&bs_lock);
		return CUDA_SUCCESS;
	case GX_EV_CTX_DESTROY: {
		/* Device memory goes with the context. */
		pthread_mutex_lock(&bs_lock);
		bs_log_ctx_gone(ev->ctx);
		bs_mem_ctx_gone(ev->ctx);
		struct pfunc *f, *ft;
		HASH_ITER(hh, funcs, f, ft)
		{
			if (f->key.ctx == ev->ctx) {
				HASH_DEL(funcs, f);
				pfunc_free(f, true);
			}
		}
		pthread_mutex_unlock(&bs_lock);
		return CUDA_SUCCESS;
	}
	default:
		return CUDA_SUCCESS;
	}
}

/* Our own driver calls (events, allocations, the guard's timings) in the
 * relaxed capture mode (common/gx_capture.h; bench/results/2026-12-04-gpu-run54.md: sched_app's graph
 * failed at cudaStreamEndCapture). A LAUNCH_DONE with no timing pair open
 * has nothing to do: no mode switch for it. */
static CUresult on_event(struct gx_event *ev, void *cookie)
{
	(void)cookie;
	if (ev->kind == GX_EV_LAUNCH_DONE && tl_tp.i < 0)
		return CUDA_SUCCESS;
	struct gx_capture_mode cm = gx_capture_relax(CU(cuThreadExchangeStreamCaptureMode));
	CUresult r = dispatch(ev);
	gx_capture_restore(CU(cuThreadExchangeStreamCaptureMode), cm);
	return r;
}

static void subscribe(void)
{
	/* LAUNCH_DONE (one more dispatch per launch) only for the guard's timing */
	sub_id = bs_host->subscribe(GX_EV_MASK(GX_EV_LAUNCH) | (guard_on ? GX_EV_MASK(GX_EV_LAUNCH_DONE) : 0) |
					    GX_EV_MASK(GX_EV_GRAPH_KERNEL_NODE) | GX_EV_MASK(GX_EV_MODULE_UNLOAD) |
					    GX_EV_MASK(GX_EV_STREAM_DESTROY) | GX_EV_MASK(GX_EV_CTX_DESTROY) |
					    GX_EV_MASK(GX_EV_SYNC),
				    on_event, NULL);
	if (sub_id < 0)
		pr_warn("blocksched: cannot subscribe to launches (error %d); kernels run unchanged", sub_id);
	else if (!tag[0])
		pr_info("persistent: kernels the transform accepts launch as persistent workers (%s mode)",
			mode == GX_WORK_STATIC ? "static" : "claim");
}

static void cfg(void)
{
	read_cfg();
	if (bs_host->lock_register)
		bs_host->lock_register(&bs_lock, bs_host->lock_order);
}

static void fill_opts(struct gx_ptx_rewrite_opts *opts, int m)
{
	opts->persistent = GX_PTX_PERSISTENT_COPY;
	opts->persist_rt = gx_bs_rt_ptx(&opts->persist_rt_len);
	/* copies for the selected kernels only: a module with none keeps its
	 * own code (NVIDIA's SASS where it has it: cuFFT sizes its plans by
	 * its kernels' resources, GPU run 91) */
	if (strcmp(glob, "*"))
		opts->persist_kernels = glob;
	if (m == GX_WORK_STATIC)
		opts->flags |= GX_PTX_F_PERSIST_STATIC;
	else if (guard_on)
		opts->flags |= GX_PTX_F_PERSIST_STATIC_COPY; /* the guard's third arm */
}

int gx_bs_rewrite_opts(const struct gx_bs_host *host, struct gx_ptx_rewrite_opts *opts)
{
	if (!bs_host) {
		if (!host)
			return 0;
		bs_host = host;
	}
	pthread_once(&cfg_once, cfg);
	if (mode < 0)
		return 0;
	/* The policy is attached by now (attach/ goes first): a static one
	 * gets copies without the claim path; its settings (the guard) decide
	 * what to subscribe to. */
	pthread_mutex_lock(&bs_lock);
	read_policy_locked();
	int m = mode;
	pthread_mutex_unlock(&bs_lock);
	if (m < 0)
		return 0;
	pthread_once(&sub_once, subscribe);
	if (sub_id < 0)
		return 0;
	fill_opts(opts, m);
	return 1;
}

/* ---- live: started and stopped on the shim's control thread ---- */

int gx_bs_live_start(const struct gx_bs_host *host, const char *spec)
{
	if (!bs_host && host)
		bs_host = host;
	if (!bs_host)
		return -ENODEV;
	pthread_once(&cfg_once, cfg); /* GPUEXT_PERSISTENT from the start: mode set */
	pthread_mutex_lock(&bs_lock);
	int ret = 0;
	char obj[4096], knobs[1024];
	if (live || mode >= 0 || sub_id >= 0) {
		ret = -EBUSY;
	} else if (gx_bs_parse_spec(spec, obj, sizeof(obj), knobs, sizeof(knobs), glob, sizeof(glob))) {
		ret = -EINVAL;
	} else {
		char *b = basename(obj), *dot = strstr(b, ".bpf.o");
		snprintf(tag, sizeof(tag), "%.*s", (int)(dot ? (size_t)(dot - b) : strlen(b)), b);
		mode = GX_WORK_CLAIM;
		chunks_per_worker = GX_BS_DEFAULT_CHUNKS;
		guard_on = false;
		policy_checked = false;
		memset(fb_said, 0, sizeof(fb_said));
		read_policy_locked(); /* its mode, chunks and guard: what to subscribe to */
		if (mode < 0)
			ret = -ENODEV;
	}
	if (ret) {
		if (ret != -EBUSY)
			mode = -1, tag[0] = 0;
		pthread_mutex_unlock(&bs_lock);
		return ret;
	}
	pthread_mutex_unlock(&bs_lock);
	subscribe();
	if (sub_id < 0) {
		pthread_mutex_lock(&bs_lock);
		mode = -1;
		tag[0] = 0;
		pthread_mutex_unlock(&bs_lock);
		return -ENOSPC;
	}
	live_base[0] = __atomic_load_n(&n_claim, __ATOMIC_RELAXED);
	live_base[1] = __atomic_load_n(&n_static, __ATOMIC_RELAXED);
	for (int i = 0; i < GX_STATS_BS__COUNT; i++)
		live_base[2 + i] = __atomic_load_n(&n_unchanged[i], __ATOMIC_RELAXED);
	live = true;
	return 0;
}

void gx_bs_live_counts(uint64_t *claim, uint64_t *stat, uint64_t *as_is)
{
	*claim = __atomic_load_n(&n_claim, __ATOMIC_RELAXED) - live_base[0];
	*stat = __atomic_load_n(&n_static, __ATOMIC_RELAXED) - live_base[1];
	*as_is = 0;
	for (int i = 0; i < GX_STATS_BS__COUNT; i++)
		*as_is += __atomic_load_n(&n_unchanged[i], __ATOMIC_RELAXED) - live_base[2 + i];
}

int gx_bs_live_rewrite_opts(struct gx_ptx_rewrite_opts *opts)
{
	if (!live)
		return 0;
	pthread_mutex_lock(&bs_lock);
	int m = mode;
	pthread_mutex_unlock(&bs_lock);
	if (m < 0)
		return 0;
	fill_opts(opts, m);
	return 1;
}

void gx_bs_live_stop(bool keep_device)
{
	if (!live)
		return;
	if (sub_id >= 0 && bs_host->sz > offsetof(struct gx_bs_host, unsubscribe) && bs_host->unsubscribe)
		bs_host->unsubscribe(sub_id);
	sub_id = -1;
	pthread_mutex_lock(&bs_lock);
	bs_log_poll(true);
	mode = -1;
	tag[0] = 0;
	snprintf(glob, sizeof(glob), "*");
	policy_checked = guard_on = false;
	forget_all_locked(true);
	if (keep_device)
		bs_mem_reset(); /* forgotten, not freed: a graph may still use them */
	else
		bs_mem_free_all();
	live = false;
	pthread_mutex_unlock(&bs_lock);
}

void gx_bs_reset(void)
{
	pthread_mutex_lock(&bs_lock);
	forget_all_locked(false); /* also at exit, when the driver may be gone: events leak */
	bs_mem_reset();
	pthread_mutex_unlock(&bs_lock);
}

__attribute__((destructor)) static void bs_fini(void)
{
	if (bs_host) {
		pthread_mutex_lock(&bs_lock);
		bs_log_poll(true);
		pthread_mutex_unlock(&bs_lock);
	}
	gx_bs_reset(); /* no leaks reported at exit */
}
