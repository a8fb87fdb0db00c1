/* persist.c — GPUEXT_PERSISTENT: launch kernels as persistent workers.
 *
 * With GPUEXT_PERSISTENT=1 (or `dynamic`, or `static`) modules are rewritten
 * with the persistent-worker transform in copy mode (ptx-rewrite/gx_ptx.h,
 * GX_PTX_PERSISTENT_COPY): every kernel K the pass accepts stays as it is and
 * gains a transformed copy `__gx_pw_K` in the same module (same globals).
 * The application keeps its handles of K; this file, a subscriber of the
 * shim's launch events, swaps each launch of K for the copy:
 *  - workers = blocks per SM (cuOccupancyMaxActiveBlocksPerMultiprocessor of
 *    the copy, same block size and dynamic shared memory) x SM count, capped
 *    at the original grid's block count, launched as a 1-D grid;
 *  - the work descriptor (ptx-rewrite/gx_work.h) lives in device memory, one
 *    per (context, stream; thread for the per-thread default stream), and is
 *    written whole (counter `next` = 0, total, grid, mode) by an async copy
 *    on the launch's stream right before the launch: stream order makes the
 *    reuse safe, concurrent streams never share one;
 *  - its device address is appended to the kernel's parameters.
 * Kernels the pass refused, and every launch this file cannot vouch for, run
 * the original K, with one log line per reason: cooperative launches,
 * parameters passed through `extra`, cuLaunchKernelEx attributes other than
 * priority/access-policy/memory-sync-domain, streams being captured into a
 * graph, graph kernel nodes (they may replay without the descriptor reset),
 * zero occupancy, an allocation or copy failing. Launches from inside other
 * event subscribers (nested) are not seen and run the original too. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <uthash.h>

#include "ptx-rewrite/gx_ptx.h"
#include "gpuext/gx_work.h"
#include "shim/gx_persist.h"
#include "shim/gx_shim_ev.h"
#include "shim/gx_tables.h"

/* A kernel with a persistent copy, from the rewriter's log. */
struct pkern {
	char *name, *copy;
	unsigned nparams; /* of the copy, descriptor included */
};

struct pmod {
	void *handle; /* CUmodule or CUlibrary */
	bool is_library;
	size_t n;
	struct pkern *k;
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
	const struct pkern *k; /* NULL: no copy, run as is */
	CUfunction copy;
	int dev;
	/* last occupancy query */
	unsigned occ_block, occ_smem;
	int occ;
	unsigned max_dyn_smem; /* copied from the original so far */
	bool announced;
	UT_hash_handle hh;
};

struct pdesc_key {
	CUcontext ctx;
	CUstream stream;
	pid_t tid; /* per-thread default stream only */
};
struct pdesc {
	struct pdesc_key key;
	CUdeviceptr d;
	UT_hash_handle hh;
};

#define MAX_DEVS 64
#define MAX_FREE 256

static int mode = -1; /* -1 off, else enum gx_work_mode */
static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static pthread_once_t sub_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t p_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pmod *mods;
static struct pfunc *funcs;
static struct pdesc *descs;
static struct {
	CUcontext ctx;
	CUdeviceptr d;
} spare[MAX_FREE]; /* descriptors of destroyed streams, for reuse */
static unsigned nr_spare;
static int sm_count[MAX_DEVS];
static int sub_id = -1;

static void read_env(void)
{
	const char *e = getenv("GPUEXT_PERSISTENT");
	if (!e || !*e || !strcmp(e, "0") || !strcmp(e, "off"))
		return;
	if (!strcmp(e, "1") || !strcmp(e, "dynamic"))
		mode = GX_WORK_DYNAMIC;
	else if (!strcmp(e, "static"))
		mode = GX_WORK_STATIC;
	else
		pr_warn("GPUEXT_PERSISTENT=%s: unknown value (1, dynamic, static or 0); persistent workers off", e);
}

int gx_persist_mode(void)
{
	pthread_once(&env_once, read_env);
	return mode;
}

/* ------------------------------------------------------------ module records */

static void pmod_free(struct pmod *m)
{
	for (size_t i = 0; i < m->n; i++) {
		free(m->k[i].name);
		free(m->k[i].copy);
	}
	free(m->k);
	free(m);
}

