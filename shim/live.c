/* live.c — `gpuext attach PID` / `gpuext detach PID`: device tools and
 * policies attached to a process that is already running (docs/attach.md).
 *
 * Before any attach this costs the launch path nothing: no subscriber, so
 * the launch wrappers stay three instructions (launch_fast.S). What runs is
 * one thread, started at cuInit, asleep on an inotify watch of the control
 * folder (common/gx_ctl.h), and the PTX of passed-through cubins that carry
 * it (Triton's) kept with their modules (tables.c) at load.
 *
 * Attach (on that thread, never the application's): load the policies
 * (attach/: JIT cache or libgxjit.so, refused whole if any fails), start
 * their device runtime with its maps and tool logs in the CLI's run folder,
 * then for every module already loaded rewrite the PTX it was loaded from
 * with the hooks (through the module cache) and load that as a *copy* —
 * with the module's context pushed, in the relaxed capture mode, never
 * synchronizing an application stream. The application's handles keep
 * pointing at its own modules; when every copy is loaded one flag flips and
 * launches (a launch-event subscriber, first in line so the device runtime
 * sees the copy) run the copy's function of the same name. Functions are
 * resolved at their first launch after the flip and remembered (a miss is
 * remembered too: SASS-only kernels cost one lookup). Modules loaded while
 * attached get their copy right after their load. Graph kernel nodes added
 * while attached get the copy too; graphs instantiated earlier keep their
 * kernels.
 *
 * Detach: the flag flips back (launches run the originals again), then the
 * thread waits for every instrumented launch to complete without waiting
 * on the application: the last instrumented launch on each stream recorded
 * an event after the driver accepted it (per thread for the per-thread
 * default stream), and the thread polls those events. Then the device
 * runtime's last drain and flush, the tool logs closed, the device maps
 * freed and the copies unloaded. Copies used by graphs (captured launches,
 * kernel nodes) stay loaded with their maps until exit: a graph may run
 * again at any time. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <uthash.h>

#include "attach/gx_attach.h"
#include "blocksched/gx_blocksched.h"
#include "common/gx_capture.h"
#include "common/gx_ctl.h"
#include "common/gx_tls.h"
#include "common/gx_trust.h"
#include "devbpf/gx_bpf.h"
#include "shim/graph_internal.h"
#include "shim/hostpolicy_internal.h"
#include "shim/load_internal.h"
#include "shim/shim_ev_internal.h"
#include "shim/tables_internal.h"
#include "shim/tenancy_internal.h"

struct copy {
	void *orig;    /* the application's module or library */
	CUcontext ctx; /* NULL: a library */
	bool is_library;
	bool vars; /* has (read-only) module variables of its own: retired if the host takes an address */
	bool dead; /* its context was destroyed, and the copy with it */
	unsigned id;
	void *handle;		   /* our instrumented copy */
	struct copy *next_retired; /* retired: unloaded at the detach */
	UT_hash_handle hh;
};
struct fn_key {
	void *f;
	CUcontext ctx; /* NULL for CUkernels */
};
struct fn_map {
	struct fn_key key;
	void *mod;		     /* the application's module or library of f (instr is in its copy) */
	void *instr;		     /* NULL: no copy to run (SASS only, no hooks) */
	bool instr_is_kernel;	     /* instr is a CUkernel */
	unsigned max_dyn;	     /* dynamic shared memory carried over to instr so far */
	unsigned long long launches; /* of f, switched or not (GPUEXT_LAUNCH_SAMPLE) */
	bool stale;		     /* its module's copy changed: resolved again at the next launch */
	UT_hash_handle hh;
};
struct sev_key {
	CUcontext ctx;
	CUstream s;
	pthread_t t; /* the per-thread default stream is one per thread */
};
struct sev { /* the last instrumented launch on a stream */
	struct sev_key key;
	CUevent ev;
	UT_hash_handle hh;
};

struct gseen_key { /* a graph exec's kernel list, launched while attached */
	CUgraphExec e;
	unsigned long long gen;
};
struct gseen {
	struct gseen_key key;
	UT_hash_handle hh;
};

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static int phase;     /* 0 idle, 1 attaching or attached (new modules get copies) */
static bool on;	      /* launches run the copies */
static bool sched_on; /* blocksched runs live (--sched): the copies carry persistent workers */
static struct copy *copies;
static struct copy *retired; /* copies that no longer stand in for their module */
static struct fn_map *fns;
/* gx_live_state_taken was called for a library's module: which library
 * is unknown, so no library with variables gets a copy */
static bool lib_state_unknown;
static struct sev *sevs;
static long inflight;	/* switched launches the driver has not returned from */
static bool graph_used; /* a copy went into a graph: kept until exit */
static unsigned long long nr_launches, nr_instr, nr_graph_nodes;
static unsigned long long nr_graph_old; /* launches of execs instantiated before the attach */
static unsigned long long attach_gen;	/* graph_exec.c's last list gen at the attach */
static struct gseen *gseens;
static int sub_id = -1;
static uint64_t req_t0; /* when the attach request was read (ms) */
static char attached[512], run_dir[4096], ctl_dir[4096];
static char host_dir[4096]; /* the run folder of the host policies attached live */
static volatile int exiting, busy;
static void live_exit(void);
static __thread struct {
	bool pending; /* a switched launch of this thread is being submitted */
	CUcontext ctx;
	CUstream s;
	struct fc_slot *fc; /* fc_heap's block of this thread */
} tl GX_TLS_IE;

/* The switch's per-thread memo of resolved functions, for the launches of
 * the launch sample (GPUEXT_LAUNCH_SAMPLE, GPUEXT_JIT_ASYNC: no attach in
 * progress): the sampled default puts every launch of a kernel with a copy
 * through the switch, and under live_lock its lookup, lock and count cost
 * ~370 instructions a launch (bench/launch_cost.sh), more than a tool on
 * every launch, and serialise an application's launching threads. A slot is
 * good while fns_gen has not moved: entries are freed only when the
 * application unloads their module or destroys their context (a launch of
 * that function racing with it is the application's own error) or at a
 * detach; a copy filed or retired marks them stale instead (fns_forget), so
 * a launch racing with that reads a live entry. */
#define FC_SLOTS 64
struct fc_slot {
	void *f;
	CUcontext ctx; /* fn_key's: NULL for CUkernels */
	struct fn_map *m;
	unsigned long gen; /* 0: empty (fns_gen starts at 1) */
};
static unsigned long fns_gen = 1; /* bumped (live_lock held) when entries of fns are freed */
static bool fc_used;		  /* some launch took the memo: a detach keeps fns' entries */
static void fc_gone(void *blk)
{
	(void)blk;
	tl.fc = NULL;
}
static struct gx_tls_heap fc_heap = GX_TLS_HEAP(sizeof(struct fc_slot) * FC_SLOTS, fc_gone);

static struct fc_slot *fc_slot(const void *f)
{
	uintptr_t h = (uintptr_t)f;
	return &tl.fc[(h >> 4 ^ h >> 10) % FC_SLOTS];
}

static bool live_enabled(void)
{
	static int en = -1;
	if (en < 0) {
		const char *e = getenv("GPUEXT_ATTACH");
		gx_config_load();
		en = !gx_config.disabled && !(e && !strcmp(e, "0"));
	}
	return en;
}

