/* fake.c — a TEST-ONLY stand-in for NVIDIA's libcuda.so.1 (never part of
 * the product). The shim's tests point GPUEXT_REAL_LIBCUDA at it. It exports
 * the driver's names (most as generated recorders, fake_gen.c), records
 * every call, and implements just enough semantics to check the shim: two
 * devices (sm_90, sm_80), primary and created contexts, PTX modules whose
 * kernels are the `.entry` names, libraries, launches, cuLink*, graph
 * nodes, managed memory, streams, and cuGetProcAddress with versions/flags.
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

/* ---- devices and contexts ---- */
struct fctx {
	int dev;
	int primary;
	int alive;
};
static struct fctx primaries[2] = { { 0, 1, 0 }, { 1, 1, 0 } };
static int primary_refs[2];
static __thread struct fctx *cur;
static const int cc[2][2] = { { 9, 0 }, { 8, 0 } };
static int initialised;

FX CUresult cuInit(unsigned int f)
{
	REC();
	if (f)
		return CUDA_ERROR_INVALID_VALUE;
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
	*n = 2;
	return initialised ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

FX CUresult cuDeviceGet(CUdevice *d, int ord)
{
	REC();
	if (ord < 0 || ord > 1)
		return CUDA_ERROR_INVALID_DEVICE;
	*d = ord;
	return CUDA_SUCCESS;
}

FX CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d)
{
	REC();
	if (d < 0 || d > 1)
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
	if (d < 0 || d > 1)
		return CUDA_ERROR_INVALID_DEVICE;
	primaries[d].alive = 1;
	primary_refs[d]++;
	*c = (CUcontext)&primaries[d];
	return CUDA_SUCCESS;
}

FX CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d)
{
	REC();
	if (d < 0 || d > 1 || !primary_refs[d])
		return CUDA_ERROR_INVALID_CONTEXT;
	if (--primary_refs[d] == 0)
		primaries[d].alive = 0;
	return CUDA_SUCCESS;
}