/* Forget a module's functions (handles may be reused after an unload). */
static void forget_mod_locked(void *handle)
{
	struct pmod *m;
	HASH_FIND_PTR(mods, &handle, m);
	if (m) {
		HASH_DEL(mods, m);
		pmod_free(m);
	}
	struct pfunc *f, *t;
	HASH_ITER(hh, funcs, f, t) {
		if (f->mod == handle || f->key.f == handle) {
			HASH_DEL(funcs, f);
			free(f);
		}
	}
}

int gx_persist_parse_log(const char *log, struct gx_persist_kernel **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	size_t cap = 0;
	for (const char *l = log; l && *l;) {
		const char *e = strchr(l, '\n');
		size_t len = e ? (size_t)(e - l) : strlen(l);
		char name[512], copy[600];
		unsigned np;
		char line[1300];
		if (len < sizeof(line)) {
			memcpy(line, l, len);
			line[len] = 0;
			if (sscanf(line, "persistent: %511[^:]: copy %599s transformed (work descriptor: parameter %u",
				   name, copy, &np) == 3 && np > 0) {
				if (*n == cap) {
					cap = cap ? 2 * cap : 8;
					struct gx_persist_kernel *nk = realloc(*out, cap * sizeof(*nk));
					if (!nk)
						return -ENOMEM;
					*out = nk;
				}
				struct gx_persist_kernel *k = &(*out)[*n];
				k->name = strdup(name);
				k->copy = strdup(copy);
				k->nparams = np;
				if (!k->name || !k->copy) {
					free(k->name);
					free(k->copy);
					return -ENOMEM;
				}
				(*n)++;
			}
		}
		l = e ? e + 1 : NULL;
	}
	return 0;
}

void gx_persist_module(void *handle, bool is_library, const char *log)
{
	if (gx_persist_mode() < 0 || !handle)
		return;
	struct gx_persist_kernel *k;
	size_t n;
	if (gx_persist_parse_log(log, &k, &n) < 0) {
		pr_warn("persistent: out of memory recording a module's copies; its kernels run unchanged");
		for (size_t i = 0; i < n; i++)
			free(k[i].name), free(k[i].copy);
		free(k);
		return;
	}
	pthread_mutex_lock(&p_lock);
	forget_mod_locked(handle);
	struct pmod *m = n ? calloc(1, sizeof(*m)) : NULL;
	if (m) {
		_Static_assert(sizeof(struct pkern) == sizeof(struct gx_persist_kernel), "same record");
		m->handle = handle;
		m->is_library = is_library;
		m->n = n;
		m->k = (struct pkern *)k;
		k = NULL;
		HASH_ADD_PTR(mods, handle, m);
	}
	pthread_mutex_unlock(&p_lock);
	if (k) {
		for (size_t i = 0; i < n; i++)
			free(k[i].name), free(k[i].copy);
		free(k);
	}
}

/* ---------------------------------------------------------------- launches */

static const struct pkern *find_kern(void *mod, const char *name, bool *is_library)
{
	struct pmod *m;
	HASH_FIND_PTR(mods, &mod, m);
	if (!m)
		return NULL;
	*is_library = m->is_library;
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->k[i].name, name))
			return &m->k[i];
	return NULL;
}

/* Resolve a launched handle (under p_lock). NULL only on ENOMEM. */
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
	if (gx_tab_func_info(ctx, f, name, sizeof(name), NULL, &mod) == 0 && mod) {
		pf->mod = mod;
		const struct pkern *k = find_kern(mod, name, &is_library);
		CUfunction copy = NULL;
		CUresult rc = CUDA_ERROR_NOT_FOUND;
		if (k && is_library) {
			CUkernel kk;
			rc = REAL(cuLibraryGetKernel)(&kk, (CUlibrary)mod, k->copy);
			if (rc == CUDA_SUCCESS)
				rc = REAL(cuKernelGetFunction)(&copy, kk);
		} else if (k) {
			rc = REAL(cuModuleGetFunction)(&copy, (CUmodule)mod, k->copy);
		}
		if (k && rc == CUDA_SUCCESS) {
			pf->k = k;
			pf->copy = copy;
			/* other subscribers (device policies) may look the copy up */
			gx_tab_add_func(ctx, copy, mod, false, k->copy);
		} else if (k) {
			char b[96];
			pr_warn("persistent: %s: its copy %s cannot be found (%s); it runs unchanged", name, k->copy,
				gx_cu_errname(rc, b, sizeof(b)));
		}
	}
	CUdevice d;
	if (pf->k && REAL(cuCtxGetDevice)(&d) == CUDA_SUCCESS && d >= 0 && d < MAX_DEVS) {
		pf->dev = d;
		if (!sm_count[d] &&
		    REAL(cuDeviceGetAttribute)(&sm_count[d], CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d) != CUDA_SUCCESS)
			sm_count[d] = 0;
	}
	if (pf->k && (pf->dev < 0 || sm_count[pf->dev] <= 0)) {
		pr_warn("persistent: %s: no SM count for the current device; it runs unchanged", name);
		pf->k = NULL;
	}
	HASH_ADD(hh, funcs, key, sizeof(pf->key), pf);
	return pf;
}

