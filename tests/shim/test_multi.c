/* test_multi.c — the shim with several devices and contexts, against the fake
 * driver in strict mode (a handle used outside its own context, or after its
 * module or context is gone, fails there and is counted). Run with
 * FAKECUDA_DEVICES=3 (sm_90, sm_80, sm_90), LD_LIBRARY_PATH=build/lib and
 * GPUEXT_REAL_LIBCUDA=the fake. Checks: modules loaded in every context are
 * rewritten for that context's device and stay apart; a library's CUkernel
 * maps to each context's own CUfunction (cuKernelGetFunction, launches with
 * the CUkernel, cuLibraryGetModule); launch events carry the context and
 * device of the launch; threads with different current contexts (SetCurrent
 * and Push/Pop) load, look up, launch and unload concurrently; unloading or
 * destroying in one context leaves the others working; the shim's tables
 * end where they started. argv[1] "quick": fewer iterations (valgrind). */
#define CUDA_ENABLE_DEPRECATED 1
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuext/gx_events.h"
#include "tests/gx_test.h"
#include "tests/shim/stderr_log.h"

static const char PTX80[] = ".version 8.0\n.target sm_80\n.address_size 64\n"
			    ".visible .entry kern_a()\n{\n\tret;\n}\n"
			    ".visible .entry kern_b()\n{\n\tret;\n}\n";