bool gx_live_keeps_src(void)
{
	return live_enabled() && gx_initialized;
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- the switch (application threads, launch events) ---- */

/* The copy's function of the same name as f (live_lock held): NULL when
 * its module has none; *modp: f's module. */
static void *fn_resolve(CUcontext ctx, void *f, void **modp, bool *iskp)
{
	char name[GX_TAB_NAME_MAX];
	bool isk = false;
	void *mod = NULL, *out = NULL;
	struct copy *c = NULL;
	if (!gx_tab_func_info(ctx, f, name, sizeof(name), &isk, &mod))
		HASH_FIND_PTR(copies, &mod, c);
	*modp = mod;
	*iskp = isk;
	if (!c || !c->handle)
		return NULL;
	/* may load the library into this context: relaxed, as our own call */
	struct gx_capture_mode cm = gx_capture_relax(REAL(cuThreadExchangeStreamCaptureMode));
	CUkernel k = NULL;
	if (!c->is_library) {
		if (REAL(cuModuleGetFunction)((CUfunction *)&out, c->handle, name) != CUDA_SUCCESS)
			out = NULL;
	} else if (REAL(cuLibraryGetKernel)(&k, c->handle, name) != CUDA_SUCCESS) {
		out = NULL;
	} else if (isk) {
		out = k;
	} else if (REAL(cuKernelGetFunction)((CUfunction *)&out, k) != CUDA_SUCCESS) {
		out = NULL;
	}
	gx_capture_restore(REAL(cuThreadExchangeStreamCaptureMode), cm);
	if (!out)
		pr_warn("attach: kernel %s: not found in its instrumented copy; it runs uninstrumented", name);
	else if (sched_on) /* blocksched, next in line, finds the copy's kernel by name and module */
		gx_tab_add_func(ctx, out, c->handle, isk, name);
	return out;
}

/* The copy's function for f (live_lock held), resolved once (again when
 * its entry went stale: its count starts over, as for a new copy); its
 * entry in *mp (NULL when out of memory). */
static void *fn_lookup(CUcontext ctx, void *f, bool is_kernel, struct fn_map **mp)
{
	struct fn_key key = { .f = f, .ctx = is_kernel ? NULL : ctx };
	struct fn_map *m;
	HASH_FIND(hh, fns, &key, sizeof(key), m);
	*mp = m;
	if (m && !m->stale)
		return m->instr;
	bool isk = false;
	void *mod = NULL, *out = fn_resolve(ctx, f, &mod, &isk);
	if (!m && (m = calloc(1, sizeof(*m)))) {
		m->key = key;
		HASH_ADD(hh, fns, key, sizeof(key), m);
	}
	if (m) {
		m->mod = mod;
		m->instr_is_kernel = out && isk;
		m->max_dyn = 0;
		__atomic_store_n(&m->launches, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&m->instr, out, __ATOMIC_RELAXED);
		__atomic_store_n(&m->stale, false, __ATOMIC_RELEASE);
	}
	*mp = m;
	return out;
}

/* The application's dynamic shared memory limit, set on its own function
 * (cuFuncSetAttribute / cuKernelSetAttribute), carried over to the copy's
 * before a launch that needs more than the default 48 KiB (live_lock
 * held). false: the launch runs the original (the copy cannot get it). */
static bool smem_carry(struct fn_map *m, void *orig, bool is_kernel, unsigned smem)
{
	const CUfunction_attribute a = CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
	if (smem <= 48 * 1024 || smem <= m->max_dyn)
		return true;
	int v = 0;
	CUdevice d = 0;
	struct gx_capture_mode cm = gx_capture_relax(REAL(cuThreadExchangeStreamCaptureMode));
	bool dev = !(is_kernel || m->instr_is_kernel) || REAL(cuCtxGetDevice)(&d) == CUDA_SUCCESS;
	bool ok = dev && (is_kernel ? REAL(cuKernelGetAttribute)(&v, a, (CUkernel)orig, d)
				    : REAL(cuFuncGetAttribute)(&v, a, (CUfunction)orig)) == CUDA_SUCCESS;
	ok = ok && v >= (int)smem &&
	     (m->instr_is_kernel ? REAL(cuKernelSetAttribute)(a, v, (CUkernel)m->instr, d)
				 : REAL(cuFuncSetAttribute)((CUfunction)m->instr, a, v)) == CUDA_SUCCESS;
	gx_capture_restore(REAL(cuThreadExchangeStreamCaptureMode), cm);
	if (ok)
		m->max_dyn = (unsigned)v;
	else
		pr_warn_once("attach: a launch needs %u bytes of dynamic shared memory its instrumented copy cannot "
			     "get: such launches run the original",
			     smem);
	return ok;
}

/* After the driver took a switched launch: an event behind it on its
 * stream (live_lock held, application thread). A stream being captured
 * puts the copy into a graph instead. */
static void stream_mark(CUcontext ctx, CUstream s)
{
	CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
	if (REAL(cuStreamIsCapturing)(s, &cs) != CUDA_SUCCESS || cs != CU_STREAM_CAPTURE_STATUS_NONE) {
		if (!graph_used)
			pr_info("attach: an instrumented launch was captured into a graph: its copy stays loaded until "
				"exit");
		graph_used = true;
		return;
	}
	struct sev_key key = { .ctx = ctx, .s = s, .t = s == CU_STREAM_PER_THREAD ? pthread_self() : 0 };
	struct sev *e;
	HASH_FIND(hh, sevs, &key, sizeof(key), e);
	if (!e && (e = calloc(1, sizeof(*e)))) {
		struct gx_capture_mode cm = gx_capture_relax(REAL(cuThreadExchangeStreamCaptureMode));
		if (REAL(cuEventCreate)(&e->ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
			free(e);
			e = NULL;
		} else {
			e->key = key;
			HASH_ADD(hh, sevs, key, sizeof(key), e);
		}
		gx_capture_restore(REAL(cuThreadExchangeStreamCaptureMode), cm);
	}
	if (!e || REAL(cuEventRecord)(e->ev, s) != CUDA_SUCCESS) {
		pr_warn_once("attach: cannot record an event behind an instrumented launch: its copy stays loaded "
			     "until exit");
		graph_used = true;
	}
}

/* A graph launch while attached (live_lock held): an exec whose kernel
 * list is older than the attach runs the application's own functions. One
 * line per such exec, at its first launch; every launch counted. */
static void graph_launched(const struct gx_graph_launch_event *g)
{
	if (g->gen && g->gen > attach_gen)
		return;
	nr_graph_old++;
	struct gseen_key key = { .e = g->exec, .gen = g->gen };
	struct gseen *x;
	HASH_FIND(hh, gseens, &key, sizeof(key), x);
	if (x || !(x = calloc(1, sizeof(*x))))
		return;
	x->key = key;
	HASH_ADD(hh, gseens, key, sizeof(key), x);
	if (g->gen)
		pr_info("attach: graph exec %p: instantiated before attach, its %u kernel nodes run uninstrumented",
			(void *)g->exec, g->nodes);
	else
		pr_info("attach: graph exec %p: instantiated before attach, its kernel nodes (not listed) run "
			"uninstrumented",
			(void *)g->exec);
}

/* f (the copy's function for m), or NULL for a launch off the launch
 * sample (GPUEXT_LAUNCH_SAMPLE): it runs the original. Counts the launch. */
static void *sample_pick(struct fn_map *m, void *f)
{
	if (f && gx_launch_sample_active() && !gx_launch_sampled(__atomic_add_fetch(&m->launches, 1, __ATOMIC_RELAXED)))
		return NULL;
	return f;
}

/* A launch through the memo, without live_lock: true when taken (ev
 * switched or not, counted), false for the locked path. Only with no
 * attach in progress (nothing waits on the launch's completion), a launch
 * within the default 48 KiB of dynamic shared memory (nothing to carry to
 * the copy), a slot of the current generation and an entry resolved. */
static bool switch_memo(struct gx_event *ev)
{
	if (!__atomic_load_n(&on, __ATOMIC_ACQUIRE) || __atomic_load_n(&phase, __ATOMIC_ACQUIRE) || !tl.fc ||
	    ev->launch.shared_mem > 48 * 1024)
		return false;
	const struct fc_slot *sl = fc_slot(ev->launch.func);
	CUcontext kctx = ev->launch.is_kernel ? NULL : ev->ctx;
	if (sl->gen != __atomic_load_n(&fns_gen, __ATOMIC_ACQUIRE) || sl->f != ev->launch.func || sl->ctx != kctx)
		return false;
	struct fn_map *m = sl->m;
	if (__atomic_load_n(&m->stale, __ATOMIC_ACQUIRE))
		return false;
	void *f = sample_pick(m, __atomic_load_n(&m->instr, __ATOMIC_RELAXED));
	__atomic_add_fetch(&nr_launches, 1, __ATOMIC_RELAXED);
	if (f) {
		ev->launch.func = f;
		__atomic_add_fetch(&nr_instr, 1, __ATOMIC_RELAXED);
	}
	return true;
}

/* Remember f's entry in this thread's memo (live_lock held, no attach in
 * progress). */
static void memo_fill(void *f, CUcontext ctx, bool is_kernel, struct fn_map *m)
{
	if (!tl.fc && !(tl.fc = gx_tls_heap_get(&fc_heap)))
		return;
	struct fc_slot *sl = fc_slot(f);
	sl->f = f;
	sl->ctx = is_kernel ? NULL : ctx;
	sl->m = m;
	sl->gen = fns_gen;
	fc_used = true;
}

static CUresult on_event(struct gx_event *ev, void *cookie)
{
	(void)cookie;
	if (ev->kind == GX_EV_LAUNCH_DONE && !tl.pending)
		return CUDA_SUCCESS;
	if (ev->kind == GX_EV_LAUNCH && !tl.pending && switch_memo(ev))
		return CUDA_SUCCESS;
	pthread_mutex_lock(&live_lock);
	if (ev->kind == GX_EV_LAUNCH) {
		if (tl.pending) /* this thread's last switched launch never reached the driver */
			inflight--;
		tl.pending = false;
		if (on) {
			__atomic_add_fetch(&nr_launches, 1, __ATOMIC_RELAXED);
			struct fn_map *fm;
			void *f = fn_lookup(ev->ctx, ev->launch.func, ev->launch.is_kernel, &fm);
			if (fm && !phase)
				memo_fill(ev->launch.func, ev->ctx, ev->launch.is_kernel, fm);
			if (f && fm && !smem_carry(fm, ev->launch.func, ev->launch.is_kernel, ev->launch.shared_mem))
				f = NULL;
			if (fm)
				f = sample_pick(fm, f);
			if (f && !phase) { /* GPUEXT_JIT_ASYNC's copies: nothing to wait for, ever */
				ev->launch.func = f;
				__atomic_add_fetch(&nr_instr, 1, __ATOMIC_RELAXED);
			} else if (f) {
				ev->launch.func = f;
				if (!__atomic_fetch_add(&nr_instr, 1, __ATOMIC_RELAXED)) {
					/* for tests/gpu/attach.sh: attach to first instrumented launch */
					struct timespec ts;
					clock_gettime(CLOCK_REALTIME, &ts);
					pr_info("attach: first instrumented launch at %lld.%09ld (%llu ms after the "
						"request)",
						(long long)ts.tv_sec, ts.tv_nsec,
						(unsigned long long)(now_ms() - req_t0));
				}
				inflight++;
				tl.pending = true;
				tl.ctx = ev->ctx;
				tl.s = ev->launch.stream;
			}
		}
	} else if (ev->kind == GX_EV_LAUNCH_DONE) {
		tl.pending = false;
		inflight--;
		stream_mark(tl.ctx, tl.s);
	} else if (ev->kind == GX_EV_GRAPH_LAUNCH && on) {
		graph_launched(&ev->glaunch);
	} else if (ev->kind == GX_EV_GRAPH_KERNEL_NODE && on && ev->graph.params.func) {
		struct fn_map *fm;
		void *f = fn_lookup(ev->ctx, ev->graph.params.func, false, &fm);
		if (f && fm && !smem_carry(fm, ev->graph.params.func, false, ev->graph.params.sharedMemBytes))
			f = NULL;
		if (f) {
			ev->graph.params.func = f;
			nr_graph_nodes++;
			graph_used = true;
		}
	}
	pthread_mutex_unlock(&live_lock);
	return CUDA_SUCCESS;
}

/* ---- copies ---- */

static unsigned lowest_sm(void)
{
	int n = 0;
	unsigned lo = 0;
	if (REAL(cuDeviceGetCount)(&n) == CUDA_SUCCESS)
		for (int i = 0; i < n; i++) {
			CUdevice d;
			unsigned s = REAL(cuDeviceGet)(&d, i) == CUDA_SUCCESS ? gx_dev_sm(d) : 0;
			if (s && (!lo || s < lo))
				lo = s;
		}
	return lo;
}

/* Free the resolved functions of module `mod` (those of its copy among
 * them) or of context `ctx` (each NULL: no match on it; live_lock held):
 * the module or context is gone. */
static void fns_drop(const void *mod, CUcontext ctx)
{
	struct fn_map *m, *t;
	bool freed = false;
	HASH_ITER(hh, fns, m, t)
	{
		if ((mod && m->mod == mod) || (ctx && m->key.ctx == ctx)) {
			HASH_DEL(fns, m);
			free(m);
			freed = true;
		}
	}
	if (freed)
		__atomic_add_fetch(&fns_gen, 1, __ATOMIC_RELEASE);
}

/* Module `mod`'s copy changed (filed, retired; live_lock held): its
 * functions are resolved again at their next launch. Marked, not freed: a
 * launch on the memo's path may be reading them. */
static void fns_forget(const void *mod)
{
	struct fn_map *m, *t;
	HASH_ITER(hh, fns, m, t)
	{
		if (m->mod == mod)
			__atomic_store_n(&m->stale, true, __ATOMIC_RELEASE);
	}
}

/* Copy c no longer stands in for its module: launches run the original
 * from now on; the copy stays loaded (launches may still run it) until the
 * detach unloads it (live_lock held). */
static void retire(struct copy *c)
{
	HASH_DEL(copies, c);
	fns_forget(c->orig);
	c->next_retired = retired;
	retired = c;
}

int gx_live_copy_check(const char *ptx, size_t len, bool *vars, char *name, size_t n)
{
	char err[160];
	*vars = false;
	struct gx_ptx_module *m = gx_ptx_module__parse(ptx, len, err, sizeof(err));
	if (!m)
		return -1;
	struct gx_ptx_stats st;
	gx_ptx_module__stats(m, &st);
	int bad = (int)gx_ptx_module__copy_unsafe(m, name, n);
	gx_ptx_module__free(m);
	*vars = st.vars > 0;
	return bad;
}

/* Does the host hold the address of a variable of module h (live_lock
 * held)? A library's module asked through cuLibraryGetModule counts for
 * every library. */
static bool host_holds(void *h, bool is_library)
{
	return gx_tab_host_state(h) || (is_library && lib_state_unknown);
}

/* Module-scope state (ptx-rewrite/copy_state.c): 0 when a copy can share
 * the module's, with *vars set when it has variables at all (read-only
 * ones: the copy is retired if the host takes an address later); -EPERM
 * with one line when it cannot. */
static int copy_state(const struct gx_tab_mod *tm, bool *vars)
{
	char name[128];
	int bad = gx_live_copy_check(tm->ptx, strlen(tm->ptx), vars, name, sizeof(name));
	if (bad < 0)
		return 0; /* the rewrite says why */
	pthread_mutex_lock(&live_lock);
	bool host = *vars && host_holds(tm->handle, tm->is_library);
	pthread_mutex_unlock(&live_lock);
	if (bad) {
		pr_info("attach: module %u: not instrumented: its kernels may write module variable %s%s, which an "
			"instrumented copy would not share",
			tm->id, name, bad > 1 ? " (and others)" : "");
		return -EPERM;
	}
	if (host) {
		pr_info("attach: module %u: not instrumented: the application holds the address of its module "
			"variables, which an instrumented copy would not share",
			tm->id);
		return -EPERM;
	}
	return 0;
}

/* Unload copy c (not in any list; live_lock not held). */
static void copy_unload(const struct copy *c)
{
	CUcontext popped;
	gx_tab_forget_funcs(c->handle);
	if (c->is_library) {
		REAL(cuLibraryUnload)(c->handle);
	} else if (REAL(cuCtxPushCurrent_v2)(c->ctx) == CUDA_SUCCESS) {
		REAL(cuModuleUnload)(c->handle);
		REAL(cuCtxPopCurrent_v2)(&popped);
	}
}

/* The application unloaded its module: the copy goes with it, now. Its
 * launches were the application's launches of that module, so whatever
 * made the application's unload safe (it waited for them) covers the copy
 * too. Kept until the detach only when a graph may run it. */
void gx_live_unloaded(void *handle)
{
	pthread_mutex_lock(&live_lock);
	struct copy *c = NULL;
	HASH_FIND_PTR(copies, &handle, c);
	if (c && graph_used) {
		retire(c);
		c = NULL;
	} else if (c) {
		HASH_DEL(copies, c);
	}
	fns_drop(handle, NULL);
	bool sched = sched_on;
	int ph = phase;
	pthread_mutex_unlock(&live_lock);
	if (c) {
		pr_info("%smodule %u: unloaded by the application, its instrumented copy with it", ph ? "attach: " : "",
			c->id);
		if (sched) /* forgotten by blocksched first */
			gx_sched_module(c->handle, c->is_library, "", NULL);
		copy_unload(c);
		free(c);
	}
}

void gx_live_ctx_gone(CUcontext ctx)
{
	if (!ctx)
		return;
	pthread_mutex_lock(&live_lock);
	struct copy *c, *t;
	HASH_ITER(hh, copies, c, t)
	{
		if (c->ctx == ctx) {
			c->dead = true;
			retire(c);
		}
	}
	fns_drop(NULL, ctx);
	struct sev *e, *et;
	HASH_ITER(hh, sevs, e, et)
	{
		if (e->key.ctx == ctx) { /* its event went with the context */
			HASH_DEL(sevs, e);
			free(e);
		}
	}
	pthread_mutex_unlock(&live_lock);
}

void gx_live_state_taken(void *handle)
{
	pthread_mutex_lock(&live_lock);
	if (!handle)
		lib_state_unknown = true;
	struct copy *c, *t;
	HASH_ITER(hh, copies, c, t)
	{
		if (c->vars && (handle ? c->orig == handle : c->is_library)) {
			pr_info("%smodule %u: the application asked for the address of a module variable: its "
				"launches run the original from now on (its instrumented copy has variables of its own)",
				phase ? "attach: " : "", c->id);
			retire(c);
		}
	}
	pthread_mutex_unlock(&live_lock);
}

int gx_live_async_start(void)
{
	pthread_mutex_lock(&live_lock);
	if (sub_id < 0) /* first in line, as for an attach: the device runtime sees the copy */
		sub_id = gx_events_subscribe(GX_EV_MASK(GX_EV_LAUNCH) | GX_EV_MASK(GX_EV_GRAPH_KERNEL_NODE), on_event,
					     NULL);
	__atomic_store_n(&on, sub_id >= 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&live_lock);
	return sub_id < 0 ? sub_id : 0;
}

/* File `handle` as the copy of module orig, number id (live_lock held):
 * 0; -ESTALE when orig is no longer that module (unloaded meanwhile: the
 * driver may give its handle to the next load) or has a copy already;
 * -EPERM when it has variables and the host holds an address of one
 * (asked since the copy was judged); -ENOMEM. */
static int copy_file(void *orig, CUcontext ctx, bool is_library, unsigned id, bool vars, void *handle)
{
	struct copy *c = NULL;
	unsigned mid = 0;
	bool rw = false;
	HASH_FIND_PTR(copies, &orig, c);
	if (c || gx_tab_mod_info(orig, &mid, &rw) || mid != id)
		return -ESTALE;
	if (vars && host_holds(orig, is_library))
		return -EPERM;
	if (!(c = calloc(1, sizeof(*c))))
		return -ENOMEM;
	c->orig = orig;
	c->ctx = ctx;
	c->is_library = is_library;
	c->vars = vars;
	c->id = id;
	c->handle = handle;
	HASH_ADD_PTR(copies, orig, c);
	fns_forget(orig); /* its launches so far found no copy */
	return 0;
}

bool gx_live_async_add(void *orig, CUcontext ctx, bool is_library, unsigned id, bool vars, void *copy)
{
	pthread_mutex_lock(&live_lock);
	int f = copy_file(orig, ctx, is_library, id, vars, copy);
	pthread_mutex_unlock(&live_lock);
	if (f == -EPERM)
		pr_info("module %u: the application asked for a module variable's address: its instrumented copy is "
			"not used",
			id);
	else if (f == -ESTALE)
		pr_info("module %u: unloaded before its instrumented copy was ready", id);
	return !f;
}

/* The instrumented copy of one module: 1 made, 0 nothing to hook, -errno. */
static int copy_make(struct gx_tab_mod *tm)
{
	struct gx_prep p = { .id = tm->id };
	CUcontext popped;
	unsigned sm = 0;
	bool pushed = false, vars = false;
	int ret = 0;
	void *h = NULL;
	if (!tm->is_library) {
		CUdevice d;
		if (!tm->ctx || REAL(cuCtxPushCurrent_v2)(tm->ctx) != CUDA_SUCCESS)
			return -ENODEV;
		pushed = true;
		sm = REAL(cuCtxGetDevice)(&d) == CUDA_SUCCESS ? gx_dev_sm(d) : 0;
	} else {
		sm = lowest_sm();
	}
	if (!sm) {
		ret = -ENODEV;
	} else if ((ret = copy_state(tm, &vars)) < 0) {
		/* said */
	} else if (!gx_prep_rewrite_live(tm->ptx, strlen(tm->ptx), sm, &p)) {
		pr_warn("attach: module %u: not instrumented: %s", tm->id, p.why);
		ret = -EINVAL;
	} else if (!p.nr_hooks && !p.nr_persistent) {
		pr_debug("attach: module %u: nothing to hook", tm->id);
	} else if (!tm->is_library && gx_attach_live_ctx_ready()) {
		pr_warn("attach: module %u: its context has no device maps; not instrumented", tm->id);
		ret = -EIO;
	} else {
		/* as a cubin from the module cache where it can (cubin.c): a
		 * second attach, or another process's, compiles nothing */
		void *cub = NULL;
		size_t clen = 0;
		CUresult rc = CUDA_ERROR_INVALID_IMAGE;
		if (gx_prep_cubin(&p, tm->is_library, 0, NULL, &cub, &clen)) {
			rc = tm->is_library
				     ? REAL(cuLibraryLoadData)((CUlibrary *)&h, cub, NULL, NULL, 0, NULL, NULL, 0)
				     : REAL(cuModuleLoadData)((CUmodule *)&h, cub);
			free(cub);
		}
		if (rc != CUDA_SUCCESS)
			rc = tm->is_library
				     ? REAL(cuLibraryLoadData)((CUlibrary *)&h, p.ptx, NULL, NULL, 0, NULL, NULL, 0)
				     : REAL(cuModuleLoadData)((CUmodule *)&h, p.ptx);
		if (rc != CUDA_SUCCESS) {
			char b[96];
			pr_warn("attach: module %u: the driver rejected its instrumented copy: %s; not instrumented",
				tm->id, gx_cu_errname(rc, b, sizeof(b)));
			ret = -EIO;
		} else {
			const char *cub = p.cubin == GX_CUBIN_CACHED ? ", cubin cached" : "";
			if (p.cubin == GX_CUBIN_JIT)
				cub = ", cubin JIT-compiled";
			char pw[64] = "";
			if (p.nr_persistent)
				snprintf(pw, sizeof(pw), ", %u kernels with persistent copies", p.nr_persistent);
			pr_info("attach: module %u: instrumented copy loaded (%u hooks%s%s%s)", tm->id, p.nr_hooks, pw,
				p.cached ? ", from the module cache" : "", cub);
			ret = 1;
			/* before any launch can be switched to it: blocksched knows
			 * its persistent copies */
			if (p.log)
				gx_sched_module(h, tm->is_library, p.log, NULL);
		}
	}
	gx_prep_free(&p);
	if (ret == 1) {
		pthread_mutex_lock(&live_lock);
		/* not while detached; not twice (a load racing with the attach) */
		int f = phase ? copy_file(tm->handle, tm->ctx, tm->is_library, tm->id, vars, h) : -ESTALE;
		pthread_mutex_unlock(&live_lock);
		if (!f)
			h = NULL;
		if (f == -EPERM) { /* judged again by the next attach */
			pr_info("attach: module %u: the application asked for a module variable's address meanwhile: "
				"not instrumented",
				tm->id);
			ret = -EPERM;
		}
		if (h) { /* made twice (a load racing with the attach), unloaded or detached meanwhile */
			gx_sched_module(h, tm->is_library, "", NULL); /* forgotten by blocksched */
			tm->is_library ? REAL(cuLibraryUnload)(h) : REAL(cuModuleUnload)(h);
		}
	}
	if (pushed)
		REAL(cuCtxPopCurrent_v2)(&popped);
	return ret;
}

static int copy_of(void *handle)
{
	struct gx_tab_mod tm = { 0 };
	int r = gx_tab_mod_source(handle, &tm);
	if (r == -ENODATA) {
		pr_info("attach: module %u: no PTX kept (SASS only): host-side only", tm.id);
		return 0;
	}
	if (!r)
		r = copy_make(&tm);
	free(tm.ptx);
	return r;
}

void gx_live_loaded(void *handle)
{
	pthread_mutex_lock(&live_lock);
	int ph = phase;
	pthread_mutex_unlock(&live_lock);
	if (ph)
		copy_of(handle);
}

/* Device maps in every active primary context, and libraries' copies
 * loaded there now, not by the first launch. */
static void ctx_prepare(void)
{
	int n = 0;
	if (REAL(cuDeviceGetCount)(&n) != CUDA_SUCCESS)
		return;
	for (int i = 0; i < n; i++) {
		CUdevice d;
		unsigned flags = 0;
		int active = 0;
		CUcontext c = NULL, popped;
		if (REAL(cuDeviceGet)(&d, i) != CUDA_SUCCESS ||
		    REAL(cuDevicePrimaryCtxGetState)(d, &flags, &active) != CUDA_SUCCESS || !active ||
		    REAL(cuDevicePrimaryCtxRetain)(&c, d) != CUDA_SUCCESS)
			continue;
		if (REAL(cuCtxPushCurrent_v2)(c) == CUDA_SUCCESS) {
			gx_attach_live_ctx_ready();
			pthread_mutex_lock(&live_lock);
			struct copy *x, *t;
			HASH_ITER(hh, copies, x, t)
			{
				CUmodule m;
				if (x->is_library)
					REAL(cuLibraryGetModule)(&m, x->handle);
			}
			pthread_mutex_unlock(&live_lock);
			REAL(cuCtxPopCurrent_v2)(&popped);
		}
		REAL(cuDevicePrimaryCtxRelease_v2)(d);
	}
}

/* ---- requests (the control thread) ---- */

static __thread char *cap_line; /* this thread's last warning, for the reply */
static gx_print_fn prev_print;
/* While the control thread loads policies, their warnings are held back:
 * a refusal is one line, naming the last of them. */
static void cap_print(enum gx_log_level level, const char *fmt, va_list ap)
{
	if (cap_line && level <= GX_LOG_WARN) {
		vsnprintf(cap_line, 400, fmt, ap);
		return;
	}
	prev_print(level, fmt, ap);
}

static void ps_write(void)
{
	static char cmd[256];
	static int gpus = -1;
	if (!cmd[0]) {
		int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, cmd, sizeof(cmd) - 1) : -1;
		if (fd >= 0)
			close(fd);
		for (ssize_t i = 0; i < n; i++)
			if ((unsigned char)cmd[i] < 0x20)
				cmd[i] = ' ';
		cmd[n > 0 ? n : 0] = 0;
		while (n > 0 && cmd[n - 1] == ' ')
			cmd[--n] = 0;
		if (REAL(cuDeviceGetCount)(&gpus) != CUDA_SUCCESS)
			gpus = 0;
	}
	char buf[6000], name[64], host[200];
	gx_hostpolicy_live_list(host, sizeof(host));
	pthread_mutex_lock(&live_lock);
	int n = snprintf(buf, sizeof(buf),
			 "pid %d\ncmd %s\ngpus %d\nattached %s%s%s\nlaunches %llu\ninstrumented %llu\n"
			 "graph_nodes %llu\ngraph_launches_uninstrumented %llu\nhost %s\ndir %s\n",
			 (int)getpid(), cmd[0] ? cmd : "?", gpus, attached, attached[0] && host[0] ? "," : "",
			 attached[0] || host[0] ? host : "-", __atomic_load_n(&nr_launches, __ATOMIC_RELAXED),
			 __atomic_load_n(&nr_instr, __ATOMIC_RELAXED), nr_graph_nodes, nr_graph_old,
			 host[0] ? host : "-", run_dir[0] ? run_dir : "-");
	pthread_mutex_unlock(&live_lock);
	snprintf(name, sizeof(name), "%d.ps", (int)getpid());
	if (n > 0 && gx_ctl_write(ctl_dir, name, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1))
		pr_debug("attach: cannot write %s/%s", ctl_dir, name);
}

/* names: what the answer lists as attached (NULL: the device set); dir: the
 * device set's run folder, where the CLI finds the tools' reports */
static void reply(const struct gx_ctl_msg *req, int status, const char *msg, const char *names, unsigned modules,
		  uint64_t t0)
{
	struct gx_ctl_msg r = { .op = GX_CTL_REPLY, .seq = req->seq, .status = status, .modules = modules };
	r.ms = (unsigned)(now_ms() - t0);
	snprintf(r.msg, sizeof(r.msg), "%s", msg);
	for (char *p = r.msg; *p; p++)
		if (*p == '\n')
			*p = ' ';
	pthread_mutex_lock(&live_lock);
	snprintf(r.attached, sizeof(r.attached), "%s", names ? names : attached);
	snprintf(r.dir, sizeof(r.dir), "%s", names && !names[0] ? "" : run_dir);
	pthread_mutex_unlock(&live_lock);
	char buf[8192], name[64];
	int n = gx_ctl_format(&r, buf, sizeof(buf));
	snprintf(name, sizeof(name), "%d.%llu.resp", (int)getpid(), (unsigned long long)req->seq);
	if (n < 0 || gx_ctl_write(ctl_dir, name, buf, (size_t)n))
		pr_warn("attach: cannot answer in %s", ctl_dir);
}

/* What is attached, all kinds, for replies and `gpuext ps` (live_lock
 * held or not: host names come from hostpolicy.c's lock). */
static void all_names(char *buf, size_t n)
{
	char host[200];
	gx_hostpolicy_live_list(host, sizeof(host));
	pthread_mutex_lock(&live_lock);
	snprintf(buf, n, "%s%s%s", attached, attached[0] && host[0] ? "," : "", host);
	pthread_mutex_unlock(&live_lock);
}

static void refuse(const struct gx_ctl_msg *m, int status, const char *err, uint64_t t0)
{
	pr_warn("attach: refused: %s", err);
	reply(m, status, err, NULL, 0, t0);
}

/* The device part of a request: tools and device policies merged into one
 * set, their runtime started, every loaded module's copy made, the switch
 * flipped. The number of copies made, or -errno with the reason in err;
 * *sample: the launch sample in force ("N[,first=K]"), NULL for every launch. */
static int dev_attach(const struct gx_ctl_msg *m, const char *pol, const char *tool, uint64_t t0, unsigned *none,
		      const char **sample, char *err, size_t en)
{
	/* --sched P[,knobs][,kernels=G]: its object and knobs for attach/ (the
	 * device policy), the whole spec for blocksched (kernels= is its own) */
	char sobj[GX_CTL_ITEM_MAX], sknobs[1024], sglob[256], sspec[GX_CTL_ITEM_MAX + 1100] = "";
	if (m->sched[0]) {
		if (gx_bs_parse_spec(m->sched, sobj, sizeof(sobj), sknobs, sizeof(sknobs), sglob, sizeof(sglob))) {
			snprintf(err, en, "--sched %.300s: a knob without '=' (name=value)", m->sched);
			return -EINVAL;
		}
		snprintf(sspec, sizeof(sspec), "%s%s%s", sobj, sknobs[0] ? "," : "", sknobs);
	}
	char line[400] = "", names[512] = "";
	const struct gx_attach_host *host = gx_attach_host_live();
	if (!host) {
		snprintf(err, en,
			 "no device runtime in this process (GPUEXT_DISABLE, or the driver lacks a function "
			 "it needs)");
		return -EOPNOTSUPP;
	}
	/* first in line: the device runtime must see the copy's function. A
	 * subscription made at cuInit (GPUEXT_JIT_ASYNC, GPUEXT_LAUNCH_SAMPLE)
	 * is theirs: a refused attach keeps it. */
	bool own_sub = sub_id < 0;
	if (own_sub)
		sub_id = gx_events_subscribe(GX_EV_MASK(GX_EV_LAUNCH) | GX_EV_MASK(GX_EV_LAUNCH_DONE) |
						     GX_EV_MASK(GX_EV_GRAPH_KERNEL_NODE) |
						     GX_EV_MASK(GX_EV_GRAPH_LAUNCH),
					     on_event, NULL);
	if (sub_id < 0) {
		snprintf(err, en, "no free event subscription");
		return sub_id;
	}
	struct gx_policy_names pn = { .sched = sspec[0] ? sspec : NULL,
				      .policy = pol[0] ? pol : NULL,
				      .tool = tool[0] ? tool : NULL };
	cap_line = line;
	prev_print = gx_set_print(cap_print);
	char e2[600] = "";
	int r = gx_attach_live_start(host, &pn, m->dir, names, sizeof(names), e2, sizeof(e2));
	gx_set_print(prev_print);
	cap_line = NULL;
	if (!r && m->sched[0] && (r = gx_sched_live_start(m->sched))) {
		/* the policy loaded, blocksched refused: nothing ran yet */
		gx_attach_live_stop(false);
		snprintf(e2, sizeof(e2), "%s",
			 r == -EBUSY	? "blocks are scheduled from its start (GPUEXT_SCHED or GPUEXT_PERSISTENT)"
			 : r == -ENODEV ? "the schedule policy is not attached (the process log says why)"
					: "blocksched cannot start");
	}
	if (r) {
		if (own_sub) {
			gx_events_unsubscribe(sub_id);
			sub_id = -1;
		}
		snprintf(err, en, "%s%s%s", e2, line[0] ? ": " : "", line);
		return r;
	}
	static bool exit_hook;
	if (!exit_hook) /* runs before the device runtime's (registered at its first start) */
		atexit(live_exit);
	exit_hook = true;
	pthread_mutex_lock(&live_lock);
	__atomic_store_n(&phase, 1, __ATOMIC_RELEASE);
	sched_on = m->sched[0] != 0;
	req_t0 = t0;
	graph_used = false;
	attach_gen = gx_graph_exec_gen();
	nr_launches = nr_instr = nr_graph_nodes = nr_graph_old = 0;
	snprintf(attached, sizeof(attached), "%s", names);
	snprintf(run_dir, sizeof(run_dir), "%s", m->dir);
	pthread_mutex_unlock(&live_lock);
	void *hs[4096];
	size_t n = gx_tab_mod_handles(hs, sizeof(hs) / sizeof(hs[0]));
	unsigned made = 0;
	*none = 0;
	for (size_t i = 0; i < n && i < sizeof(hs) / sizeof(hs[0]) && !exiting; i++) {
		int c = copy_of(hs[i]);
		made += c == 1;
		*none += c <= 0;
	}
	ctx_prepare();
	/* --launch-sample (the form was checked by the CLI and the message's
	 * parser), else this process's setting or the default: tools run on a
	 * sample of launches. Beside a device policy or --sched (which act on
	 * every launch) the default gives way, a sample asked for (gpuext
	 * attach refuses it: another client sent it) is ignored. */
	unsigned long every = 0, first = 0;
	*sample = m->sample[0] ? m->sample : gx_launch_sample_setting();
	if (gx_ctl_sample_parse(*sample, &every, &first))
		every = 0;
	if (every > 1 && (pol[0] || m->sched[0])) {
		if (m->sample[0])
			pr_warn("attach: --launch-sample ignored: a device policy or --sched acts on every launch");
		every = 0;
	}
	if (every <= 1)
		*sample = NULL;
	pthread_mutex_lock(&live_lock);
	/* the counts start at the flip (copy_file marked the entries stale:
	 * resolved again, counted anew) */
	gx_launch_sample_live(every, first);
	/* the switch: the next launch of a hooked kernel runs its copy */
	__atomic_store_n(&on, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&live_lock);
	return (int)made;
}

/* The host part: struct_ops policies into the shim's executor, their maps
 * in `host/` of the request's run folder (a device set attached with them
 * shares the folder: the CLI's cleanup at its detach removes the folder's
 * own files only, so the host maps stay until their detach). 0 or -errno
 * with the reason in err. */
static int host_attach(const struct gx_ctl_msg *m, const char *const *entries, unsigned nr, char *names, size_t nn,
		       char *err, size_t en)
{
	char before[200], dir[4096];
	gx_hostpolicy_live_list(before, sizeof(before));
	pthread_mutex_lock(&live_lock);
	/* a policy added to a live set keeps its maps with the set's */
	if (before[0] && host_dir[0])
		snprintf(dir, sizeof(dir), "%s", host_dir);
	else
		snprintf(dir, sizeof(dir), "%.4080s/host", m->dir);
	pthread_mutex_unlock(&live_lock);
	if (mkdir(dir, 0700) && errno != EEXIST) {
		snprintf(err, en, "cannot make %.300s: %s", dir, strerror(errno));
		return -errno;
	}
	pthread_mutex_lock(&live_lock);
	gx_map_shm_dir_set(dir);
	pthread_mutex_unlock(&live_lock);
	int r = gx_hostpolicy_live_attach(entries, nr, names, nn, err, en);
	pthread_mutex_lock(&live_lock);
	gx_map_shm_dir_set(phase ? run_dir : NULL);
	if (!r && !before[0])
		snprintf(host_dir, sizeof(host_dir), "%s", dir);
	pthread_mutex_unlock(&live_lock);
	if (r && !before[0])
		rmdir(dir);
	gx_tenancy_policy_changed();
	return r;
}

static void host_dir_drop(void)
{
	/* the executor removed its map files: their folder goes, and the run
	 * folder above it unless the device set still uses it (rmdir: only
	 * when empty) */
	pthread_mutex_lock(&live_lock);
	if (host_dir[0] && !rmdir(host_dir)) {
		char *s = strrchr(host_dir, '/');
		if (s)
			*s = 0;
		if (strcmp(host_dir, run_dir))
			rmdir(host_dir);
	}
	host_dir[0] = 0;
	pthread_mutex_unlock(&live_lock);
}

/* Is `name` one of the comma-separated `list`? */
static bool name_in(const char *list, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (!strncmp(p, name, n) && (p[n] == ',' || !p[n]))
			return true;
	return false;
}

/* Detach host policy `name` (NULL: all), its summary into sum. The other
 * policy of a pair is reloaded with its maps in the same folder; the folder
 * goes with the last policy. */
static void host_detach(const char *name, char *sum, size_t n)
{
	pthread_mutex_lock(&live_lock);
	gx_map_shm_dir_set(host_dir[0] ? host_dir : NULL);
	pthread_mutex_unlock(&live_lock);
	gx_hostpolicy_live_detach(name, sum, n);
	pthread_mutex_lock(&live_lock);
	gx_map_shm_dir_set(phase ? run_dir : NULL);
	pthread_mutex_unlock(&live_lock);
	char hn[200];
	gx_hostpolicy_live_list(hn, sizeof(hn));
	if (!hn[0])
		host_dir_drop();
	gx_tenancy_policy_changed();
}

/* A request refused after its host part went in: the policies it added go
 * again (`now`: the names attached after it, `before`: before it). */
static void host_rollback(char *now, const char *before)
{
	char *save = NULL, sum[1200];
	for (char *h = strtok_r(now, ",", &save); h; h = strtok_r(NULL, ",", &save))
		if (!name_in(before, h) && gx_hostpolicy_live_has(h))
			host_detach(h, sum, sizeof(sum));
}

/* The tag of a request's item ("/p/x.bpf.o,k=v" -> "x"), appended to list. */
static void tag_append(char *list, size_t n, const char *item)
{
	const char *b = strrchr(item, '/');
	b = b ? b + 1 : item;
	size_t l = strcspn(b, ",");
	const char *dot = strstr(b, ".bpf.o");
	if (dot && (size_t)(dot - b) < l)
		l = (size_t)(dot - b);
	size_t at = strlen(list);
	snprintf(list + at, n - at, "%s%.*s", at ? "," : "", (int)l, b);
}

static void do_attach(const struct gx_ctl_msg *m, uint64_t t0)
{
	char err[1100] = "", pol[GX_CTL_MAX_ITEMS * (GX_CTL_ITEM_MAX + 1)] = "", tool[GX_CTL_MAX_ITEMS * 65] = "",
	     hnames[200] = "", why[96];
	const char *hent[GX_CTL_MAX_ITEMS];
	unsigned nh = 0;
	char hbefore[200];
	gx_hostpolicy_live_list(hbefore, sizeof(hbefore));
	for (unsigned i = 0; i < m->nr_policies; i++) {
		char path[GX_CTL_ITEM_MAX];
		snprintf(path, sizeof(path), "%.*s", (int)strcspn(m->policy[i], ","), m->policy[i]);
		if (gx_hostpolicy_is_struct_ops(path))
			hent[nh++] = m->policy[i];
		else
			snprintf(pol + strlen(pol), sizeof(pol) - strlen(pol), "%s%s", pol[0] ? ":" : "", m->policy[i]);
	}
	for (unsigned i = 0; i < m->nr_tools; i++)
		snprintf(tool + strlen(tool), sizeof(tool) - strlen(tool), "%s%s", i ? "," : "", m->tool[i]);
	bool dev = pol[0] || tool[0] || m->sched[0];
	if (!m->dir[0] || gx_dir_trusted(m->dir, GX_TRUST_OWN | GX_TRUST_PRIVATE, why, sizeof(why))) {
		snprintf(err, sizeof(err), "run folder %.300s: %s", m->dir[0] ? m->dir : "(none)",
			 m->dir[0] ? why : "not given");
		refuse(m, -EPERM, err, t0);
		return;
	}
	if (dev && phase) {
		/* One merged set: its tools share one instrumented copy of each
		 * module and the one device runtime (attach/devrt.c), whose maps
		 * and tool logs a re-merge would make anew (docs/attach.md). */
		char add[400] = "", cur[512];
		if (m->sched[0])
			tag_append(add, sizeof(add), m->sched);
		for (const char *p = pol; *p; p += strcspn(p, ":") + (p[strcspn(p, ":")] == ':')) {
			char one[GX_CTL_ITEM_MAX];
			snprintf(one, sizeof(one), "%.*s", (int)strcspn(p, ":"), p);
			tag_append(add, sizeof(add), one);
		}
		if (tool[0])
			snprintf(add + strlen(add), sizeof(add) - strlen(add), "%s%s", add[0] ? "," : "", tool);
		pthread_mutex_lock(&live_lock);
		snprintf(cur, sizeof(cur), "%s", attached);
		pthread_mutex_unlock(&live_lock);
		snprintf(err, sizeof(err),
			 "%.80s is attached already: one device set per process (its tools and policies share one "
			 "instrumented copy of each module and one device runtime; adding %.80s would re-merge the set "
			 "and restart %.80s's counts); detach %.80s, then attach %.80s,%.80s in one request",
			 cur, add, cur, cur, cur, add);
		refuse(m, -EBUSY, err, t0);
		return;
	}
	if (nh && host_attach(m, hent, nh, hnames, sizeof(hnames), err, sizeof(err))) {
		gx_hostpolicy_live_list(hnames, sizeof(hnames));
		host_rollback(hnames, hbefore); /* an earlier entry of the request may have loaded */
		refuse(m, -EBUSY, err, t0);
		return;
	}
	unsigned none = 0;
	int made = 0;
	const char *sample = NULL;
	if (dev && (made = dev_attach(m, pol, tool, t0, &none, &sample, err, sizeof(err))) < 0) {
		if (nh) /* the request is refused whole: the host policies it added go */
			host_rollback(hnames, hbefore);
		refuse(m, made, err, t0);
		return;
	}
	if (!dev && hbefore[0])
		rmdir(m->dir); /* the request's run folder stayed empty */
	char msg[900], names[900];
	all_names(names, sizeof(names));
	if (dev)
		snprintf(
			msg, sizeof(msg),
			"attached %s: %u modules instrumented, %u not (SASS only, nothing to hook, or module state a copy could not share)%s%s%s%s",
			attached, (unsigned)made, none, sample ? "; launches sampled " : "; every launch instrumented",
			sample ? sample : "", nh ? "; host policies " : "", nh ? hnames : "");
	else
		snprintf(msg, sizeof(msg), "attached host policies %s (their next events on)", hnames);
	pr_info("attach: %s in %llu ms", msg, (unsigned long long)(now_ms() - t0));
	ps_write();
	reply(m, 0, msg, names, (unsigned)made, t0);
}

/* Launches that ran a copy: all complete (events polled, never waited on)? */
static bool copies_idle(void)
{
	bool idle = true;
	pthread_mutex_lock(&live_lock);
	idle = inflight <= 0;
	struct sev *e, *t;
	HASH_ITER(hh, sevs, e, t)
	{
		if (!idle)
			break;
		CUresult q = REAL(cuEventQuery)(e->ev);
		idle = q != CUDA_ERROR_NOT_READY;
	}
	pthread_mutex_unlock(&live_lock);
	return idle;
}

/* Detach the device set: switch back, wait for the copies' launches (events
 * polled), stop the runtime, unload. The copies unloaded; msg says what. */
static unsigned dev_detach(char *msg, size_t mn)
{
	pthread_mutex_lock(&live_lock);
	__atomic_store_n(&on, false, __ATOMIC_RELEASE); /* launches run the originals from now on */
	gx_launch_sample_live(0, 0);
	pthread_mutex_unlock(&live_lock);
	const char *w = getenv("GPUEXT_DETACH_WAIT_S");
	long wait_s = w ? strtol(w, NULL, 10) : 60;
	uint64_t until = now_ms() + (uint64_t)(wait_s > 0 ? wait_s : 60) * 1000;
	bool idle;
	while (!(idle = copies_idle()) && now_ms() < until && !exiting) {
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	pthread_mutex_lock(&live_lock);
	bool keep = graph_used || !idle, sched = sched_on;
	__atomic_store_n(&phase, 0, __ATOMIC_RELEASE);
	sched_on = false;
	struct copy *cs = copies, *rs = retired;
	copies = NULL;
	retired = NULL;
	struct sev *es = sevs;
	sevs = NULL;
	/* the memo's launches may still read the entries (switch_memo): then
	 * they are kept, one per function launched, rather than freed */
	struct fn_map *fm = fc_used ? NULL : fns;
	fns = NULL;
	__atomic_add_fetch(&fns_gen, 1, __ATOMIC_RELEASE);
	unsigned long long nl = __atomic_load_n(&nr_launches, __ATOMIC_RELAXED),
			   ni = __atomic_load_n(&nr_instr, __ATOMIC_RELAXED), ng = nr_graph_nodes, ngo = nr_graph_old;
	struct gseen *gs = gseens;
	gseens = NULL;
	pthread_mutex_unlock(&live_lock);
	/* blocksched first: its states and hint blocks, used by no launch now */
	char bs[200] = "";
	if (sched)
		gx_sched_live_stop(keep, bs, sizeof(bs));
	gx_attach_live_stop(keep);
	unsigned unloaded = 0;
	struct copy *c, *ct;
	HASH_ITER(hh, cs, c, ct)
	{
		HASH_DEL(cs, c);
		c->next_retired = rs;
		rs = c;
	}
	for (; (c = rs); free(c)) {
		rs = c->next_retired;
		if (keep || c->dead)
			continue;
		copy_unload(c);
		unloaded++;
	}
	struct sev *e, *et;
	HASH_ITER(hh, es, e, et)
	{
		HASH_DEL(es, e);
		REAL(cuEventDestroy_v2)(e->ev);
		free(e);
	}
	struct fn_map *f, *ft;
	HASH_ITER(hh, fm, f, ft)
	{
		HASH_DEL(fm, f);
		free(f);
	}
	struct gseen *g, *gt;
	HASH_ITER(hh, gs, g, gt)
	{
		HASH_DEL(gs, g);
		free(g);
	}
	gx_events_unsubscribe(sub_id);
	sub_id = -1;
	snprintf(msg, mn,
		 "detached %s: %llu launches while attached, %llu instrumented, %llu graph nodes; "
		 "%llu graph launches not instrumented; %u copies unloaded%s%s",
		 attached, nl, ni, ng, ngo, unloaded, bs,
		 keep ? (idle ? "; copies used by graphs stay loaded until exit"
			      : "; launches still running after GPUEXT_DETACH_WAIT_S: copies stay loaded until exit")
		      : "");
	pr_info("attach: %s", msg);
	return unloaded;
}

static void do_detach(const struct gx_ctl_msg *m, uint64_t t0)
{
	char msg[1500] = "", hmsg[1200] = "", hn[200], dn[512];
	gx_hostpolicy_live_list(hn, sizeof(hn));
	pthread_mutex_lock(&live_lock);
	snprintf(dn, sizeof(dn), "%s", attached);
	pthread_mutex_unlock(&live_lock);
	bool all = !m->what[0] || !strcmp(m->what, "--all");
	bool want_host = hn[0] && (all || gx_hostpolicy_live_has(m->what));
	bool want_dev = phase && (all || !strcmp(m->what, dn));
	if (!want_host && !want_dev) {
		bool in_set = false; /* one tool of a device set attached together */
		char tmp[512], *save = NULL;
		snprintf(tmp, sizeof(tmp), "%s", dn);
		for (char *t = phase && !all ? strtok_r(tmp, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save))
			in_set |= !strcmp(t, m->what);
		if (!phase && !hn[0])
			snprintf(msg, sizeof(msg), "nothing is attached");
		else if (in_set)
			snprintf(
				msg, sizeof(msg),
				"%s was attached with %s as one set (one instrumented copy of each module): they detach "
				"together (detach %s, or --all)",
				m->what, dn, dn);
		else
			snprintf(msg, sizeof(msg), "%s is not attached (attached: %s%s%s)", m->what, dn,
				 dn[0] && hn[0] ? "," : "", hn);
		reply(m, -ENOENT, msg, NULL, 0, t0);
		return;
	}
	unsigned unloaded = 0;
	if (want_dev)
		unloaded = dev_detach(msg, sizeof(msg));
	if (want_host) {
		char what[200];
		snprintf(what, sizeof(what), "%s", all ? hn : m->what);
		host_detach(all ? NULL : m->what, hmsg, sizeof(hmsg));
		pr_info("attach: detached host policy %s: %s", what, hmsg);
		snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg), "%sdetached host policy %s: %s",
			 msg[0] ? "; " : "", what, hmsg);
	}
	/* the device set's names: the tools whose reports the CLI prints */
	reply(m, 0, msg, want_dev ? dn : "", unloaded, t0);
	if (want_dev) {
		pthread_mutex_lock(&live_lock);
		attached[0] = run_dir[0] = 0;
		pthread_mutex_unlock(&live_lock);
	}
	ps_write();
}