/* The stream's descriptor (under p_lock); 0 on failure. */
static CUdeviceptr desc_locked(CUcontext ctx, CUstream s)
{
	struct pdesc_key key;
	memset(&key, 0, sizeof(key)); /* hashed as bytes: padding included */
	key.ctx = ctx;
	key.stream = s;
	if (s == CU_STREAM_PER_THREAD)
		key.tid = (pid_t)syscall(SYS_gettid);
	struct pdesc *pd;
	HASH_FIND(hh, descs, &key, sizeof(key), pd);
	if (pd)
		return pd->d;
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return 0;
	pd->key = key;
	for (unsigned i = 0; i < nr_spare; i++)
		if (spare[i].ctx == ctx) {
			pd->d = spare[i].d;
			spare[i] = spare[--nr_spare];
			break;
		}
	if (!pd->d && REAL(cuMemAlloc_v2)(&pd->d, GX_WORK_SIZE) != CUDA_SUCCESS) {
		free(pd);
		return 0;
	}
	HASH_ADD(hh, descs, key, sizeof(pd->key), pd);
	return pd->d;
}

/* One log line per fallback reason. */
enum { FB_COOP, FB_EXTRA, FB_ATTR, FB_CAPTURE, FB_GRAPH, FB_OCC, FB_DESC, FB_SMEM, FB_GRID, FB__N };
static int fb_said[FB__N];
static const char *const fb_why[FB__N] = {
	[FB_COOP] = "cooperative launches",
	[FB_EXTRA] = "launches passing parameters through `extra`",
	[FB_ATTR] = "cuLaunchKernelEx launches with cluster, cooperative or other attributes",
	[FB_CAPTURE] = "launches into a stream being captured",
	[FB_GRAPH] = "graph kernel nodes",
	[FB_OCC] = "launches whose block size or shared memory leaves no block per SM",
	[FB_DESC] = "launches whose work descriptor could not be set up",
	[FB_SMEM] = "launches whose dynamic shared memory the copy cannot be given",
	[FB_GRID] = "launches of more than 2^32 blocks",
};