static const char PTX90[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
			    ".visible .entry kern_c()\n{\n\tret;\n}\n";

/* ---- the fake's record, the shim's debug entry points ---- */
static void (*fake_strict_ctx)(int);
static void (*fake_ctx_reuse)(int);
static long (*fake_cross_ctx)(void);
static int (*fake_last_run)(void **, int *, void **, char *, size_t, char *, size_t);
static int (*table_counts)(size_t *, size_t *, size_t *);
static int (*p_subscribe)(unsigned, gx_event_fn, void *);
static int (*p_unsubscribe)(int);

static void bind(void)
{
	void *fake = dlopen(getenv("GPUEXT_REAL_LIBCUDA"), RTLD_NOW | RTLD_NOLOAD);
	if (!fake) {
		printf("not ok - fake driver loaded by the shim\n");
		exit(1);
	}
	*(void **)&fake_strict_ctx = dlsym(fake, "fake_strict_ctx");
	*(void **)&fake_ctx_reuse = dlsym(fake, "fake_ctx_reuse");
	*(void **)&fake_cross_ctx = dlsym(fake, "fake_cross_ctx");
	*(void **)&fake_last_run = dlsym(fake, "fake_last_run");
	*(void **)&table_counts = dlsym(RTLD_DEFAULT, "gx_shim_table_counts");
	*(void **)&p_subscribe = dlsym(RTLD_DEFAULT, "gx_events_subscribe");
	*(void **)&p_unsubscribe = dlsym(RTLD_DEFAULT, "gx_events_unsubscribe");
	if (!fake_strict_ctx || !fake_ctx_reuse || !fake_cross_ctx || !fake_last_run || !table_counts || !p_subscribe || !p_unsubscribe) {
		printf("not ok - fake_* and gx_* entry points found\n");
		exit(1);
	}
}

/* What ran at this thread's last launch, per the fake. */
struct run {
	void *ctx, *func;
	int dev;
	char target[16], name[128];
};
static struct run last_run(void)
{
	struct run r = { 0 };
	fake_last_run(&r.ctx, &r.dev, &r.func, r.target, sizeof(r.target), r.name, sizeof(r.name));
	return r;
}

static CUresult launch(CUfunction f)
{
	return cuLaunchKernel(f, 2, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
}

/* ---- launch events: context, device, name ---- */
static __thread struct {
	CUcontext ctx;
	CUdevice dev;
	char name[64];
	int is_kernel, n;
} seen;

/* Context events: the device each named (they need not be current). */
static struct {
	CUcontext ctx;
	int dev, kind;
} ctx_ev[16];
static int nr_ctx_ev;

static CUresult on_launch(struct gx_event *ev, void *cookie)
{
	(void)cookie;
	if (ev->kind == GX_EV_CTX_CREATE || ev->kind == GX_EV_CTX_DESTROY) {
		if (nr_ctx_ev < 16)
			ctx_ev[nr_ctx_ev].ctx = ev->ctx, ctx_ev[nr_ctx_ev].dev = ev->dev, ctx_ev[nr_ctx_ev++].kind = ev->kind;
		return CUDA_SUCCESS;
	}
	seen.ctx = ev->ctx;
	seen.dev = ev->dev;
	snprintf(seen.name, sizeof(seen.name), "%s", ev->launch.name ? ev->launch.name : "(null)");
	seen.is_kernel = ev->launch.is_kernel;
	seen.n++;
	return CUDA_SUCCESS;
}

#define NCTX 4
static CUcontext ctx[NCTX];
static const int ctx_dev[NCTX] = { 0, 1, 2, 0 }; /* primaries of 0..2, one created on 0 */

static void test_modules(void)
{
	CUmodule m[NCTX];
	CUfunction f[NCTX];
	long mark = log_mark();
	int ok_load = 1, ok_run = 1;
	for (int i = 0; i < NCTX; i++) {
		cuCtxSetCurrent(ctx[i]);
		ok_load &= cuModuleLoadData(&m[i], PTX80) == CUDA_SUCCESS &&
			   cuModuleGetFunction(&f[i], m[i], "kern_a") == CUDA_SUCCESS;
	}
	GX_CHECK(ok_load && log_count(mark, "reloaded from sm_80 PTX") == NCTX,
		 "the same PTX loaded in %d contexts on 3 devices: rewritten for each (%d lines)", NCTX,
		 log_count(mark, "reloaded from sm_80 PTX"));
	/* Contexts 0 (sm_90) and 1 (sm_80) rewrite; 2 and 3 (sm_90) reuse. */
	GX_CHECK(log_count(mark, "from the module cache") == 2,
		 "rewritten once per device arch: the module cache serves the 2 contexts of an arch seen before (%d)",
		 log_count(mark, "from the module cache"));
	int distinct = 1;
	for (int i = 0; i < NCTX; i++)
		for (int j = i + 1; j < NCTX; j++)
			distinct &= m[i] != m[j] && f[i] != f[j];
	GX_CHECK(distinct, "each context has its own module and function");
	for (int i = 0; i < NCTX; i++) {
		cuCtxSetCurrent(ctx[i]);
		seen.n = 0;
		CUresult rc = launch(f[i]);
		struct run r = last_run();
		ok_run &= rc == CUDA_SUCCESS && r.ctx == (void *)ctx[i] && r.dev == ctx_dev[i] &&
			  !strcmp(r.target, "sm_80") && seen.n == 1 && seen.ctx == ctx[i] && seen.dev == ctx_dev[i] &&
			  !strcmp(seen.name, "kern_a");
		if (!ok_run)
			printf("# ctx %d: rc %d ran in dev %d target %s; event ctx %p dev %d name %s\n", i, rc, r.dev,
			       r.target, (void *)seen.ctx, seen.dev, seen.name);
	}
	GX_CHECK(ok_run, "launches run each context's own rewritten function; events carry that context and device");
	/* A module of context 0 in context 1: the fake refuses (strict), the
	 * shim adds no translation that would hide or cause it. */
	cuCtxSetCurrent(ctx[1]);
	long x0 = fake_cross_ctx();
	GX_CHECK(launch(f[0]) == CUDA_ERROR_INVALID_CONTEXT && fake_cross_ctx() == x0 + 1,
		 "the fake detects a cross-context launch (strict mode works)");
	/* sm_90-only PTX: loads on the sm_90 devices, passes through on sm_80. */
	mark = log_mark();
	CUmodule m9;
	cuCtxSetCurrent(ctx[2]);
	bool on90 = cuModuleLoadData(&m9, PTX90) == CUDA_SUCCESS && log_count(mark, "reloaded from sm_90 PTX") == 1;
	if (on90)
		cuModuleUnload(m9);
	cuCtxSetCurrent(ctx[1]);
	GX_CHECK(on90 && cuModuleLoadData(&m9, PTX90) == CUDA_ERROR_INVALID_PTX &&
			 log_count(mark, "passed through: no usable code, no PTX for sm_80") == 1,
		 "sm_90 PTX: rewritten in the sm_90 context, passed through in the sm_80 one");
	/* Unload in context 0: the others keep working. */
	cuCtxSetCurrent(ctx[0]);
	GX_CHECK(cuModuleUnload(m[0]) == CUDA_SUCCESS && launch(f[0]) == CUDA_ERROR_INVALID_HANDLE,
		 "unloaded in context 0: its function is gone");
	int others = 1;
	for (int i = 1; i < NCTX; i++) {
		cuCtxSetCurrent(ctx[i]);
		others &= launch(f[i]) == CUDA_SUCCESS && last_run().ctx == (void *)ctx[i];
		CUfunction g;
		others &= cuModuleGetFunction(&g, m[i], "kern_b") == CUDA_SUCCESS && launch(g) == CUDA_SUCCESS;
	}
	GX_CHECK(others, "the other contexts' modules still load functions and launch");
	for (int i = 1; i < NCTX; i++) {
		cuCtxSetCurrent(ctx[i]);
		cuModuleUnload(m[i]);
	}
}

static void test_library(const char *fatbin)
{
	CUlibrary lib;
	CUkernel k;
	long mark = log_mark();
	cuCtxSetCurrent(NULL); /* a library needs no context */
	GX_CHECK(cuLibraryLoadData(&lib, PTX80, NULL, NULL, 0, NULL, NULL, 0) == CUDA_SUCCESS &&
			 cuLibraryGetKernel(&k, lib, "kern_a") == CUDA_SUCCESS && log_count(mark, "reloaded from sm_80 PTX") == 1,
		 "library loaded once with no current context, rewritten once for the lowest arch (sm_80)");
	CUfunction f[NCTX];
	CUmodule lm[NCTX];
	int ok = 1, distinct = 1;
	for (int i = 0; i < NCTX; i++) {
		cuCtxSetCurrent(ctx[i]);
		seen.n = 0;
		ok &= cuKernelGetFunction(&f[i], k) == CUDA_SUCCESS;
		ok &= launch((CUfunction)k) == CUDA_SUCCESS;
		struct run r = last_run();
		ok &= r.ctx == (void *)ctx[i] && r.func == (void *)f[i] && r.dev == ctx_dev[i] && !strcmp(r.name, "kern_a");
		ok &= seen.n == 1 && seen.ctx == ctx[i] && seen.dev == ctx_dev[i] && seen.is_kernel && !strcmp(seen.name, "kern_a");
		seen.n = 0;
		ok &= launch(f[i]) == CUDA_SUCCESS && last_run().func == (void *)f[i];
		ok &= seen.n == 1 && !seen.is_kernel && !strcmp(seen.name, "kern_a");
		CUfunction g;
		ok &= cuLibraryGetModule(&lm[i], lib) == CUDA_SUCCESS && cuModuleGetFunction(&g, lm[i], "kern_b") == CUDA_SUCCESS &&
		      launch(g) == CUDA_SUCCESS && last_run().ctx == (void *)ctx[i];
		ok &= seen.n == 2 && !strcmp(seen.name, "kern_b");
		if (!ok) {
			printf("# context %d: ran %s in %p (want %p), event %s ctx %p dev %d\n", i, r.name, r.ctx,
			       (void *)ctx[i], seen.name, (void *)seen.ctx, seen.dev);
			break;
		}
		for (int j = 0; j < i; j++)
			distinct &= f[j] != f[i] && lm[j] != lm[i];
	}
	GX_CHECK(ok, "CUkernel in each context: cuKernelGetFunction, a launch with the CUkernel and cuLibraryGetModule "
		     "all reach that context's function; events name the kernel");
	GX_CHECK(distinct, "per-context functions and modules of one library are distinct");
	/* Destroy the created context: the library keeps working elsewhere. */
	cuCtxSetCurrent(ctx[3]);
	CUcontext dead = ctx[3];
	GX_CHECK(cuCtxDestroy(dead) == CUDA_SUCCESS, "destroy the created context");
	int rest = 1;
	for (int i = 0; i < 3; i++) {
		cuCtxSetCurrent(ctx[i]);
		CUfunction g;
		rest &= launch((CUfunction)k) == CUDA_SUCCESS && cuKernelGetFunction(&g, k) == CUDA_SUCCESS && g == f[i];
	}
	GX_CHECK(rest, "after destroying a context the library launches in the others, same functions");
	CUcontext c;
	GX_CHECK(cuCtxCreate(&c, NULL, 0, 0) == CUDA_SUCCESS, "a new context on device 0");
	ctx[3] = c;
	CUfunction g;
	GX_CHECK(cuKernelGetFunction(&g, k) == CUDA_SUCCESS && launch((CUfunction)k) == CUDA_SUCCESS &&
			 last_run().ctx == (void *)c && last_run().func == (void *)g,
		 "and in a new context it gets its own function");
	GX_CHECK(cuLibraryUnload(lib) == CUDA_SUCCESS && launch((CUfunction)k) == CUDA_ERROR_INVALID_HANDLE,
		 "library unloaded: its kernel is gone");

	/* A fatbin with compute_80 PTX (and sm_80 SASS): one rewrite. */
	FILE *fp = fopen(fatbin, "rb");
	static char buf[1 << 20];
	size_t n = fp ? fread(buf, 1, sizeof(buf), fp) : 0;
	if (fp)
		fclose(fp);
	mark = log_mark();
	cuCtxSetCurrent(ctx[0]);
	GX_CHECK(n > 0 && cuLibraryLoadData(&lib, buf, NULL, NULL, 0, NULL, NULL, 0) == CUDA_SUCCESS &&
			 log_count(mark, "reloaded from sm_80 PTX") == 1,
		 "nvcc fatbin as a library: its compute_80 PTX rewritten once for all devices");
	if (n)
		cuLibraryUnload(lib);
}

/* ---- threads, each with its own current context ---- */
static int iters;
static void *worker(void *arg)
{
	int i = (int)(intptr_t)arg;
	int bad = 0;
	if (i % 2)
		cuCtxPushCurrent(ctx[i]);
	else
		cuCtxSetCurrent(ctx[i]);
	for (int it = 0; it < iters && !bad; it++) {
		CUmodule m;
		CUfunction f;
		seen.n = 0;
		if (cuModuleLoadData(&m, PTX80) != CUDA_SUCCESS || cuModuleGetFunction(&f, m, "kern_b") != CUDA_SUCCESS ||
		    launch(f) != CUDA_SUCCESS) {
			bad = 1;
			break;
		}
		struct run r = last_run();
		if (r.ctx != (void *)ctx[i] || seen.n != 1 || seen.ctx != ctx[i] || seen.dev != ctx_dev[i] ||
		    strcmp(seen.name, "kern_b"))
			bad = 2;
		if (cuModuleUnload(m) != CUDA_SUCCESS)
			bad = 3;
	}
	if (i % 2) {
		CUcontext c = NULL;
		if (cuCtxPopCurrent(&c) != CUDA_SUCCESS || c != ctx[i])
			bad = 4;
	}
	return (void *)(intptr_t)bad;
}

static void test_threads(void)
{
	size_t c0, m0, f0, c1, m1, f1;
	table_counts(&c0, &m0, &f0);
	pthread_t t[NCTX];
	for (int i = 0; i < NCTX; i++)
		pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
	int bad = 0;
	for (int i = 0; i < NCTX; i++) {
		void *r;
		pthread_join(t[i], &r);
		if (r)
			printf("# thread %d failed (%d)\n", i, (int)(intptr_t)r), bad++;
	}
	table_counts(&c1, &m1, &f1);
	GX_CHECK(!bad, "%d threads with different current contexts (SetCurrent and Push/Pop): %d loads, lookups, "
		       "launches and unloads each, all in their own context",
		 NCTX, iters);
	GX_CHECK(m1 == m0 && f1 <= f0 + NCTX, "the shim's tables hold no module of the unloaded ones (%zu -> %zu modules)", m0, m1);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: test_multi FATBIN [quick]\n");
		return 2;
	}
	iters = argc > 2 ? 20 : 300;
	log_capture();
	int n = 0;
	GX_CHECK(cuInit(0) == CUDA_SUCCESS && cuDeviceGetCount(&n) == CUDA_SUCCESS && n == 3, "3 devices (%d)", n);
	bind();
	fake_strict_ctx(1);
	int id = p_subscribe(GX_EV_MASK(GX_EV_LAUNCH) | GX_EV_MASK(GX_EV_CTX_CREATE) | GX_EV_MASK(GX_EV_CTX_DESTROY),
			     on_launch, NULL);
	size_t c0, m0, f0;
	table_counts(&c0, &m0, &f0);
	int ok = 1;
	for (int i = 0; i < 3; i++)
		ok &= cuDevicePrimaryCtxRetain(&ctx[i], i) == CUDA_SUCCESS;
	ok &= cuCtxCreate(&ctx[3], NULL, 0, 0) == CUDA_SUCCESS;
	GX_CHECK(ok && ctx[0] != ctx[3], "primary contexts of 3 devices and a created one on device 0");
	int evok = nr_ctx_ev == 4;
	for (int i = 0; i < nr_ctx_ev && evok; i++)
		evok = ctx_ev[i].kind == GX_EV_CTX_CREATE && ctx_ev[i].ctx == ctx[i] && ctx_ev[i].dev == ctx_dev[i];
	GX_CHECK(evok, "context-create events carry each context's own device (primaries retained with no or another "
		       "context current)");
	/* Destroyed while another device's context is current. */
	CUcontext c2;
	nr_ctx_ev = 0;
	ok = cuCtxCreate(&c2, NULL, 0, 2) == CUDA_SUCCESS && cuCtxSetCurrent(ctx[1]) == CUDA_SUCCESS &&
	     cuCtxDestroy(c2) == CUDA_SUCCESS;
	GX_CHECK(ok && nr_ctx_ev == 2 && ctx_ev[1].kind == GX_EV_CTX_DESTROY && ctx_ev[1].ctx == c2 && ctx_ev[1].dev == 2,
		 "a context of device 2 destroyed while device 1's is current: the event names device 2 (%d)",
		 nr_ctx_ev == 2 ? ctx_ev[1].dev : -9);
	test_modules();
	test_library(argv[1]);
	test_threads();
	GX_CHECK(fake_cross_ctx() == 2,
		 "no handle used outside its context or after unload, but the two deliberate misuses (%ld)",
		 fake_cross_ctx());
	/* The shim caches each thread's last context -> device: a context
	 * destroyed and its address given to a new context of another device
	 * must not keep the old device. */
	fake_ctx_reuse(1);
	CUcontext a = NULL, b = NULL;
	CUmodule ma, mb;
	CUfunction fa, fb;
	int dev_a = -9, dev_b = -9;
	ok = cuCtxCreate(&a, NULL, 0, 2) == CUDA_SUCCESS && cuModuleLoadData(&ma, PTX80) == CUDA_SUCCESS &&
	     cuModuleGetFunction(&fa, ma, "kern_a") == CUDA_SUCCESS;
	seen.n = 0;
	ok &= ok && launch(fa) == CUDA_SUCCESS && seen.n == 1;
	dev_a = seen.dev;
	ok &= cuModuleUnload(ma) == CUDA_SUCCESS && cuCtxDestroy(a) == CUDA_SUCCESS &&
	      cuCtxCreate(&b, NULL, 0, 1) == CUDA_SUCCESS && cuModuleLoadData(&mb, PTX80) == CUDA_SUCCESS &&
	      cuModuleGetFunction(&fb, mb, "kern_a") == CUDA_SUCCESS;
	seen.n = 0;
	ok &= ok && launch(fb) == CUDA_SUCCESS && seen.n == 1;
	dev_b = seen.dev;
	fake_ctx_reuse(0);
	GX_CHECK(ok && a == b && dev_a == 2 && dev_b == 1,
		 "a context of device 2 destroyed and its address reused for device 1: launch events name device %d "
		 "then %d (want 2 then 1; same address: %d)",
		 dev_a, dev_b, a == b);
	ok = cuModuleUnload(mb) == CUDA_SUCCESS && cuCtxDestroy(b) == CUDA_SUCCESS;
	GX_CHECK(ok, "that context destroyed");
	p_unsubscribe(id);
	cuCtxSetCurrent(NULL);
	ok = cuCtxDestroy(ctx[3]) == CUDA_SUCCESS;
	for (int i = 0; i < 3; i++)
		ok &= cuDevicePrimaryCtxRelease(i) == CUDA_SUCCESS;
	size_t c1, m1, f1;
	table_counts(&c1, &m1, &f1);
	GX_CHECK(ok && m1 == m0 && c1 <= c0 + 1,
		 "contexts released: the shim's tables are back where they started (%zu ctx, %zu mods, %zu funcs; "
		 "were %zu, %zu, %zu)",
		 c1, m1, f1, c0, m0, f0);
	return gx_test_done();
}
