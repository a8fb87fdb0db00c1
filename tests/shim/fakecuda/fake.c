/* fake.c — a TEST-ONLY stand-in for NVIDIA's libcuda.so.1 (never part of
 * the product). The shim's tests point GPUEXT_REAL_LIBCUDA at it. It exports
 * the driver's names (most as generated recorders, fake_gen.c), records
 * every call, and implements just enough semantics to check the shim:
 * devices, primary and created contexts, PTX modules whose
 * kernels are the `.entry` names, libraries, launches, cuLink*, graph
 * nodes, managed memory, streams, and cuGetProcAddress with versions/flags.
 * Several devices and contexts behave like the driver's: FAKECUDA_DEVICES
 * (1..4, default 2: sm_90, sm_80, sm_90, sm_86), primary and created
 * contexts, cuCtxPush/PopCurrent; modules and functions belong to the
 * context current at their creation; a library (context-independent) gets
 * a module per context lazily, at cuKernelGetFunction, cuLibraryGetModule or
 * a launch with the CUkernel, JIT'd for that context's device (PTX for a
 * newer arch fails there). A handle used in another context than its own,
 * or after its module/context is gone, counts in fake_cross_ctx(); with
 * fake_strict_ctx(1) such calls also fail, as a driver would.
 * Test programs read the record through fake_* functions (dlopen the same
 * path: the shim opened it RTLD_LOCAL, so the handle is shared). With
 * FAKECUDA_TRACE=FILE every call's name is appended to FILE. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define FX __attribute__((visibility("default")))

/* ---- call record ---- */
#define NREC 1024
static struct {
	char name[64];
	long n;
} rec[NREC];
static pthread_mutex_t rec_lock = PTHREAD_MUTEX_INITIALIZER;
static int trace_fd = -2;

FX void fake_rec(const char *name)
{
	pthread_mutex_lock(&rec_lock);
	if (trace_fd == -2) {
		const char *t = getenv("FAKECUDA_TRACE");
		trace_fd = t ? open(t, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600) : -1;
	}
	for (int i = 0; i < NREC; i++) {
		if (!rec[i].name[0]) {
			snprintf(rec[i].name, sizeof(rec[i].name), "%s", name);
			rec[i].n = 1;
			break;
		}
		if (!strcmp(rec[i].name, name)) {
			rec[i].n++;
			break;
		}
	}
	if (trace_fd >= 0) {
		char b[80];
		int n = snprintf(b, sizeof(b), "%s\n", name);
		if (write(trace_fd, b, n) < 0) {
		}
	}
	pthread_mutex_unlock(&rec_lock);
}

FX long fake_count(const char *name)
{
	long n = 0;
	pthread_mutex_lock(&rec_lock);
	for (int i = 0; i < NREC && rec[i].name[0]; i++)
		if (!strcmp(rec[i].name, name))
			n = rec[i].n;
	pthread_mutex_unlock(&rec_lock);
	return n;
}

FX long fake_total(void)
{
	long n = 0;
	pthread_mutex_lock(&rec_lock);
	for (int i = 0; i < NREC && rec[i].name[0]; i++)
		n += rec[i].n;
	pthread_mutex_unlock(&rec_lock);
	return n;
}

#define REC() fake_rec(__func__)
static int fk_mem_untrack(uint64_t key);
static void fk_mem_track(uint64_t key, size_t n);
static CUresult fk_mem_virtual(uint64_t *key, size_t n);

/* ---- devices and contexts ---- */
#define MAXDEV 4
struct fctx {
	int dev;
	int primary;
	int alive;
	unsigned id;       /* never reused, unlike addresses */
	struct fctx *next; /* every context ever made: kept, so stale handles stay comparable */
};
static struct fctx primaries[MAXDEV] = { { 0, 1, 0, 1, NULL }, { 1, 1, 0, 2, NULL }, { 2, 1, 0, 3, NULL },
					 { 3, 1, 0, 4, NULL } };
static int primary_refs[MAXDEV];
static __thread struct fctx *cur;
#define STACK 16
static __thread struct fctx *stack[STACK]; /* below cur: cuCtxPushCurrent */
static __thread int depth;
static const int cc[MAXDEV][2] = { { 9, 0 }, { 8, 0 }, { 9, 0 }, { 8, 6 } };
static int initialised;
static struct fctx *all_ctxs;
static unsigned ctx_ids = MAXDEV;
static int strict_ctx;
static long cross_ctx;
static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;

static int ndev(void)
{
	const char *e = getenv("FAKECUDA_DEVICES");
	int n = e ? atoi(e) : 2;
	return n < 1 ? 1 : n > MAXDEV ? MAXDEV : n;
}

FX void fake_strict_ctx(int on) { strict_ctx = on; }
/* fake_ctx_reuse(1): the next created context gets the address of the last
 * destroyed one (a real driver's allocator may do so), for another device
 * if asked: what caches keyed by context address must survive. */
static int ctx_reuse;
static struct fctx *ctx_dead_last;
FX void fake_ctx_reuse(int on) { ctx_reuse = on; }
FX long fake_cross_ctx(void) { return __atomic_load_n(&cross_ctx, __ATOMIC_RELAXED); }
FX unsigned fake_ctx_id(CUcontext c) { return c ? ((struct fctx *)c)->id : 0; }

/* A handle of context `owner` (or a dead one) used while `cur` is current. */
static int misuse(const char *what, const struct fctx *owner, int dead)
{
	if (!dead && owner == cur)
		return 0;
	__atomic_add_fetch(&cross_ctx, 1, __ATOMIC_RELAXED);
	if (getenv("FAKECUDA_TRACE_MISUSE"))
		fprintf(stderr, "fakecuda: %s: handle of context %u%s used in context %u\n", what, owner ? owner->id : 0,
			dead ? " (gone)" : "", cur ? cur->id : 0);
	return strict_ctx;
}

/* FAKECUDA_INIT_FAIL=N: cuInit returns CUresult N (100: no device), as on
 * a machine whose driver sees no GPU. */
FX CUresult cuInit(unsigned int f)
{
	REC();
	if (f)
		return CUDA_ERROR_INVALID_VALUE;
	const char *e = getenv("FAKECUDA_INIT_FAIL");
	if (e && atoi(e))
		return (CUresult)atoi(e);
	initialised = 1;
	return CUDA_SUCCESS;
}

FX CUresult cuDriverGetVersion(int *v)
{
	REC();
	if (!v)
		return CUDA_ERROR_INVALID_VALUE;
	*v = 13000;
	return CUDA_SUCCESS;
}

FX CUresult cuDeviceGetCount(int *n)
{
	REC();
	*n = ndev();
	return initialised ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

FX CUresult cuDeviceGet(CUdevice *d, int ord)
{
	REC();
	if (ord < 0 || ord >= ndev())
		return CUDA_ERROR_INVALID_DEVICE;
	*d = ord;
	return CUDA_SUCCESS;
}

FX CUresult cuDeviceGetName(char *name, int len, CUdevice d)
{
	REC();
	if (!name || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (d < 0 || d >= ndev())
		return CUDA_ERROR_INVALID_DEVICE;
	snprintf(name, len, "fakecuda GPU %d", d);
	return CUDA_SUCCESS;
}

FX CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d)
{
	REC();
	if (d < 0 || d >= ndev())
		return CUDA_ERROR_INVALID_DEVICE;
	if (a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
		*v = cc[d][0];
	else if (a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
		*v = cc[d][1];
	else
		*v = 1;
	return CUDA_SUCCESS;
}

FX CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
	REC();
	if (d < 0 || d >= ndev())
		return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&ctx_lock);
	primaries[d].alive = 1;
	primary_refs[d]++;
	pthread_mutex_unlock(&ctx_lock);
	*c = (CUcontext)&primaries[d];
	return CUDA_SUCCESS;
}

static void ctx_dies(struct fctx *c);

FX CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d)
{
	REC();
	pthread_mutex_lock(&ctx_lock);
	if (d < 0 || d >= ndev() || !primary_refs[d]) {
		pthread_mutex_unlock(&ctx_lock);
		return CUDA_ERROR_INVALID_CONTEXT;
	}
	int last = --primary_refs[d] == 0;
	if (last)
		primaries[d].alive = 0;
	pthread_mutex_unlock(&ctx_lock);
	if (last)
		ctx_dies(&primaries[d]);
	return CUDA_SUCCESS;
}

FX CUresult cuCtxCreate_v4(CUcontext *pc, CUctxCreateParams *p, unsigned f, CUdevice d)
{
	(void)p, (void)f;
	REC();
	if (d < 0 || d >= ndev())
		return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&ctx_lock);
	struct fctx *c = ctx_reuse ? ctx_dead_last : NULL;
	ctx_dead_last = NULL;
	if (!c) {
		c = calloc(1, sizeof(*c));
		c->next = all_ctxs;
		all_ctxs = c;
	}
	c->dev = d;
	c->alive = 1;
	c->id = ++ctx_ids;
	pthread_mutex_unlock(&ctx_lock);
	/* The new context is pushed on the calling thread's stack. */
	if (cur && depth < STACK)
		stack[depth++] = cur;
	cur = c;
	*pc = (CUcontext)c;
	return CUDA_SUCCESS;
}

FX CUresult cuCtxCreate_v2(CUcontext *pc, unsigned f, CUdevice d)
{
	return cuCtxCreate_v4(pc, NULL, f, d);
}

FX CUresult cuCtxDestroy_v2(CUcontext c)
{
	REC();
	struct fctx *x = (struct fctx *)c;
	if (!x || x->primary || !x->alive)
		return CUDA_ERROR_INVALID_CONTEXT;
	x->alive = 0;
	if (cur == x)
		cur = depth ? stack[--depth] : NULL;
	ctx_dies(x);
	pthread_mutex_lock(&ctx_lock);
	ctx_dead_last = x;
	pthread_mutex_unlock(&ctx_lock);
	return CUDA_SUCCESS;
}

FX CUresult cuCtxSetCurrent(CUcontext c)
{
	REC();
	cur = (struct fctx *)c;
	return CUDA_SUCCESS;
}

FX CUresult cuCtxGetCurrent(CUcontext *c)
{
	REC();
	*c = (CUcontext)cur;
	return CUDA_SUCCESS;
}

FX CUresult cuCtxPushCurrent_v2(CUcontext c)
{
	REC();
	if (!c)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (depth >= STACK)
		return CUDA_ERROR_OUT_OF_MEMORY;
	stack[depth++] = cur;
	cur = (struct fctx *)c;
	return CUDA_SUCCESS;
}

FX CUresult cuCtxPopCurrent_v2(CUcontext *c)
{
	REC();
	if (!cur)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (c)
		*c = (CUcontext)cur;
	cur = depth ? stack[--depth] : NULL;
	return CUDA_SUCCESS;
}

FX CUresult cuCtxGetDevice(CUdevice *d)
{
	REC();
	if (!cur)
		return CUDA_ERROR_INVALID_CONTEXT;
	*d = cur->dev;
	return CUDA_SUCCESS;
}

/* FAKECUDA_NO_GETDEVICE_V2=1: a driver before 12.8, without it. */
FX CUresult cuCtxGetDevice_v2(CUdevice *d, CUcontext c)
{
	REC();
	if (getenv("FAKECUDA_NO_GETDEVICE_V2"))
		return CUDA_ERROR_NOT_FOUND;
	struct fctx *x = c ? (struct fctx *)c : cur;
	if (!x)
		return CUDA_ERROR_INVALID_CONTEXT;
	*d = x->dev;
	return CUDA_SUCCESS;
}

static void fk_sync_all(void);
static void fk_pools_sync(void);
FX CUresult cuCtxSynchronize(void)
{
	REC();
	fk_sync_all();
	fk_pools_sync();
	return CUDA_SUCCESS;
}
FX CUresult cuCtxSynchronize_v2(CUcontext c)
{
	(void)c;
	REC();
	fk_sync_all();
	fk_pools_sync();
	return CUDA_SUCCESS;
}