static void handle(const char *path)
{
	char *buf = NULL, why[96] = "", err[200] = "";
	size_t len = 0;
	uint64_t t0 = now_ms();
	int r = gx_read_trusted(path, GX_TRUST_ANY_OWNER, &buf, &len, GX_CTL_MAX_BYTES, why, sizeof(why));
	unlink(path);
	if (r) {
		/* not answered: whoever wrote it is not to be trusted */
		pr_warn("attach: request %s refused: %s", path, r == -EPERM ? why : strerror(-r));
		free(buf);
		return;
	}
	struct gx_ctl_msg *m = calloc(1, sizeof(*m));
	if (!m || gx_ctl_parse(buf, len, m, err, sizeof(err))) {
		pr_warn("attach: a bad request: %s", m ? err : "out of memory");
		free(m);
		free(buf);
		return;
	}
	free(buf);
	busy = 1;
	if (m->op == GX_CTL_ATTACH)
		do_attach(m, t0);
	else if (m->op == GX_CTL_DETACH)
		do_detach(m, t0);
	else if (m->op == GX_CTL_STATUS)
		reply(m, 0, phase ? "attached" : "nothing attached", NULL, 0, t0);
	else
		pr_warn("attach: a request with op %d ignored", (int)m->op);
	busy = 0;
	free(m);
}