FX CUresult cuCtxCreate_v4(CUcontext *pc, CUctxCreateParams *p, unsigned f, CUdevice d)
{
	(void)p, (void)f;
	REC();
	if (d < 0 || d > 1)
		return CUDA_ERROR_INVALID_DEVICE;
	struct fctx *c = calloc(1, sizeof(*c));
	c->dev = d;
	c->alive = 1;
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
	if (!x || x->primary)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (cur == x)
		cur = NULL;
	free(x);
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

FX CUresult cuCtxGetDevice(CUdevice *d)
{
	REC();
	if (!cur)
		return CUDA_ERROR_INVALID_CONTEXT;
	*d = cur->dev;
	return CUDA_SUCCESS;
}

FX CUresult cuCtxSynchronize(void)
{
	REC();
	return CUDA_SUCCESS;
}

FX CUresult cuGetErrorName(CUresult e, const char **s)
{
	REC();
	switch (e) {
	case CUDA_SUCCESS: *s = "CUDA_SUCCESS"; break;
	case CUDA_ERROR_INVALID_PTX: *s = "CUDA_ERROR_INVALID_PTX"; break;
	case CUDA_ERROR_NOT_FOUND: *s = "CUDA_ERROR_NOT_FOUND"; break;
	default: *s = "CUDA_ERROR_UNKNOWN"; break;
	}
	return CUDA_SUCCESS;
}

/* ---- modules, libraries, functions ---- */
struct fmod {
	struct fmod *next; /* every live module: reachable, so no false leak reports */
	struct fctx *ctx;
	int is_library;
	char *text;   /* copy of the image (PTX or a fake cubin) */
	const void *image; /* pointer the loader got */
};
struct ffunc {
	struct ffunc *next; /* every handle ever made: kept reachable */
	struct fmod *mod;
	struct fctx *ctx;
	int is_kernel;
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

static CUresult load(struct fmod **out, const void *img, int is_library, unsigned nopt, CUjit_option *o, void **v)
{
	const char *s = img;
	last_image = img;
	last_jit_nopts = nopt;
	if (!s)
		return CUDA_ERROR_INVALID_VALUE;
	int is_elf = !memcmp(s, "\177ELF", 4);
	if (!is_elf) {
		if (!strstr(s, ".version"))
			return CUDA_ERROR_INVALID_IMAGE;
		if (reject_not_at && img != reject_not_at)
			return CUDA_ERROR_INVALID_PTX;
		const char *t = strstr(s, ".target sm_");
		if (t && cur && atoi(t + 11) > cc[cur->dev][0] * 10 + cc[cur->dev][1])
			return CUDA_ERROR_INVALID_PTX;
	}
	/* JIT option write-back: CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES gets 5, the log "fake\n". */
	for (unsigned i = 0; i < nopt; i++) {
		if (o[i] == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES)
			v[i] = (void *)(uintptr_t)5;
		if (o[i] == CU_JIT_WALL_TIME)
			{ float w = 1.5f; v[i] = NULL; memcpy(&v[i], &w, sizeof(w)); }
	}
	struct fmod *m = calloc(1, sizeof(*m));
	m->ctx = cur;
	m->is_library = is_library;
	m->image = img;
	size_t n = is_elf ? 64 : strlen(s) + 1;
	m->text = malloc(n + 1);
	memcpy(m->text, s, n);
	m->text[n] = 0;
	pthread_mutex_lock(&obj_lock);
	m->next = all_mods;
	all_mods = m;
	pthread_mutex_unlock(&obj_lock);
	*out = m;
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

FX CUresult cuModuleLoad(CUmodule *m, const char *path)
{
	REC();
	FILE *f = fopen(path, "rb");
	if (!f)
		return CUDA_ERROR_FILE_NOT_FOUND;
	static char buf[1 << 16];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	return load((struct fmod **)m, buf, 0, 0, NULL, NULL);
}

FX CUresult cuModuleUnload(CUmodule m)
{
	REC();
	struct fmod *x = (struct fmod *)m;
	if (!x)
		return CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&obj_lock);
	for (struct fmod **pp = &all_mods; *pp; pp = &(*pp)->next)
		if (*pp == x) {
			*pp = x->next;
			break;
		}
	pthread_mutex_unlock(&obj_lock);
	free(x->text);
	free(x);
	return CUDA_SUCCESS;
}

static CUresult get_func(struct fmod *m, const char *name, struct ffunc **out, int is_kernel)
{
	if (!m || !name)
		return CUDA_ERROR_INVALID_HANDLE;
	char pat[160];
	snprintf(pat, sizeof(pat), ".entry %s", name);
	if (memcmp(m->text, "\177ELF", 4) && !strstr(m->text, pat))
		return CUDA_ERROR_NOT_FOUND;
	struct ffunc *f = calloc(1, sizeof(*f));
	pthread_mutex_lock(&obj_lock);
	f->next = all_funcs;
	all_funcs = f;
	pthread_mutex_unlock(&obj_lock);
	f->mod = m;
	f->ctx = cur;
	f->is_kernel = is_kernel;
	snprintf(f->name, sizeof(f->name), "%s", name);
	*out = f;
	return CUDA_SUCCESS;
}

FX CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
	REC();
	return get_func((struct fmod *)m, name, (struct ffunc **)f, 0);
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
	CUmodule m;
	CUresult rc = cuModuleLoad(&m, path);
	if (rc == CUDA_SUCCESS)
		((struct fmod *)m)->is_library = 1;
	*l = (CUlibrary)m;
	return rc;
}

FX CUresult cuLibraryUnload(CUlibrary l)
{
	REC();
	return cuModuleUnload((CUmodule)l);
}

FX CUresult cuLibraryGetKernel(CUkernel *k, CUlibrary l, const char *name)
{
	REC();
	return get_func((struct fmod *)l, name, (struct ffunc **)k, 1);
}

FX CUresult cuKernelGetFunction(CUfunction *f, CUkernel k)
{
	REC();
	struct ffunc *kk = (struct ffunc *)k;
	if (!kk)
		return CUDA_ERROR_INVALID_HANDLE;
	return get_func(kk->mod, kk->name, (struct ffunc **)f, 0);
}

FX CUresult cuLibraryGetModule(CUmodule *m, CUlibrary l)
{
	REC();
	*m = (CUmodule)l;
	return CUDA_SUCCESS;
}

/* ---- launches ---- */
struct fake_launch {
	const char *api;
	void *func;
	unsigned grid[3], block[3], shmem;
	void *stream;
	void **params;
	long count;
};
static struct fake_launch last_launch;
static long nr_launches;
static pthread_mutex_t launch_lock = PTHREAD_MUTEX_INITIALIZER;

FX struct fake_launch fake_last_launch(void)
{
	pthread_mutex_lock(&launch_lock);
	struct fake_launch l = last_launch;
	l.count = nr_launches;
	pthread_mutex_unlock(&launch_lock);
	return l;
}

static CUresult launch(const char *api, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
		       unsigned by, unsigned bz, unsigned sh, CUstream s, void **p)
{
	if (!f)
		return CUDA_ERROR_INVALID_HANDLE;
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

/* ---- graphs ---- */
static void *last_node_func;
FX void *fake_last_node_func(void) { return last_node_func; }
FX CUresult cuGraphAddKernelNode_v2(CUgraphNode *n, CUgraph g, const CUgraphNode *d, size_t nd,
				    const CUDA_KERNEL_NODE_PARAMS *p)
{
	(void)g, (void)d, (void)nd;
	REC();
	last_node_func = p->func;
	*n = (CUgraphNode)(uintptr_t)0x100;
	return CUDA_SUCCESS;
}
FX CUresult cuGraphAddKernelNode(CUgraphNode *n, CUgraph g, const CUgraphNode *d, size_t nd,
				 const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
	(void)g, (void)d, (void)nd;
	REC();
	last_node_func = p->func;
	*n = (CUgraphNode)(uintptr_t)0x101;
	return CUDA_SUCCESS;
}
FX CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS *p)
{
	(void)n;
	REC();
	last_node_func = p->func;
	return CUDA_SUCCESS;
}
FX CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec e, CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS *p)
{
	(void)e, (void)n;
	REC();
	last_node_func = p->func;
	return CUDA_SUCCESS;
}