FX CUresult cuGetErrorName(CUresult e, const char **s)
{
	REC();
	switch (e) {
	case CUDA_SUCCESS: *s = "CUDA_SUCCESS"; break;
	case CUDA_ERROR_INVALID_PTX: *s = "CUDA_ERROR_INVALID_PTX"; break;
	case CUDA_ERROR_NOT_FOUND: *s = "CUDA_ERROR_NOT_FOUND"; break;
	case CUDA_ERROR_NO_DEVICE: *s = "CUDA_ERROR_NO_DEVICE"; break;
	default: *s = "CUDA_ERROR_UNKNOWN"; break;
	}
	return CUDA_SUCCESS;
}

/* ---- modules, libraries, functions ---- */
struct fmod {
	struct fmod *next; /* every module ever made: reachable, so no false leak reports */
	struct fctx *ctx;  /* NULL for a library */
	int is_library, dead;
	unsigned long died; /* when it was unloaded (a sequence number) */
	struct fmod *lib;  /* a library's per-context module: its library */
	char *text;   /* copy of the image (PTX or a fake cubin) */
	const void *image; /* pointer the loader got */
};
struct ffunc {
	struct ffunc *next; /* every handle ever made: kept reachable */
	struct fmod *mod;
	struct fctx *ctx;   /* NULL for a CUkernel */
	int is_kernel, dead;
	int max_dyn; /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as set (0: 48 KiB) */
	char name[128];
};

static struct fmod *all_mods;
static struct ffunc *all_funcs;
static pthread_mutex_t obj_lock = PTHREAD_MUTEX_INITIALIZER;
static const void *reject_not_at; /* PTX loads elsewhere are rejected */
static const void *last_image;
static unsigned long last_jit_nopts;

FX void fake_reject_ptx_not_at(const void *p) { reject_not_at = p; }
FX const void *fake_last_image(void) { return last_image; }

/* Would this PTX JIT for the device of context c? */
static int ptx_fits(const char *text, const struct fctx *c)
{
	if (!memcmp(text, "\177ELF", 4) || !c)
		return 1;
	const char *t = strstr(text, ".target sm_");
	return !t || atoi(t + 11) <= cc[c->dev][0] * 10 + cc[c->dev][1];
}

/* what the fake cuLinkComplete returns for one PTX input */
#define FAKE_CUBIN "\177ELF fake cubin\n"

/* FAKECUDA_REUSE_HANDLES=1: a module loaded after an unload gets the
 * unloaded one's handle, and its functions the handles of the unloaded
 * module's functions of the same name, as the real driver may (its handles
 * are addresses it reuses). */
static int reuse_on(void)
{
	const char *e = getenv("FAKECUDA_REUSE_HANDLES");
	return e && *e == '1';
}

static struct fmod *mod_new(struct fctx *ctx, int is_library, const char *text, size_t n, const void *img)
{
	struct fmod *m = NULL;
	pthread_mutex_lock(&obj_lock);
	/* the first one unloaded: the application's own, before any module
	 * the shim unloaded after it */
	for (struct fmod *k = all_mods; k && !is_library && reuse_on(); k = k->next)
		if (k->dead && !k->is_library && !k->lib && k->ctx == ctx && (!m || k->died < m->died))
			m = k;
	pthread_mutex_unlock(&obj_lock);
	int reused = m != NULL;
	if (!m)
		m = calloc(1, sizeof(*m));
	m->ctx = ctx;
	m->is_library = is_library;
	m->image = img;
	m->text = malloc(n + 1);
	memcpy(m->text, text, n);
	m->text[n] = 0;
	pthread_mutex_lock(&obj_lock);
	m->dead = 0;
	if (!reused) {
		m->next = all_mods;
		all_mods = m;
	}
	pthread_mutex_unlock(&obj_lock);
	return m;
}

/* An uncompressed fatbin (nvcc --compress-mode=none): its PTX text stands
 * for its kernels, as if the driver had picked its SASS. NULL if img is not
 * a fatbin or has no PTX text. */
static const char *fatbin_ptx(const void *img)
{
	uint32_t magic;
	uint64_t size;
	memcpy(&magic, img, sizeof(magic));
	if (magic != 0xBA55ED50u)
		return NULL;
	memcpy(&size, (const char *)img + 8, sizeof(size));
	return size < (64u << 20) ? memmem(img, 16 + size, ".version", 8) : NULL;
}

static CUresult load(struct fmod **out, const void *img, int is_library, unsigned nopt, CUjit_option *o, void **v)
{
	const char *s = img;
	last_image = img;
	last_jit_nopts = nopt;
	if (!s)
		return CUDA_ERROR_INVALID_VALUE;
	const char *fp = fatbin_ptx(img);
	if (fp)
		s = fp;
	int is_elf = !memcmp(s, "\177ELF", 4);
	/* a cubin JIT-compiled from rejected PTX would not exist either */
	if (is_elf && reject_not_at && !strncmp(s, FAKE_CUBIN, sizeof(FAKE_CUBIN) - 1))
		return CUDA_ERROR_INVALID_IMAGE;
	if (!is_elf) {
		if (!strstr(s, ".version"))
			return CUDA_ERROR_INVALID_IMAGE;
		if (reject_not_at && img != reject_not_at)
			return CUDA_ERROR_INVALID_PTX;
		/* Modules JIT now; libraries when a context first uses them. */
		if (!is_library && !ptx_fits(s, cur))
			return CUDA_ERROR_INVALID_PTX;
	}
	/* JIT option write-back: CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES gets 5, the log "fake\n". */
	for (unsigned i = 0; i < nopt; i++) {
		if (o[i] == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES)
			v[i] = (void *)(uintptr_t)5;
		if (o[i] == CU_JIT_WALL_TIME)
			{ float w = 1.5f; v[i] = NULL; memcpy(&v[i], &w, sizeof(w)); }
	}
	/* a fake cubin from cuLinkComplete carries its PTX's kernels */
	size_t tl = is_elf && strncmp(s, FAKE_CUBIN, sizeof(FAKE_CUBIN) - 1) ? 64 : strlen(s) + 1;
	*out = mod_new(is_library ? NULL : cur, is_library, s, tl, img);
	return CUDA_SUCCESS;
}

FX CUresult cuModuleLoadDataEx(CUmodule *m, const void *img, unsigned n, CUjit_option *o, void **v)
{
	REC();
	if (!cur)
		return CUDA_ERROR_INVALID_CONTEXT;
	return load((struct fmod **)m, img, 0, n, o, v);
}

FX CUresult cuModuleLoadData(CUmodule *m, const void *img)
{
	REC();
	if (!cur)
		return CUDA_ERROR_INVALID_CONTEXT;
	return load((struct fmod **)m, img, 0, 0, NULL, NULL);
}

FX CUresult cuModuleLoadFatBinary(CUmodule *m, const void *img)
{
	REC();
	if (!cur)
		return CUDA_ERROR_INVALID_CONTEXT;
	return load((struct fmod **)m, img, 0, 0, NULL, NULL);
}

static CUresult load_file(struct fmod **m, const char *path, int is_library)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return CUDA_ERROR_FILE_NOT_FOUND;
	char *buf = malloc(1 << 16);
	size_t n = fread(buf, 1, (1 << 16) - 1, f);
	fclose(f);
	buf[n] = 0;
	CUresult rc = load(m, buf, is_library, 0, NULL, NULL);
	if (rc == CUDA_SUCCESS)
		(*m)->image = NULL;
	free(buf);
	return rc;
}

FX CUresult cuModuleLoad(CUmodule *m, const char *path)
{
	REC();
	if (!cur)
		return CUDA_ERROR_INVALID_CONTEXT;
	return load_file((struct fmod **)m, path, 0);
}

/* Everything made from module x (its functions, a library's per-context
 * modules and their functions) is gone. */
static void mod_dies(struct fmod *x)
{
	static unsigned long deaths;
	pthread_mutex_lock(&obj_lock);
	x->dead = 1;
	x->died = ++deaths;
	for (struct fmod *k = all_mods; k; k = k->next)
		if (k->lib == x)
			k->dead = 1;
	for (struct ffunc *f = all_funcs; f; f = f->next)
		if (f->mod == x || (f->mod && f->mod->lib == x))
			f->dead = 1;
	pthread_mutex_unlock(&obj_lock);
}

static void ctx_dies(struct fctx *c)
{
	pthread_mutex_lock(&obj_lock);
	for (struct fmod *k = all_mods; k; k = k->next)
		if (k->ctx == c)
			k->dead = 1;
	for (struct ffunc *f = all_funcs; f; f = f->next)
		if (f->ctx == c)
			f->dead = 1;
	pthread_mutex_unlock(&obj_lock);
}

FX CUresult cuModuleUnload(CUmodule m)
{
	REC();
	struct fmod *x = (struct fmod *)m;
	if (!x || x->dead || x->is_library || x->lib)
		return CUDA_ERROR_INVALID_HANDLE;
	if (misuse("cuModuleUnload", x->ctx, 0))
		return CUDA_ERROR_INVALID_CONTEXT;
	mod_dies(x);
	free(x->text);
	x->text = NULL;
	return CUDA_SUCCESS;
}

/* The function `name` of module m in context c: one handle per (module,
 * name), made on first use, like the driver. */
static CUresult get_func(struct fmod *m, const char *name, struct ffunc **out, int is_kernel)
{
	if (!m || !name || m->dead || !m->text)
		return CUDA_ERROR_INVALID_HANDLE;
	char pat[160];
	snprintf(pat, sizeof(pat), ".entry %s", name);
	if (memcmp(m->text, "\177ELF", 4) && !strstr(m->text, pat))
		return CUDA_ERROR_NOT_FOUND;
	pthread_mutex_lock(&obj_lock);
	struct ffunc *f = all_funcs;
	for (; f; f = f->next)
		if (f->mod == m && (!f->dead || reuse_on()) && f->is_kernel == is_kernel && !strcmp(f->name, name))
			break;
	if (f && f->dead) { /* a reused module's function (FAKECUDA_REUSE_HANDLES) */
		f->dead = 0;
		f->max_dyn = 0;
	}
	if (!f) {
		f = calloc(1, sizeof(*f));
		f->next = all_funcs;
		all_funcs = f;
		f->mod = m;
		f->ctx = is_kernel ? NULL : m->ctx;
		f->is_kernel = is_kernel;
		snprintf(f->name, sizeof(f->name), "%s", name);
	}
	pthread_mutex_unlock(&obj_lock);
	*out = f;
	return CUDA_SUCCESS;
}

FX CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
	REC();
	struct fmod *x = (struct fmod *)m;
	if (x && misuse("cuModuleGetFunction", x->ctx, x->dead))
		return CUDA_ERROR_INVALID_CONTEXT;
	return get_func(x, name, (struct ffunc **)f, 0);
}

FX CUresult cuLibraryLoadData(CUlibrary *l, const void *code, CUjit_option *jo, void **jv, unsigned nj,
			      CUlibraryOption *lo, void **lv, unsigned nl)
{
	(void)lo, (void)lv, (void)nl;
	REC();
	return load((struct fmod **)l, code, 1, nj, jo, jv);
}

FX CUresult cuLibraryLoadFromFile(CUlibrary *l, const char *path, CUjit_option *jo, void **jv, unsigned nj,
				  CUlibraryOption *lo, void **lv, unsigned nl)
{
	(void)lo, (void)lv, (void)nl, (void)jo, (void)jv, (void)nj;
	REC();
	return load_file((struct fmod **)l, path, 1);
}

FX CUresult cuLibraryUnload(CUlibrary l)
{
	REC();
	struct fmod *x = (struct fmod *)l;
	if (!x || x->dead || !x->is_library)
		return CUDA_ERROR_INVALID_HANDLE;
	mod_dies(x);
	return CUDA_SUCCESS;
}

