/* async_jit.c — GPUEXT_JIT_ASYNC=1: the driver's JIT of rewritten modules
 * off the application's load path (issue 40, docs/cache.md).
 *
 * Without it, a module whose instrumented cubin is not in the module cache
 * is compiled on the thread that loads it, before cuModuleLoad* returns:
 * a cold first run pays the driver's JIT once per module, serially when
 * the application loads serially (Triton, Inductor). With it, such a
 * module is loaded as it came and returned at once; its rewritten PTX goes
 * to a pool of worker threads that compile it (through the module cache,
 * so the next run loads the cubin synchronously and compiles nothing),
 * load it as a second module in the module's context, and hand it to the
 * launch switch of shim/live.c — the one `gpuext attach` uses. Launches
 * made before the copy is ready run the original kernel, uninstrumented:
 * the price, said in one line per module (the tool's report shows such
 * kernels as partly instrumented).
 *
 * Only where a copy is faithful: modules (not libraries, which live in
 * every context), hooks without persistent-worker copies, and module state
 * a second copy can share (ptx-rewrite/copy_state.c; a copy is retired when
 * the host asks for a variable's address, as under attach). Anything else
 * is loaded as without the switch, on the load path. The workers are
 * joined at exit (a JIT running while the driver tears down would crash
 * it); queued jobs not started are dropped. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/gx_capture.h"
#include "shim/load_internal.h"
#include "shim/stats_internal.h"

#define MAX_WORKERS 16

struct job {
	struct job *next;
	void *orig; /* the application's module */
	CUcontext ctx;
	bool vars;
	double t0; /* when it was loaded */
	struct gx_prep p;
};

static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_cond = PTHREAD_COND_INITIALIZER;
static struct job *q_head, *q_tail;
static pthread_t workers[MAX_WORKERS];
static unsigned nr_workers, want_workers;
static bool stopping, started;

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

bool gx_jit_async_on(void)
{
	static int on = -1;
	if (on < 0) {
		const char *e = getenv("GPUEXT_JIT_ASYNC");
		gx_config_load();
		on = e && !strcmp(e, "1") && !gx_config.disabled && (gx_config.tool || gx_config.policy) &&
		     !gx_config.sched && !getenv("GPUEXT_PERSISTENT");
	}
	return on;
}

void gx_jit_async_judge(const char *orig, size_t len, struct gx_prep *p)
{
	p->async = false;
	/* nothing to hook, or a cubin the load path takes at once: no parse
	 * (a warm start pays nothing for the switch). Launch sampling wants
	 * the copy whether cached or not (launch_sample.c). */
	bool sample = gx_launch_sample_on();
	if (!(started || sample) || !p->ptx || !p->nr_hooks || (!sample && gx_prep_cubin_state(p, 0, NULL) == 1))
		return;
	bool vars;
	p->async = gx_live_copy_check(orig, len, &vars, NULL, 0) == 0;
	p->async_vars = vars;
}

bool gx_jit_async_take(const struct gx_prep *p, unsigned n, const CUjit_option *o)
{
	/* p->async: judged (hooks, no cubin cached, a faithful copy); no
	 * persistent copies nor -rdc units then (gx_jit_async_on, and the
	 * -rdc route is never judged). The worker passes no JIT options: a
	 * load the application gave options that change the code (no cubin
	 * route, -1) stays on the load path. */
	if (!p->async || !started)
		return false;
	int st = gx_prep_cubin_state(p, n, o);
	return st == 0 || (st < 0 && !n);
}

bool gx_launch_sample_take(const struct gx_prep *p, unsigned n, const CUjit_option *o)
{
	/* the copy loads with no options, as a worker's: an application's
	 * option that changes the code keeps the module on the plain path */
	if (!p->async || !gx_launch_sample_on())
		return false;
	int st = gx_prep_cubin_state(p, n, o);
	return st >= 0 || !n;
}

/* One job, on a worker: compile, load in the module's context, hand over. */
static void run_job(struct job *j)
{
	CUcontext popped;
	if (REAL(cuCtxPushCurrent_v2)(j->ctx) != CUDA_SUCCESS) {
		pr_info("module %u: its context is gone: no instrumented copy", j->p.id);
		return;
	}
	/* our own calls: never disturb a graph being captured (gx_capture.h) */
	struct gx_capture_mode cm = gx_capture_relax(REAL(cuThreadExchangeStreamCaptureMode));
	void *cubin = NULL, *h = NULL;
	size_t clen = 0;
	CUresult rc = CUDA_ERROR_INVALID_IMAGE;
	if (gx_prep_cubin(&j->p, false, 0, NULL, &cubin, &clen)) {
		rc = REAL(cuModuleLoadData)((CUmodule *)&h, cubin);
		free(cubin);
	}
	if (rc != CUDA_SUCCESS) {
		j->p.cubin = 0;
		rc = REAL(cuModuleLoadData)((CUmodule *)&h, j->p.ptx);
	}
	gx_capture_restore(REAL(cuThreadExchangeStreamCaptureMode), cm);
	if (rc != CUDA_SUCCESS) {
		char b[96];
		pr_warn("module %u: the driver rejected its instrumented copy (%s): it runs as it came", j->p.id,
			gx_cu_errname(rc, b, sizeof(b)));
	} else if (!gx_live_async_add(j->orig, j->ctx, false, j->p.id, j->vars, h)) {
		REAL(cuModuleUnload)((CUmodule)h);
	} else {
		char how[64] = "the rewritten PTX loaded";
		if (j->p.cubin == GX_CUBIN_JIT)
			snprintf(how, sizeof(how), "cubin JIT-compiled in %.1f ms, stored", j->p.jit_ms);
		else if (j->p.cubin == GX_CUBIN_CACHED)
			snprintf(how, sizeof(how), "cubin cached");
		pr_info("module %u: instrumented copy ready %.1f ms after the load (%u hooks; %s): its kernels' next "
			"launches run it",
			j->p.id, now_ms() - j->t0, j->p.nr_hooks, how);
	}
	REAL(cuCtxPopCurrent_v2)(&popped);
}