static void *ctl_main(void *arg)
{
	(void)arg;
	/* our driver calls never disturb the application's captures */
	gx_capture_relax(REAL(cuThreadExchangeStreamCaptureMode));
	char req[4200];
	snprintf(req, sizeof(req), "%s/%d.req", ctl_dir, (int)getpid());
	int ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (ifd >= 0 && inotify_add_watch(ifd, ctl_dir, IN_MOVED_TO | IN_CLOSE_WRITE) < 0) {
		close(ifd);
		ifd = -1;
	}
	unsigned long long last = 0;
	uint64_t last_ps = now_ms();
	while (!exiting) {
		if (ifd >= 0) {
			struct pollfd pf = { .fd = ifd, .events = POLLIN };
			if (poll(&pf, 1, 1000) > 0) {
				char ev[4096];
				while (read(ifd, ev, sizeof(ev)) > 0) {
				}
			}
		} else {
			struct timespec ts = { 0, 100000000 };
			nanosleep(&ts, NULL);
		}
		if (exiting)
			break;
		struct stat st;
		if (!lstat(req, &st))
			handle(req);
		unsigned long long nl = __atomic_load_n(&nr_launches, __ATOMIC_RELAXED);
		if (phase && nl != last && now_ms() - last_ps >= 1000) {
			last = nl;
			last_ps = now_ms();
			ps_write();
		}
	}
	if (ifd >= 0)
		close(ifd);
	return NULL;
}