FX CUresult cuLibraryGetKernel(CUkernel *k, CUlibrary l, const char *name)
{
	REC();
	struct fmod *x = (struct fmod *)l;
	if (!x || !x->is_library)
		return CUDA_ERROR_INVALID_HANDLE;
	return get_func(x, name, (struct ffunc **)k, 1);
}

/* A library's module in the current context, loaded (JIT'd for its device)
 * on first use. */
static CUresult lib_module(struct fmod *lib, struct fmod **out)
{
	if (!lib || lib->dead || !lib->is_library)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!cur || !cur->alive)
		return CUDA_ERROR_INVALID_CONTEXT;
	pthread_mutex_lock(&obj_lock);
	struct fmod *m = all_mods;
	for (; m; m = m->next)
		if (m->lib == lib && m->ctx == cur && !m->dead)
			break;
	pthread_mutex_unlock(&obj_lock);
	if (!m) {
		if (!ptx_fits(lib->text, cur))
			return CUDA_ERROR_INVALID_PTX;
		m = mod_new(cur, 0, lib->text, strlen(lib->text) + 1, lib->image);
		m->lib = lib;
	}
	*out = m;
	return CUDA_SUCCESS;
}

static CUresult kernel_function(struct ffunc *k, struct ffunc **out)
{
	if (!k || !k->is_kernel || k->dead)
		return CUDA_ERROR_INVALID_HANDLE;
	struct fmod *m;
	CUresult rc = lib_module(k->mod, &m);
	return rc != CUDA_SUCCESS ? rc : get_func(m, k->name, out, 0);
}

FX CUresult cuKernelGetFunction(CUfunction *f, CUkernel k)
{
	REC();
	return kernel_function((struct ffunc *)k, (struct ffunc **)f);
}

FX CUresult cuLibraryGetModule(CUmodule *m, CUlibrary l)
{
	REC();
	return lib_module((struct fmod *)l, (struct fmod **)m);
}

/* FAKECUDA_GLOBALS=1: a module's `.b8 NAME[N]` variables (the device
 * runtime's __gx_devrt) can be looked up and written, and a function names
 * its module; off by default (the other tests' device runtime finds no
 * module of its own, as it always has here). fake_global_writes(NAME): how
 * many bytes were written to NAME in every module, after the fact. */
struct fglobal {
	struct fglobal *next;
	struct fmod *mod;
	char name[64];
	size_t size;
	unsigned char data[];
};
static struct fglobal *all_globals;
static int globals_on(void)
{
	const char *e = getenv("FAKECUDA_GLOBALS");
	return e && *e == '1';
}

__attribute__((weak)) FX CUresult cuFuncGetModule(CUmodule *m, CUfunction f)
{
	REC();
	struct ffunc *x = (struct ffunc *)f;
	if (!globals_on())
		return CUDA_ERROR_NOT_SUPPORTED;
	if (!m || !x || x->dead)
		return CUDA_ERROR_INVALID_HANDLE;
	*m = (CUmodule)x->mod;
	return CUDA_SUCCESS;
}

FX CUresult fake_module_global(CUdeviceptr *p, size_t *n, CUmodule m, const char *name);
__attribute__((weak)) FX CUresult cuModuleGetGlobal_v2(CUdeviceptr *p, size_t *n, CUmodule m, const char *name)
{
	REC();
	return fake_module_global(p, n, m, name);
}

/* The body of cuModuleGetGlobal_v2, for a fake that overrides it for names
 * of its own (tests/attach/fakedev.c). */
FX CUresult fake_module_global(CUdeviceptr *p, size_t *n, CUmodule m, const char *name)
{
	struct fmod *x = (struct fmod *)m;
	if (!globals_on())
		return CUDA_ERROR_NOT_SUPPORTED;
	if (!x || x->dead || !x->text || !name || strlen(name) >= 64)
		return CUDA_ERROR_INVALID_HANDLE;
	char pat[80];
	snprintf(pat, sizeof(pat), " %s[", name);
	const char *d = strstr(x->text, pat);
	if (!d)
		return CUDA_ERROR_NOT_FOUND;
	size_t size = strtoul(d + strlen(pat), NULL, 10);
	pthread_mutex_lock(&obj_lock);
	struct fglobal *g = all_globals;
	while (g && !(g->mod == x && !strcmp(g->name, name)))
		g = g->next;
	if (!g && (g = calloc(1, sizeof(*g) + size))) {
		g->mod = x;
		g->size = size;
		snprintf(g->name, sizeof(g->name), "%s", name);
		g->next = all_globals;
		all_globals = g;
	}
	pthread_mutex_unlock(&obj_lock);
	if (!g)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (p)
		*p = (CUdeviceptr)(uintptr_t)g->data;
	if (n)
		*n = g->size;
	return CUDA_SUCCESS;
}

/* Modules whose NAME holds a nonzero byte: the ones somebody wrote. */
FX long fake_globals_written(const char *name)
{
	long k = 0;
	pthread_mutex_lock(&obj_lock);
	for (struct fglobal *g = all_globals; g; g = g->next) {
		int nz = 0;
		for (size_t i = 0; i < g->size && !nz; i++)
			nz = g->data[i] != 0;
		k += nz && !strcmp(g->name, name);
	}
	pthread_mutex_unlock(&obj_lock);
	return k;
}

/* ---- launches ---- */
#include "tests/shim/fakecuda/fake_launch.h"
static struct fake_launch last_launch;
static long nr_launches;
static pthread_mutex_t launch_lock = PTHREAD_MUTEX_INITIALIZER;
/* Per thread: what the last launch of this thread ran, and where. */
static __thread struct {
	void *ctx;
	int dev;
	void *func; /* the CUfunction run (a CUkernel's, resolved in the context) */
	char target[16];
	char name[128];
} last_run;

FX struct fake_launch fake_last_launch(void)
{
	pthread_mutex_lock(&launch_lock);
	struct fake_launch l = last_launch;
	l.count = nr_launches;
	pthread_mutex_unlock(&launch_lock);
	return l;
}

/* This thread's last successful launch: its context, device, the function
 * that ran, the `.target` of the module it came from and its name. */
FX int fake_last_run(void **ctx, int *dev, void **func, char *target, size_t tn, char *name, size_t nn)
{
	if (ctx)
		*ctx = last_run.ctx;
	if (dev)
		*dev = last_run.dev;
	if (func)
		*func = last_run.func;
	if (target)
		snprintf(target, tn, "%s", last_run.target);
	if (name)
		snprintf(name, nn, "%s", last_run.name);
	return last_run.ctx ? 0 : -1;
}

/* Whether the module of this thread's last launched function holds `needle`
 * in its text (the live attach tests: "__gx_devrt" = an instrumented copy). */
FX int fake_last_run_has(const char *needle)
{
	struct ffunc *x = last_run.func;
	return x && x->mod && x->mod->text && needle && strstr(x->mod->text, needle) != NULL;
}

static void fk_run(CUstream s, int copy); /* the time model, below */

static CUresult launch(const char *api, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
		       unsigned by, unsigned bz, unsigned sh, CUstream s, void **p)
{
	struct ffunc *x = (struct ffunc *)f;
	/* Test handles made up by the tests (not ours) launch as they are. */
	int known = 0;
	pthread_mutex_lock(&obj_lock);
	for (struct ffunc *y = all_funcs; x && y && !known; y = y->next)
		known = y == x;
	pthread_mutex_unlock(&obj_lock);
	fk_run(s, !known ? 0 : !strncmp(x->name, "__gx_pw_", 8) ? 1 : !strncmp(x->name, "__gx_ps_", 8) ? 2 : 0);
	if (!x)
		return CUDA_ERROR_INVALID_HANDLE;
	/* FAKECUDA_SMEM_ATTR=1: more than 48 KiB of dynamic shared memory only
	 * up to what cuFuncSetAttribute / cuKernelSetAttribute gave the handle */
	static int smem_attr = -1;
	if (smem_attr < 0)
		smem_attr = getenv("FAKECUDA_SMEM_ATTR") && *getenv("FAKECUDA_SMEM_ATTR") == '1';
	if (known && smem_attr && sh > 48 * 1024 && (int)sh > x->max_dyn)
		return CUDA_ERROR_INVALID_VALUE;
	/* FAKECUDA_OOR_THREADS=N: blocks of more than N threads do not fit
	 * (an instrumented kernel's registers, as the shim must report) */
	static long oor = -1;
	if (oor < 0)
		oor = getenv("FAKECUDA_OOR_THREADS") ? strtol(getenv("FAKECUDA_OOR_THREADS"), NULL, 10) : 0;
	if (known && oor > 0 && (long)bx * by * bz > oor)
		return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
	if (known) {
		if (x->is_kernel) {
			/* A CUkernel runs its library's code in the current context. */
			CUresult rc = kernel_function(x, &x);
			if (rc != CUDA_SUCCESS)
				return rc;
		} else if (misuse(api, x->ctx, x->dead || !x->mod->text)) {
			return x->dead ? CUDA_ERROR_INVALID_HANDLE : CUDA_ERROR_INVALID_CONTEXT;
		}
		last_run.ctx = x->ctx;
		last_run.dev = x->ctx ? x->ctx->dev : -1;
		last_run.func = x;
		const char *t = x->mod->text ? strstr(x->mod->text, ".target ") : NULL;
		snprintf(last_run.target, sizeof(last_run.target), "%.*s", t ? (int)strcspn(t + 8, " \n,") : 0,
			 t ? t + 8 : "");
		snprintf(last_run.name, sizeof(last_run.name), "%s", x->name);
	}
	pthread_mutex_lock(&launch_lock);
	last_launch = (struct fake_launch){ api, f, { gx, gy, gz }, { bx, by, bz }, sh, s, p, 0 };
	nr_launches++;
	pthread_mutex_unlock(&launch_lock);
	return CUDA_SUCCESS;
}

#define LARGS CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned sh, CUstream s
FX CUresult cuLaunchKernel(LARGS, void **p, void **e)
{
	(void)e;
	REC();
	return launch(__func__, f, gx, gy, gz, bx, by, bz, sh, s, p);
}
FX CUresult cuLaunchKernel_ptsz(LARGS, void **p, void **e)
{
	(void)e;
	REC();
	return launch(__func__, f, gx, gy, gz, bx, by, bz, sh, s, p);
}
FX CUresult cuLaunchCooperativeKernel(LARGS, void **p)
{
	REC();
	return launch(__func__, f, gx, gy, gz, bx, by, bz, sh, s, p);
}
FX CUresult cuLaunchCooperativeKernel_ptsz(LARGS, void **p)
{
	REC();
	return launch(__func__, f, gx, gy, gz, bx, by, bz, sh, s, p);
}
FX CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **p, void **e)
{
	(void)e;
	REC();
	return launch(__func__, f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ,
		      c->sharedMemBytes, c->hStream, p);
}
FX CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *c, CUfunction f, void **p, void **e)
{
	(void)e;
	REC();
	return launch(__func__, f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ,
		      c->sharedMemBytes, c->hStream, p);
}

/* ---- graphs ----
 * Graphs made by cuGraphCreate hold real nodes (kernel, child graph; other
 * types as bare nodes): cuGraphGetNodes, cuGraphNodeGetType, kernel params
 * and child graphs read back; an exec is the graph's kernel nodes flattened
 * (child graphs included), and cuGraphLaunch runs each through launch()
 * (recorded like a launch, api "cuGraphLaunch"). Nodes added to handles the
 * tests make up (not graphs of ours) get the fixed handles of old. */
struct fgraph;
struct fnode {
	struct fgraph *g;
	CUgraphNodeType type;
	CUDA_KERNEL_NODE_PARAMS kp;
	struct fgraph *child;
};
struct fgraph {
	struct fnode **n;
	size_t nr;
	struct fgraph *next;
};
struct fxent {
	struct fnode *node, *top;
	CUDA_KERNEL_NODE_PARAMS kp;
};
struct fexec {
	struct fxent *e;
	size_t nr;
	struct fexec *next;
};
static struct fgraph *all_graphs;
static struct fexec *all_execs;
static long graph_launches, graph_node_runs;
static pthread_mutex_t graph_lock = PTHREAD_MUTEX_INITIALIZER;
static void *last_node_func;
FX void *fake_last_node_func(void) { return last_node_func; }
/* cuGraphLaunch calls and the kernel nodes they ran */
FX long fake_graph_counts(long *nodes)
{
	if (nodes)
		*nodes = graph_node_runs;
	return graph_launches;
}