static void *worker(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&q_lock);
	for (;;) {
		while (!q_head && !stopping)
			pthread_cond_wait(&q_cond, &q_lock);
		if (stopping)
			break;
		struct job *j = q_head;
		q_head = j->next;
		if (!q_head)
			q_tail = NULL;
		pthread_mutex_unlock(&q_lock);
		run_job(j);
		gx_prep_free(&j->p);
		free(j);
		pthread_mutex_lock(&q_lock);
	}
	pthread_mutex_unlock(&q_lock);
	return NULL;
}

void gx_jit_async_queue(void *orig, CUcontext ctx, struct gx_prep *p)
{
	struct job *j = calloc(1, sizeof(*j));
	if (!j) {
		pr_warn_once("out of memory: a module's instrumented copy is not made (GPUEXT_JIT_ASYNC)");
		return;
	}
	j->orig = orig;
	j->ctx = ctx;
	j->vars = p->async_vars;
	j->t0 = now_ms();
	j->p.id = p->id;
	j->p.ptx = p->ptx, j->p.len = p->len;
	j->p.nr_hooks = p->nr_hooks;
	p->ptx = NULL;
	pthread_mutex_lock(&q_lock);
	if (stopping) {
		pthread_mutex_unlock(&q_lock);
		gx_prep_free(&j->p);
		free(j);
		return;
	}
	if (q_tail)
		q_tail->next = j;
	else
		q_head = j;
	q_tail = j;
	/* one more worker while there are fewer than asked for */
	if (nr_workers < want_workers && !pthread_create(&workers[nr_workers], NULL, worker, NULL))
		nr_workers++;
	pthread_cond_signal(&q_cond);
	pthread_mutex_unlock(&q_lock);
}

void gx_log_async(const char *api, const struct gx_prep *p)
{
	gx_stats_module(GX_STATS_MOD_REWRITTEN, NULL);
	pr_info("module %u (%s): loaded as it came, its instrumented copy (%u hooks, sm_%u PTX%s) compiling off the "
		"load path (GPUEXT_JIT_ASYNC): launches before it is ready run uninstrumented",
		p->id, api, p->nr_hooks, p->sm, p->cached ? " from the module cache" : "");
}

/* At exit: the running JITs finish (at most 30 s), queued jobs are
 * dropped. */
static void async_exit(void)
{
	pthread_mutex_lock(&q_lock);
	stopping = true;
	unsigned n = nr_workers;
	struct job *q = q_head;
	q_head = q_tail = NULL;
	pthread_cond_broadcast(&q_cond);
	pthread_mutex_unlock(&q_lock);
	unsigned dropped = 0;
	for (struct job *j; (j = q); dropped++) {
		q = j->next;
		gx_prep_free(&j->p);
		free(j);
	}
	if (dropped)
		pr_info("exit: %u modules' instrumented copies were never compiled (GPUEXT_JIT_ASYNC)", dropped);
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 30;
	for (unsigned i = 0; i < n; i++)
		if (pthread_timedjoin_np(workers[i], NULL, &until))
			pr_warn("exit: a JIT of GPUEXT_JIT_ASYNC still runs after 30 s; exiting anyway");
}

/* A child of fork has no workers: it starts its own. */
static void async_child(void)
{
	pthread_mutex_init(&q_lock, NULL);
	pthread_cond_init(&q_cond, NULL);
	q_head = q_tail = NULL;
	nr_workers = 0;
}

void gx_jit_async_init(void)
{
	if (!gx_jit_async_on())
		return;
	const char *w = getenv("GPUEXT_JIT_WORKERS");
	long n = w ? strtol(w, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN) / 2;
	want_workers = n < 1 ? 1 : n > MAX_WORKERS ? MAX_WORKERS : (unsigned)n;
	if (gx_live_async_start()) {
		pr_warn("GPUEXT_JIT_ASYNC: no launch switch (no free event subscription): modules compile on the load "
			"path");
		return;
	}
	atexit(async_exit);
	pthread_atfork(NULL, NULL, async_child);
	started = true;
	pr_info("GPUEXT_JIT_ASYNC: modules not in the module cache load as they came and get their instrumented "
		"copies from %u worker threads",
		want_workers);
}