static void live_exit(void)
{
	exiting = 1;
	/* a request in progress gives up between modules; wait for it (a JIT
	 * of LLVM's under load took over 2 s: see live_jit_loaded), at most 10 s */
	for (int i = 0; i < 10000 && busy; i++) {
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	char p[4200];
	snprintf(p, sizeof(p), "%s/%d.ps", ctl_dir, (int)getpid());
	unlink(p);
}

/* libgxjit.so (LLVM) was just loaded, maybe by this thread's request:
 * LLVM's exit-time destructors were registered after live_exit, so they
 * would run first and free what a JIT still running here uses (a double
 * free in 1 of ~60 exits during an attach under load). Registered again,
 * live_exit runs before them and waits for the request. */
static void live_jit_loaded(void)
{
	atexit(live_exit);
}

void gx_live_init(void)
{
	if (!live_enabled() || gx_ctl_dir(ctl_dir, sizeof(ctl_dir)))
		return;
	/* the folder above (GPUEXT_SHM_DIR's default) and the channel: ours, private */
	char up[4200], why[96];
	snprintf(up, sizeof(up), "%s", ctl_dir);
	char *s = strrchr(up, '/');
	if (s && s != up) {
		*s = 0;
		mkdir(up, 0700);
	}
	mkdir(ctl_dir, 0700);
	if (gx_dir_trusted(ctl_dir, GX_TRUST_OWN | GX_TRUST_PRIVATE, why, sizeof(why))) {
		pr_info("attach: not using the control folder %s: %s; this process cannot be attached to", ctl_dir,
			why);
		return;
	}
	gx_lock_register(&live_lock, 12);
	gx_jitlib_set_loaded_hook(live_jit_loaded);
	gx_graph_exec_track();
	ps_write();
	pthread_t t;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	/* the thread never takes signals meant for the application */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&t, &a, ctl_main, NULL))
		pr_info("attach: cannot start the control thread; this process cannot be attached to");
	else
		atexit(live_exit);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&a);
}