static struct fgraph *fg_find(CUgraph g) /* graph_lock held */
{
	struct fgraph *x = all_graphs;
	while (x && x != (struct fgraph *)g)
		x = x->next;
	return x;
}
static struct fnode *fn_find(CUgraphNode n) /* graph_lock held */
{
	for (struct fgraph *g = all_graphs; g; g = g->next)
		for (size_t i = 0; i < g->nr; i++)
			if (g->n[i] == (struct fnode *)n)
				return g->n[i];
	return NULL;
}
static struct fexec *fx_find(CUgraphExec e) /* graph_lock held */
{
	struct fexec *x = all_execs;
	while (x && x != (struct fexec *)e)
		x = x->next;
	return x;
}
/* A node in g (NULL: g is not ours). */
static struct fnode *fg_node(CUgraph g, CUgraphNodeType t)
{
	pthread_mutex_lock(&graph_lock);
	struct fgraph *x = fg_find(g);
	struct fnode *n = NULL, **a = x ? realloc(x->n, (x->nr + 1) * sizeof(*a)) : NULL;
	if (a && (n = calloc(1, sizeof(*n)))) {
		x->n = a;
		a[x->nr++] = n;
		n->g = x;
		n->type = t;
	} else if (a) {
		x->n = a;
	}
	pthread_mutex_unlock(&graph_lock);
	return n;
}
FX CUresult cuGraphCreate(CUgraph *g, unsigned flags)
{
	(void)flags;
	REC();
	struct fgraph *x = calloc(1, sizeof(*x));
	if (!x)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&graph_lock);
	x->next = all_graphs;
	all_graphs = x;
	pthread_mutex_unlock(&graph_lock);
	*g = (CUgraph)x;
	return CUDA_SUCCESS;
}
FX CUresult cuGraphDestroy(CUgraph g)
{
	REC();
	pthread_mutex_lock(&graph_lock);
	struct fgraph **pp = &all_graphs;
	while (*pp && *pp != (struct fgraph *)g)
		pp = &(*pp)->next;
	struct fgraph *x = *pp;
	if (x) {
		*pp = x->next;
		for (size_t i = 0; i < x->nr; i++)
			free(x->n[i]);
		free(x->n);
		free(x);
	}
	pthread_mutex_unlock(&graph_lock);
	return x ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
static CUresult kernel_node(CUgraphNode *n, CUgraph g, const CUDA_KERNEL_NODE_PARAMS *p, uintptr_t legacy)
{
	last_node_func = p->func ? (void *)p->func : (void *)p->kern;
	struct fnode *x = fg_node(g, CU_GRAPH_NODE_TYPE_KERNEL);
	if (x)
		x->kp = *p;
	*n = x ? (CUgraphNode)x : (CUgraphNode)legacy;
	return CUDA_SUCCESS;
}
FX CUresult cuGraphAddKernelNode_v2(CUgraphNode *n, CUgraph g, const CUgraphNode *d, size_t nd,
				    const CUDA_KERNEL_NODE_PARAMS *p)
{
	(void)d, (void)nd;
	REC();
	return kernel_node(n, g, p, 0x100);
}
FX CUresult cuGraphAddKernelNode(CUgraphNode *n, CUgraph g, const CUgraphNode *d, size_t nd,
				 const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
	(void)d, (void)nd;
	REC();
	CUDA_KERNEL_NODE_PARAMS w = { .func = p->func, .gridDimX = p->gridDimX, .gridDimY = p->gridDimY,
				      .gridDimZ = p->gridDimZ, .blockDimX = p->blockDimX, .blockDimY = p->blockDimY,
				      .blockDimZ = p->blockDimZ, .sharedMemBytes = p->sharedMemBytes,
				      .kernelParams = p->kernelParams, .extra = p->extra };
	return kernel_node(n, g, &w, 0x101);
}
FX CUresult cuGraphAddChildGraphNode(CUgraphNode *n, CUgraph g, const CUgraphNode *d, size_t nd, CUgraph child)
{
	(void)d, (void)nd;
	REC();
	struct fnode *x = fg_node(g, CU_GRAPH_NODE_TYPE_GRAPH);
	if (!x)
		return CUDA_ERROR_INVALID_VALUE;
	x->child = (struct fgraph *)child;
	*n = (CUgraphNode)x;
	return CUDA_SUCCESS;
}
FX CUresult cuGraphGetNodes(CUgraph g, CUgraphNode *nodes, size_t *num)
{
	REC();
	pthread_mutex_lock(&graph_lock);
	struct fgraph *x = fg_find(g);
	if (x && nodes) {
		size_t k = *num < x->nr ? *num : x->nr;
		for (size_t i = 0; i < k; i++)
			nodes[i] = (CUgraphNode)x->n[i];
		*num = k;
	} else if (x) {
		*num = x->nr;
	}
	pthread_mutex_unlock(&graph_lock);
	return x ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
FX CUresult cuGraphNodeGetType(CUgraphNode n, CUgraphNodeType *t)
{
	REC();
	pthread_mutex_lock(&graph_lock);
	struct fnode *x = fn_find(n);
	if (x)
		*t = x->type;
	pthread_mutex_unlock(&graph_lock);
	return x ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
FX CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode n, CUDA_KERNEL_NODE_PARAMS *p)
{
	REC();
	pthread_mutex_lock(&graph_lock);
	struct fnode *x = fn_find(n);
	int ok = x && x->type == CU_GRAPH_NODE_TYPE_KERNEL;
	if (ok)
		*p = x->kp;
	pthread_mutex_unlock(&graph_lock);
	return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
FX CUresult cuGraphChildGraphNodeGetGraph(CUgraphNode n, CUgraph *g)
{
	REC();
	pthread_mutex_lock(&graph_lock);
	struct fnode *x = fn_find(n);
	int ok = x && x->type == CU_GRAPH_NODE_TYPE_GRAPH;
	if (ok)
		*g = (CUgraph)x->child;
	pthread_mutex_unlock(&graph_lock);
	return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
FX CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS *p)
{
	REC();
	last_node_func = p->func;
	pthread_mutex_lock(&graph_lock);
	struct fnode *x = fn_find(n);
	if (x && x->type == CU_GRAPH_NODE_TYPE_KERNEL)
		x->kp = *p;
	pthread_mutex_unlock(&graph_lock);
	return CUDA_SUCCESS;
}

/* g's kernel nodes, child graphs included, appended to e (graph_lock held). */
static int flatten(struct fexec *e, struct fgraph *g, struct fnode *top, int depth)
{
	if (!g || depth > 16)
		return -1;
	for (size_t i = 0; i < g->nr; i++) {
		struct fnode *n = g->n[i];
		if (n->type == CU_GRAPH_NODE_TYPE_GRAPH) {
			if (flatten(e, fg_find((CUgraph)n->child), top ? top : n, depth + 1))
				return -1;
		} else if (n->type == CU_GRAPH_NODE_TYPE_KERNEL) {
			struct fxent *a = realloc(e->e, (e->nr + 1) * sizeof(*a));
			if (!a)
				return -1;
			e->e = a;
			a[e->nr++] = (struct fxent){ n, top ? top : n, n->kp };
		}
	}
	return 0;
}
static CUresult instantiate(CUgraphExec *pe, CUgraph g)
{
	struct fexec *e = calloc(1, sizeof(*e));
	if (!e)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&graph_lock);
	struct fgraph *x = fg_find(g);
	if (x && flatten(e, x, NULL, 0)) {
		pthread_mutex_unlock(&graph_lock);
		free(e->e);
		free(e);
		return CUDA_ERROR_INVALID_VALUE;
	}
	e->next = all_execs;
	all_execs = e;
	pthread_mutex_unlock(&graph_lock);
	*pe = (CUgraphExec)e;
	return CUDA_SUCCESS;
}
FX CUresult cuGraphInstantiate(CUgraphExec *pe, CUgraph g, CUgraphNode *en, char *log, size_t n)
{
	(void)en, (void)log, (void)n;
	REC();
	return instantiate(pe, g);
}
FX CUresult cuGraphInstantiate_v2(CUgraphExec *pe, CUgraph g, CUgraphNode *en, char *log, size_t n)
{
	(void)en, (void)log, (void)n;
	REC();
	return instantiate(pe, g);
}
FX CUresult cuGraphInstantiateWithFlags(CUgraphExec *pe, CUgraph g, unsigned long long f)
{
	(void)f;
	REC();
	return instantiate(pe, g);
}
FX CUresult cuGraphInstantiateWithParams(CUgraphExec *pe, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
	REC();
	CUresult rc = instantiate(pe, g);
	if (p)
		p->result_out = rc == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
	return rc;
}
FX CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *pe, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
	REC();
	return cuGraphInstantiateWithParams(pe, g, p);
}
static CUresult graph_launch(CUgraphExec h, CUstream s)
{
	pthread_mutex_lock(&graph_lock);
	struct fexec *e = fx_find(h);
	size_t nr = e ? e->nr : 0;
	struct fxent *copy = nr ? malloc(nr * sizeof(*copy)) : NULL;
	if (copy)
		memcpy(copy, e->e, nr * sizeof(*copy));
	pthread_mutex_unlock(&graph_lock);
	if (!e)
		return CUDA_ERROR_INVALID_VALUE;
	if (nr && !copy)
		return CUDA_ERROR_OUT_OF_MEMORY;
	CUresult rc = CUDA_SUCCESS;
	for (size_t i = 0; i < nr && rc == CUDA_SUCCESS; i++) {
		const CUDA_KERNEL_NODE_PARAMS *k = &copy[i].kp;
		rc = launch("cuGraphLaunch", k->func ? k->func : (CUfunction)k->kern, k->gridDimX, k->gridDimY,
			    k->gridDimZ, k->blockDimX, k->blockDimY, k->blockDimZ, k->sharedMemBytes, s, k->kernelParams);
	}
	free(copy);
	pthread_mutex_lock(&graph_lock);
	graph_launches++;
	graph_node_runs += (long)nr;
	pthread_mutex_unlock(&graph_lock);
	return rc;
}
FX CUresult cuGraphLaunch(CUgraphExec e, CUstream s)
{
	REC();
	return graph_launch(e, s);
}
FX CUresult cuGraphLaunch_ptsz(CUgraphExec e, CUstream s)
{
	REC();
	return graph_launch(e, s);
}
FX CUresult cuGraphExecDestroy(CUgraphExec h)
{
	REC();
	pthread_mutex_lock(&graph_lock);
	struct fexec **pp = &all_execs;
	while (*pp && *pp != (struct fexec *)h)
		pp = &(*pp)->next;
	struct fexec *e = *pp;
	if (e) {
		*pp = e->next;
		free(e->e);
		free(e);
	}
	pthread_mutex_unlock(&graph_lock);
	return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
FX CUresult cuGraphExecUpdate_v2(CUgraphExec h, CUgraph g, CUgraphExecUpdateResultInfo *info)
{
	REC();
	pthread_mutex_lock(&graph_lock);
	struct fexec *e = fx_find(h), n = { 0 };
	int ok = e && fg_find(g) && !flatten(&n, fg_find(g), NULL, 0);
	if (ok) {
		free(e->e);
		e->e = n.e, e->nr = n.nr;
	} else {
		free(n.e);
	}
	pthread_mutex_unlock(&graph_lock);
	if (info)
		info->result = ok ? CU_GRAPH_EXEC_UPDATE_SUCCESS : CU_GRAPH_EXEC_UPDATE_ERROR;
	return ok ? CUDA_SUCCESS : CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
}
FX CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec h, CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS *p)
{
	REC();
	last_node_func = p->func;
	pthread_mutex_lock(&graph_lock);
	struct fexec *e = fx_find(h);
	for (size_t i = 0; e && i < e->nr; i++)
		if (e->e[i].node == (struct fnode *)n)
			e->e[i].kp = *p;
	pthread_mutex_unlock(&graph_lock);
	return CUDA_SUCCESS;
}
FX CUresult cuGraphExecChildGraphNodeSetParams(CUgraphExec h, CUgraphNode n, CUgraph child)
{
	REC();
	pthread_mutex_lock(&graph_lock);
	struct fexec *e = fx_find(h), k = { 0 };
	int ok = e && fg_find(child);
	if (ok) {
		for (size_t i = 0; i < e->nr; i++)
			if (e->e[i].top != (struct fnode *)n)
				e->e[k.nr++] = e->e[i];
		k.e = e->e;
		ok = !flatten(&k, fg_find(child), (struct fnode *)n, 1);
		e->e = k.e, e->nr = k.nr;
	}
	pthread_mutex_unlock(&graph_lock);
	return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FX CUresult cuGraphAddNode_v2(CUgraphNode *n, CUgraph g, const CUgraphNode *d, const CUgraphEdgeData *ed, size_t nd,
			      CUgraphNodeParams *p)
{
	(void)d, (void)ed, (void)nd;
	REC();
	if (p->type == CU_GRAPH_NODE_TYPE_KERNEL) {
		CUDA_KERNEL_NODE_PARAMS k;
		memcpy(&k, &p->kernel, sizeof(k));
		return kernel_node(n, g, &k, 0x102);
	}
	*n = (CUgraphNode)(uintptr_t)0x102;
	if (p->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC)
		return fk_mem_virtual((uint64_t *)&p->alloc.dptr, p->alloc.bytesize);
	if (p->type == CU_GRAPH_NODE_TYPE_MEM_FREE)
		return fk_mem_untrack(p->free.dptr) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

/* ---- cuLink ---- */
static const void *last_link_data;
static char link_cubin[64] = "\177ELF fake linked cubin";
FX const void *fake_last_link_data(void) { return last_link_data; }
/* A link state keeps the caller's info log buffer, as the driver does:
 * every input and the link itself append a line to it. */
struct flink {
	char *log;
	size_t cap, used;
	char *out; /* one PTX input: a "cubin" carrying its text (its kernels resolve) */
	int nr_ptx;
	unsigned target; /* CU_JIT_TARGET, 0: the context's */
};
static void link_log(CUlinkState s, const char *what, const char *name)
{
	struct flink *l = (struct flink *)s;
	if (!l || !l->log || l->used + 1 >= l->cap)
		return;
	int k = snprintf(l->log + l->used, l->cap - l->used, "info : %s %s\n", what, name ? name : "(unnamed)");
	if (k > 0)
		l->used = l->used + (size_t)k < l->cap ? l->used + (size_t)k : l->cap - 1;
}
FX CUresult cuLinkCreate_v2(unsigned n, CUjit_option *o, void **v, CUlinkState *s)
{
	REC();
	struct flink *l = calloc(1, sizeof(*l));
	for (unsigned i = 0; l && i < n; i++) {
		if (o[i] == CU_JIT_INFO_LOG_BUFFER)
			l->log = v[i];
		else if (o[i] == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES)
			l->cap = (size_t)(uintptr_t)v[i];
		else if (o[i] == CU_JIT_TARGET)
			l->target = (unsigned)(uintptr_t)v[i];
	}
	if (l && l->log && l->cap)
		l->log[0] = 0;
	*s = (CUlinkState)l;
	return l ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
FX CUresult cuLinkAddData_v2(CUlinkState s, CUjitInputType t, void *data, size_t size, const char *name, unsigned n,
			     CUjit_option *o, void **v)
{
	(void)size, (void)n, (void)o, (void)v;
	REC();
	if (t == CU_JIT_INPUT_PTX && (!strstr(data, ".version") || (reject_not_at && data != reject_not_at)))
		return CUDA_ERROR_INVALID_PTX;
	last_link_data = data;
	struct flink *l = (struct flink *)s;
	/* arch-specific PTX (sm_90a) links only for that arch's own target */
	const char *tg = t == CU_JIT_INPUT_PTX ? strstr(data, ".target sm_") : NULL;
	char *tend = NULL;
	unsigned long tsm = tg ? strtoul(tg + 11, &tend, 10) : 0;
	if (l && tg && *tend == 'a' && l->target != CU_COMPUTE_ACCELERATED_TARGET_BASE + tsm)
		return CUDA_ERROR_INVALID_PTX;
	if (l && t == CU_JIT_INPUT_PTX && !l->nr_ptx++) {
		l->out = malloc(sizeof(FAKE_CUBIN) + strlen(data));
		if (l->out)
			strcat(strcpy(l->out, FAKE_CUBIN), data);
	}
	link_log(s, "compiled", name);
	return CUDA_SUCCESS;
}
FX CUresult cuLinkComplete(CUlinkState s, void **cubin, size_t *size)
{
	REC();
	if (getenv("FAKECUDA_LINK_FAIL")) /* a link error, for the shim's -rdc fallback */
		return CUDA_ERROR_INVALID_PTX;
	const char *us = getenv("FAKECUDA_LINK_US"); /* a JIT that takes time (GPUEXT_JIT_ASYNC) */
	if (us)
		usleep((useconds_t)strtoul(us, NULL, 10));
	link_log(s, "linked", "cubin");
	struct flink *l = (struct flink *)s;
	int one = l && l->out && l->nr_ptx == 1;
	*cubin = one ? l->out : link_cubin;
	*size = one ? strlen(l->out) + 1 : sizeof(link_cubin);
	return CUDA_SUCCESS;
}
FX CUresult cuLinkDestroy(CUlinkState s)
{
	REC();
	if (s)
		free(((struct flink *)s)->out);
	free(s);
	return CUDA_SUCCESS;
}

/* ---- memory and streams ---- */
/* 4 GiB of address space, committed only where a test writes (host policy
 * tests allocate GiBs they never touch); 2 MiB aligned like the driver's. */
#define MANAGED_POOL (4ull << 30)
static char *managed_pool;
static size_t managed_used;
FX CUresult cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned f)
{
	(void)f;
	REC();
	if (!managed_pool) {
		void *m = mmap(NULL, MANAGED_POOL + (2u << 20), PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (m == MAP_FAILED)
			return CUDA_ERROR_OUT_OF_MEMORY;
		managed_pool = (char *)(((uintptr_t)m + (2u << 20) - 1) & ~(uintptr_t)((2u << 20) - 1));
	}
	if (managed_used + n > MANAGED_POOL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*p = (CUdeviceptr)(uintptr_t)(managed_pool + managed_used);
	managed_used += (n + 255) & ~(size_t)255;
	fk_mem_track(*p, n);
	return CUDA_SUCCESS;
}
FX CUresult cuMemFree_v2(CUdeviceptr p)
{
	REC();
	fk_mem_untrack(p); /* unknown pointers pass: older tests free what they never allocated here */
	return CUDA_SUCCESS;
}
static __thread CUmemLocation last_prefetch_loc = { .type = CU_MEM_LOCATION_TYPE_INVALID, .id = -1 };
/* Where this thread's last cuMemPrefetchAsync_v2 sent the memory. */
FX CUmemLocation fake_last_prefetch(void) { return last_prefetch_loc; }
FX CUresult cuMemPrefetchAsync_v2(CUdeviceptr p, size_t n, CUmemLocation l, unsigned f, CUstream s)
{
	(void)p, (void)n, (void)f, (void)s;
	REC();
	last_prefetch_loc = l;
	return CUDA_SUCCESS;
}
FX CUresult cuMemAdvise_v2(CUdeviceptr p, size_t n, CUmem_advise a, CUmemLocation l)
{
	(void)p, (void)n, (void)a, (void)l;
	REC();
	return CUDA_SUCCESS;
}
/* Streams remember their flags and priority; priorities are clamped to
 * [-5, 0] as on an H100/H200 (cuCtxGetStreamPriorityRange). */
struct fstream {
	unsigned flags;
	int prio;
	uint64_t busy;       /* the time model: when its last kernel ends */
	struct fstream *next;
};
static struct fstream *all_streams;
FX CUresult cuStreamCreate(CUstream *s, unsigned f)
{
	REC();
	struct fstream *fs = calloc(1, sizeof(*fs));
	fs->flags = f;
	pthread_mutex_lock(&launch_lock);
	fs->next = all_streams;
	all_streams = fs;
	pthread_mutex_unlock(&launch_lock);
	*s = (CUstream)fs;
	return CUDA_SUCCESS;
}
FX CUresult cuStreamCreateWithPriority(CUstream *s, unsigned f, int prio)
{
	REC();
	struct fstream *fs = calloc(1, sizeof(*fs));
	fs->flags = f;
	fs->prio = prio < -5 ? -5 : prio > 0 ? 0 : prio;
	pthread_mutex_lock(&launch_lock);
	fs->next = all_streams;
	all_streams = fs;
	pthread_mutex_unlock(&launch_lock);
	*s = (CUstream)fs;
	return CUDA_SUCCESS;
}
FX CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest)
{
	REC();
	if (least)
		*least = 0;
	if (greatest)
		*greatest = -5;
	return CUDA_SUCCESS;
}
FX CUresult cuStreamGetPriority(CUstream s, int *prio)
{
	REC();
	*prio = s ? ((struct fstream *)s)->prio : 0;
	return CUDA_SUCCESS;
}
FX CUresult cuStreamGetFlags(CUstream s, unsigned *f)
{
	REC();
	*f = s ? ((struct fstream *)s)->flags : 0;
	return CUDA_SUCCESS;
}
FX CUresult cuStreamDestroy_v2(CUstream s)
{
	REC();
	pthread_mutex_lock(&launch_lock);
	for (struct fstream **pp = &all_streams; *pp; pp = &(*pp)->next)
		if (*pp == (struct fstream *)s) {
			*pp = (*pp)->next;
			break;
		}
	pthread_mutex_unlock(&launch_lock);
	free(s);
	return CUDA_SUCCESS;
}

/* ---- time: with FAKECUDA_KERNEL_US=N every launch keeps its stream busy
 * N µs after the previous one ends (streams run independently, in one
 * process); events complete when the work before them has, queries say
 * CUDA_ERROR_NOT_READY until then, synchronisation sleeps. Without it
 * everything is done at once, as before. Streams the fake did not make
 * (NULL, legacy, per-thread, made-up handles) share one timeline. ---- */
static uint64_t legacy_busy;
/* FAKECUDA_PW_US / FAKECUDA_PS_US: blocksched's claiming copies (__gx_pw_*)
 * and static copies (__gx_ps_*) take this long */
static long kernel_us = -1, pw_us = -2, ps_us = -2;
static uint64_t fk_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
static uint64_t *timeline(CUstream s) /* launch_lock held */
{
	for (struct fstream *x = all_streams; x; x = x->next)
		if (x == (struct fstream *)s)
			return &x->busy;
	return &legacy_busy;
}
/* FAKECUDA_LAUNCH_LOG=FILE: one line per launch, "PID SUBMIT START END"
 * (ns: when it was submitted, when the kernel would run), for the tenant
 * tests' schedules. */
static int launch_log = -2;
static void fk_run(CUstream s, int copy) /* 1 a claiming copy, 2 a static one */
{
	if (kernel_us < 0) {
		const char *e = getenv("FAKECUDA_KERNEL_US");
		kernel_us = e ? atol(e) : 0;
	}
	if (pw_us == -2) {
		const char *e = getenv("FAKECUDA_PW_US");
		pw_us = e ? atol(e) : -1;
	}
	if (ps_us == -2) {
		const char *e = getenv("FAKECUDA_PS_US");
		ps_us = e ? atol(e) : -1;
	}
	long us = copy == 1 && pw_us >= 0 ? pw_us : copy == 2 && ps_us >= 0 ? ps_us : kernel_us;
	if (us <= 0)
		return;
	pthread_mutex_lock(&launch_lock);
	uint64_t *t = timeline(s), now = fk_now(), start = *t > now ? *t : now;
	*t = start + (uint64_t)us * 1000;
	if (launch_log == -2) {
		const char *l = getenv("FAKECUDA_LAUNCH_LOG");
		launch_log = l ? open(l, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600) : -1;
	}
	if (launch_log >= 0) {
		char b[96];
		int n = snprintf(b, sizeof(b), "%d %llu %llu %llu\n", (int)getpid(), (unsigned long long)now,
				 (unsigned long long)start, (unsigned long long)*t);
		if (write(launch_log, b, (size_t)n) < 0) {
		}
	}
	pthread_mutex_unlock(&launch_lock);
}
static void fk_sleep_until(uint64_t at)
{
	for (uint64_t now = fk_now(); now < at; now = fk_now()) {
		struct timespec d = { 0, (long)(at - now < 1000000 ? at - now : 1000000) };
		nanosleep(&d, NULL);
	}
}
struct fevent {
	uint64_t at;
};
static long nr_events_live;
FX long fake_events_live(void) { return nr_events_live; }
FX CUresult cuEventCreate(CUevent *e, unsigned f)
{
	(void)f;
	REC();
	*e = (CUevent)calloc(1, sizeof(struct fevent));
	__atomic_add_fetch(&nr_events_live, 1, __ATOMIC_RELAXED);
	return *e ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
static CUresult event_record(CUevent e, CUstream s)
{
	if (!e)
		return CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&launch_lock);
	/* when the work before it is done, or now on an idle stream */
	uint64_t busy = *timeline(s), now = fk_now();
	((struct fevent *)e)->at = busy > now ? busy : now;
	pthread_mutex_unlock(&launch_lock);
	return CUDA_SUCCESS;
}
FX CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
	REC();
	if (!ms || !a || !b)
		return CUDA_ERROR_INVALID_HANDLE;
	if (getenv("FAKECUDA_ELAPSED_FAIL")) /* the guard's timings all failing */
		return CUDA_ERROR_INVALID_HANDLE;
	*ms = (float)((double)((struct fevent *)b)->at - (double)((struct fevent *)a)->at) / 1e6f;
	return CUDA_SUCCESS;
}
FX CUresult cuEventRecord(CUevent e, CUstream s) { REC(); return event_record(e, s); }
FX CUresult cuEventRecord_ptsz(CUevent e, CUstream s) { REC(); return event_record(e, s); }
FX CUresult cuEventRecordWithFlags(CUevent e, CUstream s, unsigned f) { (void)f; REC(); return event_record(e, s); }
static int cap_unsafe_call(void);
FX CUresult cuEventQuery(CUevent e)
{
	REC();
	if (!e)
		return CUDA_ERROR_INVALID_HANDLE;
	if (cap_unsafe_call())
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	return fk_now() >= ((struct fevent *)e)->at ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}
FX CUresult cuEventSynchronize(CUevent e)
{
	REC();
	if (e)
		fk_sleep_until(((struct fevent *)e)->at);
	return CUDA_SUCCESS;
}
FX CUresult cuEventDestroy_v2(CUevent e)
{
	REC();
	if (e)
		__atomic_sub_fetch(&nr_events_live, 1, __ATOMIC_RELAXED);
	free(e);
	return CUDA_SUCCESS;
}
FX CUresult cuEventDestroy(CUevent e) { return cuEventDestroy_v2(e); }
/* weak: tests/attach/fakedev.c has its own */
__attribute__((weak)) FX CUresult cuStreamSynchronize(CUstream s)
{
	REC();
	pthread_mutex_lock(&launch_lock);
	uint64_t at = *timeline(s);
	pthread_mutex_unlock(&launch_lock);
	fk_sleep_until(at);
	return CUDA_SUCCESS;
}
static void fk_sync_all(void)
{
	uint64_t at = 0;
	pthread_mutex_lock(&launch_lock);
	at = legacy_busy;
	for (struct fstream *x = all_streams; x; x = x->next)
		at = x->busy > at ? x->busy : at;
	pthread_mutex_unlock(&launch_lock);
	fk_sleep_until(at);
}
FX CUresult cuStreamQuery(CUstream s)
{
	REC();
	pthread_mutex_lock(&launch_lock);
	uint64_t at = *timeline(s);
	pthread_mutex_unlock(&launch_lock);
	return fk_now() >= at ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}
/* A device's UUID: its ordinal in every byte, plus one. */
FX CUresult cuDeviceGetUuid_v2(CUuuid *u, CUdevice d)
{
	REC();
	memset(u->bytes, d + 1, sizeof(u->bytes));
	return CUDA_SUCCESS;
}

/* ---- allocation bookkeeping: what is allocated and not freed, per key
 * (pointer, VMM handle, array), so tests compare the shim's accounting with
 * what the "driver" holds. FAKECUDA_MEM_TOTAL (bytes, default 80 GiB) is
 * the device's memory for cuMemGetInfo and the point where allocations
 * fail. Allocations that need no backing get addresses from a counter. ---- */
struct fk_mem {
	uint64_t key;
	size_t n;
	struct fk_mem *next;
};
#define FK_MEM_BUCKETS 4096
static struct fk_mem *fk_mem_tab[FK_MEM_BUCKETS];
static pthread_mutex_t fk_mem_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t fk_mem_live, fk_mem_count, fk_va = 0x500000000000ull;
static uint64_t fk_mem_total(void)
{
	const char *e = getenv("FAKECUDA_MEM_TOTAL");
	return e && *e ? strtoull(e, NULL, 0) : 80ull << 30;
}
static void fk_mem_track(uint64_t key, size_t n)
{
	struct fk_mem *m = malloc(sizeof(*m));
	if (!m)
		return;
	m->key = key, m->n = n;
	pthread_mutex_lock(&fk_mem_lock);
	m->next = fk_mem_tab[(key >> 8) % FK_MEM_BUCKETS];
	fk_mem_tab[(key >> 8) % FK_MEM_BUCKETS] = m;
	fk_mem_live += n, fk_mem_count++;
	pthread_mutex_unlock(&fk_mem_lock);
}
static int fk_pool_free_locked(uint64_t key);
static int fk_mem_untrack(uint64_t key)
{
	pthread_mutex_lock(&fk_mem_lock);
	struct fk_mem **pp = &fk_mem_tab[(key >> 8) % FK_MEM_BUCKETS], *m;
	while ((m = *pp) && m->key != key)
		pp = &m->next;
	int pooled = 0;
	if (m) {
		*pp = m->next;
		fk_mem_live -= m->n, fk_mem_count--;
	} else {
		pooled = fk_pool_free_locked(key);
	}
	pthread_mutex_unlock(&fk_mem_lock);
	free(m);
	return m != NULL || pooled;
}
/* A fresh key for memory nobody touches (2 MiB apart, like the driver's). */
static CUresult fk_mem_virtual(uint64_t *key, size_t n)
{
	pthread_mutex_lock(&fk_mem_lock);
	int full = fk_mem_live + n > fk_mem_total();
	*key = fk_va;
	fk_va += (n + (2u << 20) - 1) & ~(uint64_t)((2u << 20) - 1);
	if (n < (2u << 20))
		fk_va += 2u << 20;
	pthread_mutex_unlock(&fk_mem_lock);
	if (full)
		return CUDA_ERROR_OUT_OF_MEMORY;
	fk_mem_track(*key, n);
	return CUDA_SUCCESS;
}
FX uint64_t fake_mem_live(void) { return __atomic_load_n(&fk_mem_live, __ATOMIC_RELAXED); }
FX uint64_t fake_mem_count(void) { return __atomic_load_n(&fk_mem_count, __ATOMIC_RELAXED); }
FX CUresult cuMemGetInfo_v2(size_t *f, size_t *t)
{
	REC();
	uint64_t tot = fk_mem_total(), live = fake_mem_live();
	*t = tot;
	*f = live < tot ? tot - live : 0;
	return CUDA_SUCCESS;
}
FX CUresult cuMemGetInfo(unsigned *f, unsigned *t)
{
	size_t a, b;
	cuMemGetInfo_v2(&a, &b);
	*f = a > 0xffffffffu ? 0xffffffffu : (unsigned)a;
	*t = b > 0xffffffffu ? 0xffffffffu : (unsigned)b;
	return CUDA_SUCCESS;
}
FX CUresult cuDeviceTotalMem_v2(size_t *t, CUdevice dev)
{
	REC();
	(void)dev;
	*t = fk_mem_total();
	return CUDA_SUCCESS;
}
FX CUresult cuDeviceTotalMem(unsigned *t, CUdevice dev)
{
	size_t b;
	cuDeviceTotalMem_v2(&b, dev);
	*t = b > 0xffffffffu ? 0xffffffffu : (unsigned)b;
	return CUDA_SUCCESS;
}
FX CUresult cuMemAllocPitch_v2(CUdeviceptr *p, size_t *pitch, size_t w, size_t h, unsigned e)
{
	(void)e;
	REC();
	*pitch = (w + 511) & ~(size_t)511;
	return fk_mem_virtual((uint64_t *)p, *pitch * h);
}
/* Memory pools like the driver's: an allocation takes from what the pool
 * caches or grows it (2 MiB granules); a free returns to the pool, not to
 * the device; cuMemPoolTrimTo and a synchronisation (down to the release
 * threshold, 0 by default) give the cache back. Pools 0..7 are the devices'
 * default pools; handles are 0x9000 + index. A captured stream's allocation
 * is a graph memory node: outside the pools. */
struct fk_pool {
	int live;
	uint64_t reserved, used, thresh;
};
struct fk_pptr {
	uint64_t key;
	size_t n;
	struct fk_pool *pool;
	struct fk_pptr *next;
};
#define FK_POOLS 16
#define FK_GRAN (2ull << 20)
static struct fk_pool fk_pools[FK_POOLS];
static struct fk_pptr *fk_pptrs;
static struct fk_pool *fk_pool_of(CUmemoryPool h)
{
	uintptr_t i = (uintptr_t)h - 0x9000;
	return i < FK_POOLS && (i < 8 || fk_pools[i].live) ? &fk_pools[i] : NULL;
}
static void fk_pool_trim_locked(struct fk_pool *pl, uint64_t keep)
{
	uint64_t target = pl->used > keep ? pl->used : keep;
	if (pl->reserved > target) {
		fk_mem_live -= pl->reserved - target;
		pl->reserved = target;
	}
}
static CUresult fk_pool_alloc(uint64_t *key, size_t n, struct fk_pool *pl)
{
	if (!pl)
		return CUDA_ERROR_INVALID_VALUE;
	struct fk_pptr *pp = malloc(sizeof(*pp));
	uint64_t r = (n + FK_GRAN - 1) & ~(FK_GRAN - 1);
	if (!pp)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&fk_mem_lock);
	if (pl->reserved - pl->used < r) {
		uint64_t grow = r - (pl->reserved - pl->used);
		if (fk_mem_live + grow > fk_mem_total()) {
			pthread_mutex_unlock(&fk_mem_lock);
			free(pp);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		pl->reserved += grow;
		fk_mem_live += grow;
	}
	pl->used += r;
	*key = fk_va;
	fk_va += r;
	*pp = (struct fk_pptr){ .key = *key, .n = r, .pool = pl, .next = fk_pptrs };
	fk_pptrs = pp;
	pthread_mutex_unlock(&fk_mem_lock);
	return CUDA_SUCCESS;
}
/* A pool's pointer back to its pool (fk_mem_lock held): 1 if it was one. */
static int fk_pool_free_locked(uint64_t key)
{
	struct fk_pptr **pp = &fk_pptrs, *m;
	while ((m = *pp) && m->key != key)
		pp = &m->next;
	if (!m)
		return 0;
	*pp = m->next;
	m->pool->used -= m->n;
	free(m);
	return 1;
}
static void fk_pools_sync(void)
{
	pthread_mutex_lock(&fk_mem_lock);
	for (int i = 0; i < FK_POOLS; i++)
		if ((i < 8 || fk_pools[i].live) && fk_pools[i].thresh != UINT64_MAX)
			fk_pool_trim_locked(&fk_pools[i], fk_pools[i].thresh);
	pthread_mutex_unlock(&fk_mem_lock);
}
static CUresult fk_async_alloc(CUdeviceptr *p, size_t n, CUstream s)
{
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
	CUdevice d = 0;
	cuStreamIsCapturing(s, &st);
	if (st != CU_STREAM_CAPTURE_STATUS_NONE)
		return fk_mem_virtual((uint64_t *)p, n);
	cuCtxGetDevice(&d);
	return fk_pool_alloc((uint64_t *)p, n, &fk_pools[d & 7]);
}
FX CUresult cuMemAllocAsync(CUdeviceptr *p, size_t n, CUstream s) { REC(); return fk_async_alloc(p, n, s); }
FX CUresult cuMemAllocAsync_ptsz(CUdeviceptr *p, size_t n, CUstream s) { REC(); return fk_async_alloc(p, n, s); }
FX CUresult cuMemAllocFromPoolAsync(CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s) { (void)s; REC(); return fk_pool_alloc((uint64_t *)p, n, fk_pool_of(pool)); }
FX CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s) { (void)s; REC(); return fk_pool_alloc((uint64_t *)p, n, fk_pool_of(pool)); }
FX CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s) { (void)s; REC(); return fk_mem_untrack(p) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }
FX CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s) { (void)s; REC(); return fk_mem_untrack(p) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }
FX CUresult cuDeviceGetMemPool(CUmemoryPool *p, CUdevice d) { REC(); *p = (CUmemoryPool)(uintptr_t)(0x9000 + (d & 7)); return CUDA_SUCCESS; }
FX CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *p, CUdevice d) { REC(); *p = (CUmemoryPool)(uintptr_t)(0x9000 + (d & 7)); return CUDA_SUCCESS; }
FX CUresult cuMemPoolCreate(CUmemoryPool *p, const CUmemPoolProps *props)
{
	(void)props;
	REC();
	pthread_mutex_lock(&fk_mem_lock);
	int i = 8;
	while (i < FK_POOLS && fk_pools[i].live)
		i++;
	if (i < FK_POOLS)
		fk_pools[i] = (struct fk_pool){ .live = 1 };
	pthread_mutex_unlock(&fk_mem_lock);
	if (i == FK_POOLS)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*p = (CUmemoryPool)(uintptr_t)(0x9000 + i);
	return CUDA_SUCCESS;
}
FX CUresult cuMemPoolDestroy(CUmemoryPool p)
{
	REC();
	struct fk_pool *pl = fk_pool_of(p);
	if (!pl || (uintptr_t)p - 0x9000 < 8)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&fk_mem_lock);
	fk_pool_trim_locked(pl, 0); /* what is still allocated goes at its free */
	pl->live = 0;
	pthread_mutex_unlock(&fk_mem_lock);
	return CUDA_SUCCESS;
}
FX CUresult cuMemPoolTrimTo(CUmemoryPool p, size_t keep)
{
	REC();
	struct fk_pool *pl = fk_pool_of(p);
	if (!pl)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&fk_mem_lock);
	fk_pool_trim_locked(pl, keep);
	pthread_mutex_unlock(&fk_mem_lock);
	return CUDA_SUCCESS;
}
FX CUresult cuMemPoolGetAttribute(CUmemoryPool p, CUmemPool_attribute a, void *v)
{
	REC();
	struct fk_pool *pl = fk_pool_of(p);
	if (!pl || !v)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&fk_mem_lock);
	uint64_t x = a == CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT ? pl->reserved
		   : a == CU_MEMPOOL_ATTR_USED_MEM_CURRENT     ? pl->used
		   : a == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD    ? pl->thresh
							       : 0;
	pthread_mutex_unlock(&fk_mem_lock);
	*(cuuint64_t *)v = x;
	return CUDA_SUCCESS;
}
FX CUresult cuMemPoolSetAttribute(CUmemoryPool p, CUmemPool_attribute a, void *v)
{
	REC();
	struct fk_pool *pl = fk_pool_of(p);
	if (!pl || !v || a != CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&fk_mem_lock);
	pl->thresh = *(cuuint64_t *)v;
	pthread_mutex_unlock(&fk_mem_lock);
	return CUDA_SUCCESS;
}
FX CUresult cuGraphAddMemAllocNode(CUgraphNode *n, CUgraph g, const CUgraphNode *d, size_t nd, CUDA_MEM_ALLOC_NODE_PARAMS *p)
{
	(void)g, (void)d, (void)nd;
	REC();
	*n = (CUgraphNode)0x6a;
	return fk_mem_virtual((uint64_t *)&p->dptr, p->bytesize);
}
FX CUresult cuGraphAddMemFreeNode(CUgraphNode *n, CUgraph g, const CUgraphNode *d, size_t nd, CUdeviceptr p)
{
	(void)g, (void)d, (void)nd;
	REC();
	*n = (CUgraphNode)0x6b;
	return fk_mem_untrack(p) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
FX CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t n, const CUmemAllocationProp *prop, unsigned long long f)
{
	(void)prop, (void)f;
	REC();
	return fk_mem_virtual((uint64_t *)h, n);
}
FX CUresult cuMemRelease(CUmemGenericAllocationHandle h) { REC(); return fk_mem_untrack(h) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }
static size_t fk_arr_elem(CUarray_format f, unsigned ch)
{
	size_t b = f == CU_AD_FORMAT_UNSIGNED_INT8 || f == CU_AD_FORMAT_SIGNED_INT8 ? 1
		 : f == CU_AD_FORMAT_UNSIGNED_INT16 || f == CU_AD_FORMAT_SIGNED_INT16 || f == CU_AD_FORMAT_HALF ? 2 : 4;
	return b * (ch ? ch : 1);
}
FX CUresult cuArrayCreate_v2(CUarray *a, const CUDA_ARRAY_DESCRIPTOR *d)
{
	REC();
	return fk_mem_virtual((uint64_t *)a, d->Width * (d->Height ? d->Height : 1) * fk_arr_elem(d->Format, d->NumChannels));
}
FX CUresult cuArray3DCreate_v2(CUarray *a, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
	REC();
	return fk_mem_virtual((uint64_t *)a, d->Width * (d->Height ? d->Height : 1) * (d->Depth ? d->Depth : 1) *
						     fk_arr_elem(d->Format, d->NumChannels));
}
FX CUresult cuArrayCreate(CUarray *a, const CUDA_ARRAY_DESCRIPTOR_v1 *d)
{
	REC();
	return fk_mem_virtual((uint64_t *)a, (size_t)d->Width * (d->Height ? d->Height : 1) * fk_arr_elem(d->Format, d->NumChannels));
}
FX CUresult cuArray3DCreate(CUarray *a, const CUDA_ARRAY3D_DESCRIPTOR_v1 *d)
{
	REC();
	return fk_mem_virtual((uint64_t *)a, (size_t)d->Width * (d->Height ? d->Height : 1) * (d->Depth ? d->Depth : 1) *
						     fk_arr_elem(d->Format, d->NumChannels));
}
FX CUresult cuArrayDestroy(CUarray a) { REC(); return fk_mem_untrack((uint64_t)(uintptr_t)a) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }
FX CUresult cuMipmappedArrayCreate(CUmipmappedArray *a, const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels)
{
	REC();
	size_t n = 0;
	for (unsigned l = 0; l < (levels ? levels : 1); l++) {
		size_t w = d->Width >> l, h = d->Height >> l;
		n += (w ? w : 1) * (h ? h : 1);
	}
	return fk_mem_virtual((uint64_t *)a, n * fk_arr_elem(d->Format, d->NumChannels));
}
FX CUresult cuMipmappedArrayDestroy(CUmipmappedArray a) { REC(); return fk_mem_untrack((uint64_t)(uintptr_t)a) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }

/* ---- device memory, async copies, occupancy, capture (persistent launches) ---- */
struct fdev {
	struct fdev *next; /* kept reachable: "device memory" lives until exit */
	_Alignas(16) char data[];
};
static struct fdev *all_dev;
static void *last_memcpy_stream;
static int fake_occ = 3;
FX void fake_set_occupancy(int n) { fake_occ = n; }
FX void *fake_last_memcpy_stream(void) { return last_memcpy_stream; }
static int cap_unsafe_call(void), cap_implicit_sync(void);
/* weak: tests/tools/fakedev.c, linked into another fake, has its own */
__attribute__((weak)) FX CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
	REC();
	if (cap_unsafe_call())
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	struct fdev *d = calloc(1, sizeof(*d) + n);
	if (!d)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&obj_lock);
	d->next = all_dev;
	all_dev = d;
	pthread_mutex_unlock(&obj_lock);
	*p = (CUdeviceptr)(uintptr_t)d->data;
	fk_mem_track(*p, n);
	return CUDA_SUCCESS;
}
FX CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *src, size_t n, CUstream s)
{
	REC();
	memcpy((void *)(uintptr_t)d, src, n);
	last_memcpy_stream = s;
	return CUDA_SUCCESS;
}
/* Persistent copies (names "__gx_pw_..." and "__gx_ps_...") may get another occupancy. */
static int fake_occ_copy = -1;
FX void fake_set_occupancy_copy(int n) { fake_occ_copy = n; }
FX CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, CUfunction f, int block, size_t smem)
{
	(void)block, (void)smem;
	REC();
	struct ffunc *x = (struct ffunc *)f;
	*n = fake_occ_copy >= 0 && x && (!strncmp(x->name, "__gx_pw_", 8) || !strncmp(x->name, "__gx_ps_", 8))
		     ? fake_occ_copy
		     : fake_occ;
	return CUDA_SUCCESS;
}
static int fake_regs = 16;
FX void fake_set_regs(int n) { fake_regs = n; }
static struct ffunc *known_func(void *f)
{
	struct ffunc *k = NULL;
	pthread_mutex_lock(&obj_lock);
	for (struct ffunc *y = all_funcs; f && y && !k; y = y->next)
		k = y == f ? y : NULL;
	pthread_mutex_unlock(&obj_lock);
	return k;
}
static int max_dyn_of(void *f)
{
	struct ffunc *k = known_func(f);
	return k ? k->max_dyn : 0;
}
FX CUresult cuFuncGetAttribute(int *v, CUfunction_attribute a, CUfunction f)
{
	REC();
	*v = a == CU_FUNC_ATTRIBUTE_NUM_REGS			  ? fake_regs
	     : a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES ? max_dyn_of(f)
								  : 0;
	return CUDA_SUCCESS;
}
FX CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v)
{
	REC();
	struct ffunc *k = known_func(f);
	if (k && a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
		k->max_dyn = v;
	return CUDA_SUCCESS;
}
FX CUresult cuKernelGetAttribute(int *v, CUfunction_attribute a, CUkernel kk, CUdevice d)
{
	(void)d;
	REC();
	*v = a == CU_FUNC_ATTRIBUTE_NUM_REGS			  ? fake_regs
	     : a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES ? max_dyn_of(kk)
								  : 0;
	return CUDA_SUCCESS;
}
FX CUresult cuKernelSetAttribute(CUfunction_attribute a, int v, CUkernel kk, CUdevice d)
{
	(void)d;
	REC();
	struct ffunc *k = known_func(kk);
	if (k && a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
		k->max_dyn = v;
	return CUDA_SUCCESS;
}
/* Streams run nothing here: an async memset happens at once. */
static void *last_memset_stream;
FX void *fake_last_memset_stream(void) { return last_memset_stream; }
__attribute__((weak)) FX CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s)
{
	REC();
	memset((void *)(uintptr_t)d, v, n);
	last_memset_stream = s;
	return CUDA_SUCCESS;
}
FX CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, CUstream s)
{
	REC();
	for (size_t i = 0; i < n; i++)
		((unsigned *)(uintptr_t)d)[i] = v;
	last_memset_stream = s;
	return CUDA_SUCCESS;
}
/* Pinned host memory mapped for the "device": the same address. */
__attribute__((weak)) FX CUresult cuMemHostAlloc(void **p, size_t n, unsigned f)
{
	(void)f;
	REC();
	*p = calloc(1, n ? n : 1);
	return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
__attribute__((weak)) FX CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *d, void *p, unsigned f)
{
	(void)f;
	REC();
	*d = (CUdeviceptr)(uintptr_t)p;
	return CUDA_SUCCESS;
}
__attribute__((weak)) FX CUresult cuMemFreeHost(void *p)
{
	REC();
	free(p);
	return CUDA_SUCCESS;
}
/* ---- stream capture: stream 0xC0DE is always "being captured"; a stream
 * in cuStreamBeginCapture..cuStreamEndCapture is too. Two rules of the real
 * driver are kept, the ones gpuext's own calls can break: while any capture
 * runs in global mode, a potentially unsafe call (here cuEventQuery and
 * cuMemAlloc) from a thread whose mode (cuThreadExchangeStreamCaptureMode)
 * is not relaxed invalidates it; and a synchronous copy (legacy stream)
 * while a blocking stream is captured does, in any mode. cuStreamEndCapture
 * then fails. One capture at a time. */