static CUresult fallback(int why, const char *name)
{
	if (!__atomic_exchange_n(&fb_said[why], 1, __ATOMIC_RELAXED))
		pr_info("persistent: %s run the original kernels (first: %s)", fb_why[why], name ? name : "?");
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

/* The launch's arguments with the descriptor appended (thread-local: the
 * shim calls the driver on this thread right after the subscribers). */
static __thread void **tl_params;
static __thread unsigned tl_cap;
static __thread CUdeviceptr tl_desc;

/* Give the copy the original's dynamic shared memory limit (set by the
 * application with cuFuncSetAttribute) when the launch needs more than the
 * default 48 KiB. */
static bool smem_ok(struct pfunc *pf, void *orig, int is_kernel, unsigned smem)
{
	if (smem <= 48 * 1024 || smem <= pf->max_dyn_smem)
		return true;
	int v = 0;
	CUresult rc = is_kernel ? REAL(cuKernelGetAttribute)(&v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
							     (CUkernel)orig, pf->dev)
				: REAL(cuFuncGetAttribute)(&v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
							   (CUfunction)orig);
	if (rc != CUDA_SUCCESS || v < (int)smem ||
	    REAL(cuFuncSetAttribute)(pf->copy, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, v) != CUDA_SUCCESS)
		return false;
	pf->max_dyn_smem = (unsigned)v;
	return true;
}

/* What a launch needs of its records, copied under the lock (a module may
 * be unloaded by another thread meanwhile). */
static __thread char tl_name[256], tl_copy[256];

static CUresult on_launch(struct gx_event *ev)
{
	struct gx_launch_event *l = &ev->launch;
	if (!ev->ctx || !l->func)
		return CUDA_SUCCESS;
	pthread_mutex_lock(&p_lock);
	struct pfunc *pf = resolve_locked(ev->ctx, l->func);
	if (!pf || !pf->k) {
		pthread_mutex_unlock(&p_lock);
		return CUDA_SUCCESS;
	}
	struct pkern kc = *pf->k, *k = &kc;
	snprintf(tl_name, sizeof(tl_name), "%s", pf->k->name);
	snprintf(tl_copy, sizeof(tl_copy), "%s", pf->k->copy);
	kc.name = tl_name;
	kc.copy = tl_copy;
	CUfunction copy = pf->copy;
	int dev = pf->dev;
	unsigned block = l->block[0] * l->block[1] * l->block[2];
	bool smem = smem_ok(pf, l->func, l->is_kernel, l->shared_mem);
	int occ = pf->occ_block == block && pf->occ_smem == l->shared_mem ? pf->occ : -1;
	bool announce = !pf->announced;
	pthread_mutex_unlock(&p_lock);

	if (l->api == GX_LAUNCH_COOPERATIVE)
		return fallback(FB_COOP, k->name);
	if (!l->kernel_params && (l->extra || k->nparams > 1))
		return fallback(FB_EXTRA, k->name);
	if (l->api == GX_LAUNCH_KERNEL_EX && !attrs_ok(l->config))
		return fallback(FB_ATTR, k->name);
	unsigned long long units = (unsigned long long)l->grid[0] * l->grid[1] * l->grid[2];
	if (!units || units > UINT32_MAX)
		return fallback(FB_GRID, k->name);
	if (!smem)
		return fallback(FB_SMEM, k->name);
	CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
	if (REAL(cuStreamIsCapturing)(l->stream, &cs) != CUDA_SUCCESS || cs != CU_STREAM_CAPTURE_STATUS_NONE)
		return fallback(FB_CAPTURE, k->name);
	if (occ < 0) {
		if (REAL(cuOccupancyMaxActiveBlocksPerMultiprocessor)(&occ, copy, (int)block, l->shared_mem) !=
		    CUDA_SUCCESS)
			occ = 0;
		pthread_mutex_lock(&p_lock);
		if ((pf = resolve_locked(ev->ctx, l->func)))
			pf->occ_block = block, pf->occ_smem = l->shared_mem, pf->occ = occ;
		pthread_mutex_unlock(&p_lock);
	}
	if (occ <= 0)
		return fallback(FB_OCC, k->name);
	unsigned long long workers = (unsigned long long)occ * (unsigned)sm_count[dev];
	if (workers > units)
		workers = units;

	pthread_mutex_lock(&p_lock);
	CUdeviceptr d = desc_locked(ev->ctx, l->stream);
	if (d && announce && (pf = resolve_locked(ev->ctx, l->func)) && !pf->announced)
		pf->announced = true;
	else
		announce = false;
	pthread_mutex_unlock(&p_lock);
	if (!d)
		return fallback(FB_DESC, k->name);
	struct gx_work_desc h = {
		.next = 0, .total = (unsigned)units,
		.grid_x = l->grid[0], .grid_y = l->grid[1], .grid_z = l->grid[2],
		.mode = (unsigned)mode,
	};
	_Static_assert(sizeof(h) == GX_WORK_SIZE, "descriptor layout");
	/* Pageable source: the driver has copied it when the call returns. */
	if (REAL(cuMemcpyHtoDAsync_v2)(d, &h, sizeof(h), l->stream) != CUDA_SUCCESS)
		return fallback(FB_DESC, k->name);
	if (k->nparams > tl_cap) {
		void **np = realloc(tl_params, k->nparams * sizeof(*np));
		if (!np)
			return fallback(FB_DESC, k->name);
		tl_params = np, tl_cap = k->nparams;
	}
	for (unsigned i = 0; i + 1 < k->nparams; i++)
		tl_params[i] = l->kernel_params[i];
	tl_desc = d;
	tl_params[k->nparams - 1] = &tl_desc;

	if (announce)
		pr_info("persistent: %s: launched as %s, %llu workers (%d per SM x %d SMs, capped at %llu blocks), %s",
			k->name, k->copy, workers, occ, sm_count[dev], units,
			mode == GX_WORK_DYNAMIC ? "dynamic" : "static");
	l->func = copy;
	l->is_kernel = 0;
	l->name = k->copy;
	l->grid[0] = (unsigned)workers, l->grid[1] = 1, l->grid[2] = 1;
	l->kernel_params = tl_params;
	l->extra = NULL;
	return CUDA_SUCCESS;
}

static CUresult on_event(struct gx_event *ev, void *cookie)
{
	(void)cookie;
	switch (ev->kind) {
	case GX_EV_LAUNCH:
		return on_launch(ev);
	case GX_EV_GRAPH_KERNEL_NODE: {
		void *f = ev->graph.params.func ? (void *)ev->graph.params.func : (void *)ev->graph.params.kern;
		pthread_mutex_lock(&p_lock);
		struct pfunc *pf = ev->ctx && f ? resolve_locked(ev->ctx, f) : NULL;
		const char *name = pf && pf->k ? pf->k->name : NULL;
		pthread_mutex_unlock(&p_lock);
		if (name)
			fallback(FB_GRAPH, name);
		return CUDA_SUCCESS;
	}
	case GX_EV_MODULE_UNLOAD:
		pthread_mutex_lock(&p_lock);
		forget_mod_locked(ev->module.handle);
		pthread_mutex_unlock(&p_lock);
		return CUDA_SUCCESS;
	case GX_EV_STREAM_DESTROY: {
		pthread_mutex_lock(&p_lock);
		struct pdesc *pd, *t;
		HASH_ITER(hh, descs, pd, t) {
			if (pd->key.stream != ev->stream.stream)
				continue;
			HASH_DEL(descs, pd);
			if (nr_spare < MAX_FREE) {
				spare[nr_spare].ctx = pd->key.ctx;
				spare[nr_spare++].d = pd->d;
			}
			free(pd);
		}
		pthread_mutex_unlock(&p_lock);
		return CUDA_SUCCESS;
	}
	case GX_EV_CTX_DESTROY: {
		/* Device memory goes with the context. */
		pthread_mutex_lock(&p_lock);
		struct pdesc *pd, *t;
		HASH_ITER(hh, descs, pd, t) {
			if (pd->key.ctx == ev->ctx) {
				HASH_DEL(descs, pd);
				free(pd);
			}
		}
		for (unsigned i = 0; i < nr_spare;)
			if (spare[i].ctx == ev->ctx)
				spare[i] = spare[--nr_spare];
			else
				i++;
		struct pfunc *f, *ft;
		HASH_ITER(hh, funcs, f, ft) {
			if (f->key.ctx == ev->ctx) {
				HASH_DEL(funcs, f);
				free(f);
			}
		}
		pthread_mutex_unlock(&p_lock);
		return CUDA_SUCCESS;
	}
	default:
		return CUDA_SUCCESS;
	}
}

static void subscribe(void)
{
	sub_id = gx_events_subscribe(GX_EV_MASK(GX_EV_LAUNCH) | GX_EV_MASK(GX_EV_GRAPH_KERNEL_NODE) |
					     GX_EV_MASK(GX_EV_MODULE_UNLOAD) | GX_EV_MASK(GX_EV_STREAM_DESTROY) |
					     GX_EV_MASK(GX_EV_CTX_DESTROY),
				     on_event, NULL);
	if (sub_id < 0)
		pr_warn("persistent: cannot subscribe to launches (error %d); kernels run unchanged", sub_id);
	else
		pr_info("persistent: kernels the transform accepts launch as persistent workers (%s mode)",
			mode == GX_WORK_DYNAMIC ? "dynamic" : "static");
}

int gx_persist_rewrite_opts(struct gx_ptx_rewrite_opts *opts)
{
	if (gx_persist_mode() < 0)
		return 0;
	pthread_once(&sub_once, subscribe);
	if (sub_id < 0)
		return 0;
	opts->persistent = GX_PTX_PERSISTENT_COPY;
	return 1;
}

void gx_persist_reset(void)
{
	pthread_mutex_lock(&p_lock);
	struct pmod *m, *mt;
	HASH_ITER(hh, mods, m, mt) {
		HASH_DEL(mods, m);
		pmod_free(m);
	}
	struct pfunc *f, *ft;
	HASH_ITER(hh, funcs, f, ft) {
		HASH_DEL(funcs, f);
		free(f);
	}
	struct pdesc *pd, *pt;
	HASH_ITER(hh, descs, pd, pt) {
		HASH_DEL(descs, pd);
		free(pd);
	}
	nr_spare = 0;
	pthread_mutex_unlock(&p_lock);
}

__attribute__((constructor)) static void persist_init(void)
{
	gx_lock_register(&p_lock, GX_LOCK_TABLES - 2);
}

__attribute__((destructor)) static void persist_fini(void)
{
	gx_persist_reset(); /* no leaks reported at exit */
	free(tl_params);
}