FX CUresult cuGraphAddNode_v2(CUgraphNode *n, CUgraph g, const CUgraphNode *d, const CUgraphEdgeData *ed, size_t nd,
			      CUgraphNodeParams *p)
{
	(void)g, (void)d, (void)ed, (void)nd;
	REC();
	if (p->type == CU_GRAPH_NODE_TYPE_KERNEL)
		last_node_func = p->kernel.func;
	*n = (CUgraphNode)(uintptr_t)0x102;
	return CUDA_SUCCESS;
}

/* ---- cuLink ---- */
static const void *last_link_data;
static char link_cubin[64] = "\177ELF fake linked cubin";
FX const void *fake_last_link_data(void) { return last_link_data; }
FX CUresult cuLinkCreate_v2(unsigned n, CUjit_option *o, void **v, CUlinkState *s)
{
	(void)n, (void)o, (void)v;
	REC();
	*s = (CUlinkState)calloc(1, 16);
	return CUDA_SUCCESS;
}
FX CUresult cuLinkAddData_v2(CUlinkState s, CUjitInputType t, void *data, size_t size, const char *name, unsigned n,
			     CUjit_option *o, void **v)
{
	(void)s, (void)size, (void)name, (void)n, (void)o, (void)v;
	REC();
	if (t == CU_JIT_INPUT_PTX && !strstr(data, ".version"))
		return CUDA_ERROR_INVALID_PTX;
	last_link_data = data;
	return CUDA_SUCCESS;
}
FX CUresult cuLinkComplete(CUlinkState s, void **cubin, size_t *size)
{
	(void)s;
	REC();
	if (getenv("FAKECUDA_LINK_FAIL")) /* a link error, for the shim's -rdc fallback */
		return CUDA_ERROR_INVALID_PTX;
	*cubin = link_cubin;
	*size = sizeof(link_cubin);
	return CUDA_SUCCESS;
}
FX CUresult cuLinkDestroy(CUlinkState s)
{
	REC();
	free(s);
	return CUDA_SUCCESS;
}

/* ---- memory and streams ---- */
static char managed_pool[1 << 16];
static size_t managed_used;
FX CUresult cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned f)
{
	(void)f;
	REC();
	if (managed_used + n > sizeof(managed_pool))
		return CUDA_ERROR_OUT_OF_MEMORY;
	*p = (CUdeviceptr)(uintptr_t)(managed_pool + managed_used);
	managed_used += (n + 255) & ~(size_t)255;
	return CUDA_SUCCESS;
}
FX CUresult cuMemFree_v2(CUdeviceptr p) { (void)p; REC(); return CUDA_SUCCESS; }
FX CUresult cuMemPrefetchAsync_v2(CUdeviceptr p, size_t n, CUmemLocation l, unsigned f, CUstream s)
{
	(void)p, (void)n, (void)l, (void)f, (void)s;
	REC();
	return CUDA_SUCCESS;
}
FX CUresult cuMemAdvise_v2(CUdeviceptr p, size_t n, CUmem_advise a, CUmemLocation l)
{
	(void)p, (void)n, (void)a, (void)l;
	REC();
	return CUDA_SUCCESS;
}
FX CUresult cuStreamCreate(CUstream *s, unsigned f)
{
	(void)f;
	REC();
	*s = (CUstream)calloc(1, 8);
	return CUDA_SUCCESS;
}
FX CUresult cuStreamDestroy_v2(CUstream s)
{
	REC();
	free(s);
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
	{ "cuMemPrefetchAsync", 12020, "cuMemPrefetchAsync_v2" },
	{ "cuLinkAddData", 6050, "cuLinkAddData_v2" },
	{ "cuStreamDestroy", 4000, "cuStreamDestroy_v2" },
	{ "cuDevicePrimaryCtxRelease", 11000, "cuDevicePrimaryCtxRelease_v2" },
	{ "cuGraphAddKernelNode", 12000, "cuGraphAddKernelNode_v2" },
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
	pthread_mutex_lock(&obj_lock);
	pthread_mutex_lock(&launch_lock);
	pthread_mutex_lock(&rec_lock);
}
static void fk_release(void)
{
	pthread_mutex_unlock(&rec_lock);
	pthread_mutex_unlock(&launch_lock);
	pthread_mutex_unlock(&obj_lock);
}
__attribute__((constructor)) static void fake_init(void)
{
	pthread_atfork(fk_prepare, fk_release, fk_release);
}