static __thread int cap_tmode = CU_STREAM_CAPTURE_MODE_GLOBAL;
static CUstream cap_stream;
static int cap_mode, cap_invalid;
static int cap_unsafe_call(void)
{
	pthread_mutex_lock(&launch_lock);
	int bad = cap_stream && cap_mode == CU_STREAM_CAPTURE_MODE_GLOBAL && cap_tmode != CU_STREAM_CAPTURE_MODE_RELAXED;
	cap_invalid |= bad;
	pthread_mutex_unlock(&launch_lock);
	return bad;
}
/* A synchronous copy runs on the legacy stream, which may not come to
 * depend on a blocking stream being captured, in any mode. */
static int cap_implicit_sync(void)
{
	pthread_mutex_lock(&launch_lock);
	int bad = 0;
	for (struct fstream *x = all_streams; cap_stream && x && !bad; x = x->next)
		bad = (CUstream)x == cap_stream && !(x->flags & CU_STREAM_NON_BLOCKING);
	cap_invalid |= bad;
	pthread_mutex_unlock(&launch_lock);
	return bad;
}
/* weak: tests/attach/fakedev.c, linked into another fake, has its own
 * (with device memory); here a copy does nothing but keep that rule */
__attribute__((weak)) FX CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *src, size_t n)
{
	(void)d, (void)src, (void)n;
	REC();
	return cap_implicit_sync() ? CUDA_ERROR_STREAM_CAPTURE_IMPLICIT : CUDA_SUCCESS;
}
FX CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *m)
{
	REC();
	int old = cap_tmode;
	cap_tmode = (int)*m;
	*m = (CUstreamCaptureMode)old;
	return CUDA_SUCCESS;
}
FX CUresult cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode m)
{
	REC();
	pthread_mutex_lock(&launch_lock);
	CUresult rc = cap_stream ? CUDA_ERROR_ILLEGAL_STATE : CUDA_SUCCESS;
	if (!cap_stream)
		cap_stream = s, cap_mode = (int)m, cap_invalid = 0;
	pthread_mutex_unlock(&launch_lock);
	return rc;
}
FX CUresult cuStreamEndCapture(CUstream s, CUgraph *g)
{
	REC();
	pthread_mutex_lock(&launch_lock);
	CUresult rc = s != cap_stream ? CUDA_ERROR_ILLEGAL_STATE
		      : cap_invalid   ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
				      : CUDA_SUCCESS;
	if (s == cap_stream)
		cap_stream = NULL;
	pthread_mutex_unlock(&launch_lock);
	if (g)
		*g = rc == CUDA_SUCCESS ? (CUgraph)(uintptr_t)0x6AF : NULL;
	return rc;
}
FX CUresult cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *st)
{
	REC();
	pthread_mutex_lock(&launch_lock);
	int c = s == (CUstream)(uintptr_t)0xC0DE || (cap_stream && s == cap_stream);
	pthread_mutex_unlock(&launch_lock);
	*st = c ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
	return CUDA_SUCCESS;
}

/* ---- forwarding probes: many arguments, stack arguments, floats ---- */
static char probe[512];
FX const char *fake_probe(void) { return probe; }
FX CUresult cuOccupancyMaxPotentialBlockSizeWithFlags(int *minGrid, int *block, CUfunction f, CUoccupancyB2DSize fn,
						      size_t dyn, int limit, unsigned flags)
{
	REC();
	snprintf(probe, sizeof(probe), "occ %p %p %p %p %zu %d %u", (void *)minGrid, (void *)block, (void *)f,
		 (void *)fn, dyn, limit, flags);
	*minGrid = 7;
	*block = 9;
	return CUDA_SUCCESS;
}
FX CUresult cuTexRefSetMipmapLevelClamp(CUtexref t, float lo, float hi)
{
	REC();
	snprintf(probe, sizeof(probe), "clamp %p %.3f %.3f", (void *)t, lo, hi);
	return CUDA_SUCCESS;
}
FX CUresult cuMemsetD2D32Async(CUdeviceptr d, size_t pitch, unsigned v, size_t w, size_t h, CUstream s)
{
	REC();
	snprintf(probe, sizeof(probe), "memset %llx %zu %u %zu %zu %p", (unsigned long long)d, pitch, v, w, h,
		 (void *)s);
	return CUDA_ERROR_INVALID_VALUE; /* a distinctive result that must come back */
}

static int export_table[4] = { 1, 2, 3, 4 };
/* The all-zero id gets a recognisable table (the forwarding test); any
 * other, e.g. cudart's private ones, is "not found" so cudart gives up
 * cleanly instead of calling into a table that does not exist. */
FX CUresult cuGetExportTable(const void **t, const CUuuid *id)
{
	REC();
	static const CUuuid zero;
	if (!id || memcmp(id, &zero, sizeof(zero))) {
		*t = NULL;
		return CUDA_ERROR_NOT_FOUND;
	}
	*t = export_table;
	return CUDA_SUCCESS;
}

/* ---- cuGetProcAddress: versions and per-thread flags like the driver ---- */
static const struct {
	const char *base;
	int since;
	const char *sym;
} ver_tab[] = {
	{ "cuCtxCreate", 12050, "cuCtxCreate_v4" }, { "cuCtxCreate", 3020, "cuCtxCreate_v2" },
	{ "cuMemFree", 3020, "cuMemFree_v2" },       { "cuMemAdvise", 12020, "cuMemAdvise_v2" },
	{ "cuMemAlloc", 3020, "cuMemAlloc_v2" },     { "cuMemGetInfo", 3020, "cuMemGetInfo_v2" },
	{ "cuMemAllocPitch", 3020, "cuMemAllocPitch_v2" },
	{ "cuMemPrefetchAsync", 12020, "cuMemPrefetchAsync_v2" },
	{ "cuLinkAddData", 6050, "cuLinkAddData_v2" },
	{ "cuStreamDestroy", 4000, "cuStreamDestroy_v2" },
	{ "cuDevicePrimaryCtxRelease", 11000, "cuDevicePrimaryCtxRelease_v2" },
	{ "cuGraphAddKernelNode", 12000, "cuGraphAddKernelNode_v2" },
	{ "cuGraphInstantiate", 12000, "cuGraphInstantiateWithFlags" },
	{ "cuGraphInstantiate", 11000, "cuGraphInstantiate_v2" },
	{ "cuGraphExecUpdate", 12000, "cuGraphExecUpdate_v2" },
	{ "cuGraphKernelNodeGetParams", 12000, "cuGraphKernelNodeGetParams_v2" },
	{ "cuGetProcAddress", 12000, "cuGetProcAddress_v2" },
};
static const struct {
	const char *name;
	int since;
} min_ver[] = { { "cuLibraryLoadData", 12000 }, { "cuLaunchKernelEx", 11060 }, { "cuKernelGetFunction", 12000 } };

/* fake_procaddr_internal(1): cuGetProcAddress answers with pointers that are
 * not the exports (as a driver may), for the shim's version-table fallback. */
static int procaddr_internal;
FX void fake_procaddr_internal(int on) { procaddr_internal = on; }
static CUresult internal_launch_ptsz(LARGS, void **p, void **e) { return cuLaunchKernel_ptsz(f, gx, gy, gz, bx, by, bz, sh, s, p, e); }
static CUresult internal_launch(LARGS, void **p, void **e) { return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, sh, s, p, e); }
static CUresult internal_memfree(CUdeviceptr p) { return cuMemFree_v2(p); }
static CUresult internal_getcount(int *n) { return cuDeviceGetCount(n); }

static void *self_sym(const char *n)
{
	static void *self;
	if (!self) {
		Dl_info di;
		dladdr((void *)fake_rec, &di);
		self = dlopen(di.dli_fname, RTLD_NOW | RTLD_NOLOAD);
	}
	return self ? dlsym(self, n) : NULL;
}

static CUresult procaddr(const char *symbol, void **pfn, int ver, cuuint64_t flags,
			 CUdriverProcAddressQueryResult *st)
{
	if (!symbol || !pfn)
		return CUDA_ERROR_INVALID_VALUE;
	*pfn = NULL;
	for (size_t i = 0; i < sizeof(min_ver) / sizeof(min_ver[0]); i++) {
		if (!strcmp(min_ver[i].name, symbol) && ver < min_ver[i].since) {
			if (st)
				*st = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
			return CUDA_ERROR_NOT_FOUND;
		}
	}
	const char *sym = symbol;
	for (size_t i = 0; i < sizeof(ver_tab) / sizeof(ver_tab[0]); i++)
		if (!strcmp(ver_tab[i].base, symbol) && ver >= ver_tab[i].since) {
			sym = ver_tab[i].sym;
			break;
		}
	void *p = NULL;
	if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) {
		char b[128];
		snprintf(b, sizeof(b), "%s_ptsz", sym);
		p = self_sym(b);
	}
	if (!p)
		p = self_sym(sym);
	if (!p || !strncmp(symbol, "fake_", 5)) {
		if (st)
			*st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
		return CUDA_ERROR_NOT_FOUND;
	}
	if (procaddr_internal) {
		if (p == self_sym("cuLaunchKernel_ptsz"))
			p = (void *)internal_launch_ptsz;
		else if (p == self_sym("cuLaunchKernel"))
			p = (void *)internal_launch;
		else if (p == self_sym("cuMemFree_v2"))
			p = (void *)internal_memfree;
		else if (p == self_sym("cuDeviceGetCount"))
			p = (void *)internal_getcount;
	}
	*pfn = p;
	if (st)
		*st = CU_GET_PROC_ADDRESS_SUCCESS;
	return CUDA_SUCCESS;
}

FX CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int ver, cuuint64_t flags,
				CUdriverProcAddressQueryResult *st)
{
	REC();
	return procaddr(symbol, pfn, ver, flags, st);
}

FX CUresult cuGetProcAddress(const char *symbol, void **pfn, int ver, cuuint64_t flags)
{
	REC();
	return procaddr(symbol, pfn, ver, flags, NULL);
}

/* The fake must be fork-safe too, or the shim's fork test would hang in it. */
static void fk_prepare(void)
{
	pthread_mutex_lock(&ctx_lock);
	pthread_mutex_lock(&obj_lock);
	pthread_mutex_lock(&launch_lock);
	pthread_mutex_lock(&rec_lock);
}
static void fk_release(void)
{
	pthread_mutex_unlock(&rec_lock);
	pthread_mutex_unlock(&launch_lock);
	pthread_mutex_unlock(&obj_lock);
	pthread_mutex_unlock(&ctx_lock);
}
__attribute__((constructor)) static void fake_init(void)
{
	pthread_atfork(fk_prepare, fk_release, fk_release);
}
