/* test_shim.c — the shim against the fake driver (tests/shim/fakecuda).
 * Linked against the toolkit's stub libcuda.so like any application; run
 * with LD_LIBRARY_PATH=build/lib (the shim) and GPUEXT_REAL_LIBCUDA=fake.
 * argv[1]: a real cubin (from ptxas), argv[2]: a PTX file, argv[3]: an nvcc
 * fatbin (sm_80 SASS + compressed compute_80 PTX). stderr (the
 * shim's log) goes to a temp file that the checks read back. */
#define CUDA_ENABLE_DEPRECATED 1
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpuext/gx_events.h"
#include "tests/gx_test.h"
#include "tests/image/bomb.h"
#include "tests/shim/stderr_log.h"

static const char PTX80[] = ".version 8.0\n.target sm_80\n.address_size 64\n"
			    ".visible .entry kern_a()\n{\n\tret;\n}\n"
			    ".visible .entry kern_b()\n{\n\tret;\n}\n";
static const char PTX90[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
			    ".visible .entry kern_c()\n{\n\tret;\n}\n";

/* ---- the log ---- */
static void log_dump(long from)
{
	fflush(stderr);
	fseek(logf_, from, SEEK_SET);
	char line[2048];
	while (fgets(line, sizeof(line), logf_))
		printf("# log: %s", line);
}

/* ---- the fake's record ---- */
#include "tests/shim/fakecuda/fake_launch.h"
static void *fake;
static long (*fake_count)(const char *);
static long (*fake_total)(void);
static struct fake_launch (*fake_last_launch)(void);
static const void *(*fake_last_image)(void);
static void (*fake_reject_ptx_not_at)(const void *);
static void *(*fake_last_node_func)(void);
static const void *(*fake_last_link_data)(void);
static const char *(*fake_probe)(void);
static int (*table_counts)(size_t *, size_t *, size_t *);
/* The event API is reached the way a policy reaches it: by dlsym. */
static int (*p_subscribe)(unsigned, gx_event_fn, void *);
static int (*p_unsubscribe)(int);
static unsigned (*p_active)(void);
#define gx_events_subscribe p_subscribe
#define gx_events_unsubscribe p_unsubscribe
#define gx_events_active p_active

static void bind_fake(void)
{
	fake = dlopen(getenv("GPUEXT_REAL_LIBCUDA"), RTLD_NOW | RTLD_NOLOAD);
	if (!fake) {
		printf("not ok - fake driver loaded by the shim\n");
		exit(1);
	}
	*(void **)&fake_count = dlsym(fake, "fake_count");
	*(void **)&fake_total = dlsym(fake, "fake_total");
	*(void **)&fake_last_launch = dlsym(fake, "fake_last_launch");
	*(void **)&fake_last_image = dlsym(fake, "fake_last_image");
	*(void **)&fake_reject_ptx_not_at = dlsym(fake, "fake_reject_ptx_not_at");
	*(void **)&fake_last_node_func = dlsym(fake, "fake_last_node_func");
	*(void **)&fake_last_link_data = dlsym(fake, "fake_last_link_data");
	*(void **)&fake_probe = dlsym(fake, "fake_probe");
	*(void **)&table_counts = dlsym(RTLD_DEFAULT, "gx_shim_table_counts");
	*(void **)&p_subscribe = dlsym(RTLD_DEFAULT, "gx_events_subscribe");
	*(void **)&p_unsubscribe = dlsym(RTLD_DEFAULT, "gx_events_unsubscribe");
	*(void **)&p_active = dlsym(RTLD_DEFAULT, "gx_events_active");
	if (!table_counts || !p_subscribe || !p_unsubscribe || !p_active) {
		printf("not ok - the shim exports gx_events_* and gx_shim_table_counts\n");
		exit(1);
	}
}

static size_t nr_mods(void)
{
	size_t c, m, f;
	table_counts(&c, &m, &f);
	return m;
}

/* ---- inert, forwarding, missing symbols ---- */
CUresult cuCheckpointProcessLock(int pid, CUcheckpointLockArgs *args);

static void test_forwarding(void)
{
	const char *fp = getenv("GPUEXT_REAL_LIBCUDA");
	GX_CHECK(dlopen(fp, RTLD_NOW | RTLD_NOLOAD) == NULL, "inert: the real driver is not loaded before a call");
	int v = 0;
	GX_CHECK(cuDriverGetVersion(&v) == CUDA_SUCCESS && v == 13000, "cuDriverGetVersion forwarded before cuInit (%d)", v);
	bind_fake();
	GX_CHECK(fake_count("cuInit") == 0 && fake_count("cuCtxGetCurrent") == 0 && fake_count("cuDeviceGetCount") == 0,
		 "inert: no driver call of the shim's own before cuInit (%ld calls)", fake_total());
	GX_CHECK(cuInit(0) == CUDA_SUCCESS && fake_count("cuInit") == 1, "cuInit forwarded once");
	GX_CHECK(cuInit(7) == CUDA_ERROR_INVALID_VALUE, "cuInit's error comes back unchanged");

	int a = 0, b = 0;
	CUresult rc = cuOccupancyMaxPotentialBlockSizeWithFlags(&a, &b, (CUfunction)(uintptr_t)0x1234,
								 (CUoccupancyB2DSize)(uintptr_t)0x5678, 99, 1024, 3);
	char want[256];
	snprintf(want, sizeof(want), "occ %p %p 0x1234 0x5678 99 1024 3", (void *)&a, (void *)&b);
	GX_CHECK(rc == CUDA_SUCCESS && a == 7 && b == 9 && !strcmp(fake_probe(), want),
		 "7-argument call forwarded intact (stack args): %s", fake_probe());
	rc = cuTexRefSetMipmapLevelClamp((CUtexref)(uintptr_t)0x42, 0.25f, 7.5f);
	GX_CHECK(rc == CUDA_SUCCESS && !strcmp(fake_probe(), "clamp 0x42 0.250 7.500"), "float arguments forwarded: %s",
		 fake_probe());
	rc = cuMemsetD2D32Async(0xdead0000, 4096, 0xabcdef, 1000, 3, (CUstream)(uintptr_t)0x77);
	GX_CHECK(rc == CUDA_ERROR_INVALID_VALUE && !strcmp(fake_probe(), "memset dead0000 4096 11259375 1000 3 0x77"),
		 "6 arguments and the result forwarded: %s", fake_probe());
	long m = log_mark();
	rc = cuCheckpointProcessLock(1, NULL);
	GX_CHECK(rc == CUDA_ERROR_NOT_FOUND, "a symbol the driver lacks returns CUDA_ERROR_NOT_FOUND (%d)", rc);
	GX_CHECK(cuCheckpointProcessLock(1, NULL) == CUDA_ERROR_NOT_FOUND && log_count(m, "cuCheckpointProcessLock: not in the real driver") == 1,
		 "a missing symbol is logged once");
	/* Names of shim/driver-extra.syms (no prototype anywhere): forwarded
	 * when the driver has them, CUDA_ERROR_NOT_FOUND when it does not. */
	CUresult (*extra)(void) = (CUresult(*)(void))dlsym(RTLD_DEFAULT, "cuMemGetAttribute");
	long before = fake_count("cuMemGetAttribute");
	Dl_info di;
	GX_CHECK(extra && dladdr((void *)extra, &di) && strstr(di.dli_fname, "build/lib") && extra() == CUDA_SUCCESS &&
			 fake_count("cuMemGetAttribute") == before + 1,
		 "a driver name beyond the stub and headers (cuMemGetAttribute) is exported and forwarded");
	extra = (CUresult(*)(void))dlsym(RTLD_DEFAULT, "cuMemGetAttribute_v2");
	GX_CHECK(extra && extra() == CUDA_ERROR_NOT_FOUND && log_count(m, "cuMemGetAttribute_v2: not in the real driver") == 1,
		 "an extra name the driver lacks returns CUDA_ERROR_NOT_FOUND, logged once");
	const void *tab = NULL;
	CUuuid id = { { 0 } };
	rc = cuGetExportTable(&tab, &id);
	GX_CHECK(rc == CUDA_SUCCESS && tab && ((const int *)tab)[3] == 4, "cuGetExportTable forwarded untouched");
}

/* ---- dlsym and cuGetProcAddress ---- */
static const char *const intercepted[] = {
	"cuInit", "cuGetProcAddress", "cuGetProcAddress_v2", "cuLaunchKernel", "cuLaunchKernel_ptsz",
	"cuLaunchKernelEx", "cuLaunchKernelEx_ptsz", "cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel_ptsz",
	"cuModuleLoad", "cuModuleLoadData", "cuModuleLoadDataEx", "cuModuleLoadFatBinary", "cuModuleUnload",
	"cuModuleGetFunction", "cuLibraryLoadData", "cuLibraryLoadFromFile", "cuLibraryUnload", "cuLibraryGetKernel",
	"cuKernelGetFunction", "cuLinkAddData", "cuLinkAddData_v2", "cuLinkAddFile", "cuLinkAddFile_v2",
	"cuLinkComplete", "cuLinkDestroy", "cuCtxCreate", "cuCtxCreate_v2", "cuCtxCreate_v3", "cuCtxCreate_v4",
	"cuCtxDestroy", "cuCtxDestroy_v2", "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease",
	"cuDevicePrimaryCtxRelease_v2", "cuMemAllocManaged", "cuMemFree", "cuMemFree_v2", "cuMemPrefetchAsync",
	"cuMemPrefetchAsync_v2", "cuMemPrefetchAsync_ptsz", "cuMemPrefetchAsync_v2_ptsz", "cuMemAdvise",
	"cuMemAdvise_v2", "cuStreamCreate", "cuStreamCreateWithPriority", "cuStreamDestroy", "cuStreamDestroy_v2",
	"cuGraphAddKernelNode", "cuGraphAddKernelNode_v2", "cuGraphKernelNodeSetParams",
	"cuGraphKernelNodeSetParams_v2", "cuGraphExecKernelNodeSetParams", "cuGraphExecKernelNodeSetParams_v2",
};

static void *shim;

static void test_dlsym(void)
{
	shim = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	GX_CHECK(shim != NULL && dlsym(shim, "gpuext_shim_marker") != NULL, "libcuda.so.1 in the process is the shim");
	int bad = 0;
	for (size_t i = 0; i < sizeof(intercepted) / sizeof(intercepted[0]); i++) {
		void *o = dlsym(shim, intercepted[i]), *r = dlsym(fake, intercepted[i]);
		Dl_info di;
		if (!o || o == r || !dladdr(o, &di) || !strstr(di.dli_fname, "build/lib")) {
			printf("# dlsym %s: ours %p, fake %p\n", intercepted[i], o, r);
			bad++;
		}
	}
	GX_CHECK(!bad, "dlsym on the shim gives our wrappers for %zu intercepted names",
		 sizeof(intercepted) / sizeof(intercepted[0]));
	GX_CHECK(dlsym(shim, "cuMemcpy") != dlsym(fake, "cuMemcpy") && dlsym(shim, "cuMemcpy") != NULL,
		 "dlsym of a forwarded name gives our trampoline");
}

static bool is_intercepted(const char *n)
{
	for (size_t i = 0; i < sizeof(intercepted) / sizeof(intercepted[0]); i++)
		if (!strcmp(intercepted[i], n))
			return true;
	return false;
}

typedef CUresult (*gpa2_t)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
typedef CUresult (*gpa1_t)(const char *, void **, int, cuuint64_t);

static void test_procaddr(void)
{
	static const char *const names[] = {
		"cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchCooperativeKernel", "cuModuleLoadData",
		"cuLibraryLoadData", "cuKernelGetFunction", "cuMemFree", "cuMemAdvise", "cuMemPrefetchAsync",
		"cuCtxCreate", "cuStreamDestroy", "cuDevicePrimaryCtxRelease", "cuGraphAddKernelNode",
		"cuLinkAddData", "cuDeviceGetAttribute", "cuMemcpy", "cuNoSuchFunction", "fake_count",
	};
	static const int vers[] = { 3000, 11000, 11060, 12000, 12020, 12050, 13000 };
	gpa2_t f2 = (gpa2_t)dlsym(fake, "cuGetProcAddress_v2");
	gpa1_t f1 = (gpa1_t)dlsym(fake, "cuGetProcAddress");
	for (size_t n = 0; n < sizeof(names) / sizeof(names[0]); n++) {
		int combos = 0, bad = 0;
		for (size_t v = 0; v < sizeof(vers) / sizeof(vers[0]); v++)
			for (int flags = 0; flags < 3; flags++)
				for (int api = 0; api < 2; api++)
					for (int withst = 0; withst < 2; withst++) {
						void *want = NULL, *got = (void *)1;
						CUdriverProcAddressQueryResult sw = 99, sg = 99;
						CUresult rw, rg;
						if (api) {
							rw = f2(names[n], &want, vers[v], flags, withst ? &sw : NULL);
							rg = cuGetProcAddress_v2(names[n], &got, vers[v], flags, withst ? &sg : NULL);
						} else {
							if (withst)
								continue;
							rw = f1(names[n], &want, vers[v], flags);
							rg = ((gpa1_t)dlsym(shim, "cuGetProcAddress"))(names[n], &got, vers[v], flags);
						}
						combos++;
						/* Expected: the driver's choice, or our wrapper of that variant. */
						Dl_info di;
						if (want && dladdr(want, &di) && di.dli_sname && is_intercepted(di.dli_sname))
							want = dlsym(shim, di.dli_sname);
						if (rw != rg || want != got || sw != sg) {
							if (bad++ < 3)
								printf("# %s ver %d flags %d api %d st %d: rc %d/%d ptr %p/%p st %d/%d\n",
								       names[n], vers[v], flags, api, withst, rw, rg, want, got, sw, sg);
						}
					}
		GX_CHECK(!bad, "cuGetProcAddress %s: %d combinations (versions x flags x status x api)", names[n], combos);
	}
	void *p = NULL;
	CUdriverProcAddressQueryResult st = 99;
	void (*internal)(int) = (void (*)(int))dlsym(fake, "fake_procaddr_internal");
	internal(1);
	void *q = NULL, *r = NULL, *u = NULL;
	int n = -1;
	GX_CHECK(cuGetProcAddress_v2("cuMemFree", &r, 13000, 0, NULL) == CUDA_SUCCESS && r == dlsym(shim, "cuMemFree_v2"),
		 "driver answering with non-exported pointers: the version table picks our variant");
	/* Launches: a twin of our wrapper that jumps to the driver's own pointer. */
	Dl_info di;
	long n0 = fake_count("cuLaunchKernel_ptsz");
	GX_CHECK(cuGetProcAddress_v2("cuLaunchKernel", &q, 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, NULL) == CUDA_SUCCESS &&
			 q && q != dlsym(shim, "cuLaunchKernel_ptsz") && dladdr(q, &di) && strstr(di.dli_fname, "build/lib") &&
			 ((CUresult(*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
				       void **, void **))q)((CUfunction)(uintptr_t)0x99, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) ==
				 CUDA_SUCCESS &&
			 fake_count("cuLaunchKernel_ptsz") == n0 + 1 && fake_last_launch().func == (void *)(uintptr_t)0x99,
		 "... a launch gets our twin wrapper that reaches the driver's non-exported pointer");
	GX_CHECK(cuGetProcAddress_v2("cuDeviceGetCount", &u, 13000, 0, NULL) == CUDA_SUCCESS && u && u != dlsym(fake, "cuDeviceGetCount") &&
			 u != dlsym(shim, "cuDeviceGetCount") && ((CUresult(*)(int *))u)(&n) == CUDA_SUCCESS && n == 2,
		 "... and leaves the driver's own pointer for a function we do not intercept");
	internal(0);
	GX_CHECK(cuGetProcAddress_v2("cuGetProcAddress", &p, 13000, 0, &st) == CUDA_SUCCESS &&
			 p == dlsym(shim, "cuGetProcAddress_v2") && st == CU_GET_PROC_ADDRESS_SUCCESS,
		 "cuGetProcAddress asked for itself returns ours");
	GX_CHECK(cuGetProcAddress_v2("cuGetProcAddress", &p, 11030, 0, NULL) == CUDA_SUCCESS &&
			 p == dlsym(shim, "cuGetProcAddress"),
		 "... the legacy one for an old version");
	p = NULL;
	GX_CHECK(cuGetProcAddress_v2("cuLaunchKernel", &p, 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, NULL) ==
				 CUDA_SUCCESS &&
			 p == dlsym(shim, "cuLaunchKernel_ptsz"),
		 "per-thread flag gives our cuLaunchKernel_ptsz");
}

/* ---- module loading ---- */
static CUcontext c0;
static CUfunction fa;
static CUkernel kb;
static CUfunction fkb;
static CUlibrary lib;

static float wall_time(void *v)
{
	float f;
	memcpy(&f, &v, sizeof(f));
	return f;
}

static void test_fatbin(const char *fatbin_path)
{
	FILE *f = fopen(fatbin_path, "rb");
	static char buf[1 << 20];
	size_t n = f ? fread(buf, 1, sizeof(buf), f) : 0;
	if (f)
		fclose(f);
	GX_CHECK(n > 0, "read the nvcc fatbin %s", fatbin_path);
	long m = log_mark();
	CUmodule mod;
	CUfunction fn;
	GX_CHECK(cuModuleLoadFatBinary(&mod, buf) == CUDA_SUCCESS && fake_last_image() != buf &&
			 log_count(m, "(cuModuleLoadFatBinary): rewritten (identity), reloaded from sm_80 PTX") == 1,
		 "cuModuleLoadFatBinary(nvcc fatbin, compressed PTX): PTX extracted, rewritten, reloaded");
	if (log_count(m, "rewritten") != 1)
		log_dump(m);
	GX_CHECK(cuModuleGetFunction(&fn, mod, "fat_kernel") == CUDA_SUCCESS && cuModuleUnload(mod) == CUDA_SUCCESS,
		 "... the kernel is found in the reloaded module");
	m = log_mark();
	CUlibrary l;
	GX_CHECK(cuLibraryLoadData(&l, buf, NULL, NULL, 0, NULL, NULL, 0) == CUDA_SUCCESS &&
			 log_count(m, "(cuLibraryLoadData): rewritten (identity), reloaded from sm_80 PTX") == 1 &&
			 cuLibraryUnload(l) == CUDA_SUCCESS,
		 "cuLibraryLoadData(nvcc fatbin) rewritten and reloaded");
}

/* A 64 KiB fatbin whose PTX declares, and really decompresses to, 2 GiB:
 * over the image's decompression budget, so the shim never allocates it; the
 * original goes to the driver and one line says why. */
static void test_bomb(void)
{
	size_t len;
	uint8_t *b = bomb_fatbin(1, 2ull << 30, &len);
	struct rusage r0, r1;
	getrusage(RUSAGE_SELF, &r0);
	long m = log_mark();
	CUmodule mod;
	CUresult rc = cuModuleLoadFatBinary(&mod, b);
	getrusage(RUSAGE_SELF, &r1);
	/* (the fake driver refuses the original: it is no PTX text) */
	GX_CHECK(fake_last_image() == b &&
			 log_count(m, "passed through: the PTX entry decompresses to more than max(256 MiB") == 1 &&
			 log_count(m, "gpuext:") == 1,
		 "a %zu-byte fatbin decompressing to 2 GiB: over the budget, the original to the driver, one line",
		 len);
	if (log_count(m, "budget") != 1)
		log_dump(m);
	GX_CHECK(r1.ru_maxrss - r0.ru_maxrss < 64 * 1024, "... and nothing allocated for it (peak RSS +%ld KiB)",
		 r1.ru_maxrss - r0.ru_maxrss);
	if (rc == CUDA_SUCCESS)
		cuModuleUnload(mod);
	free(b);
}

static void test_modules(const char *cubin_path, const char *ptx_path)
{
	GX_CHECK(cuDevicePrimaryCtxRetain(&c0, 0) == CUDA_SUCCESS && cuCtxSetCurrent(c0) == CUDA_SUCCESS, "primary context");
	size_t m0 = nr_mods();
	long m = log_mark();
	CUmodule mod;
	GX_CHECK(cuModuleLoadData(&mod, PTX80) == CUDA_SUCCESS, "cuModuleLoadData(PTX)");
	GX_CHECK(fake_last_image() != PTX80, "the driver got the rewritten copy, not the original");
	GX_CHECK(log_count(m, "(cuModuleLoadData): rewritten (identity), reloaded") == 1, "log: rewritten (identity), reloaded");
	GX_CHECK(cuModuleGetFunction(&fa, mod, "kern_a") == CUDA_SUCCESS && fa, "cuModuleGetFunction on the reloaded module");
	GX_CHECK(nr_mods() == m0 + 1, "module recorded in the context's table");

	CUjit_option o[2] = { CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_WALL_TIME };
	void *v[2] = { (void *)(uintptr_t)1024, NULL };
	CUmodule mex;
	GX_CHECK(cuModuleLoadDataEx(&mex, PTX80, 2, o, v) == CUDA_SUCCESS && (uintptr_t)v[0] == 5 &&
			 wall_time(v[1]) == 1.5f,
		 "cuModuleLoadDataEx: JIT options written back by the driver reach the caller");

	m = log_mark();
	fake_reject_ptx_not_at(PTX80);
	CUmodule mfb;
	CUresult rc = cuModuleLoadData(&mfb, PTX80);
	fake_reject_ptx_not_at(NULL);
	GX_CHECK(rc == CUDA_SUCCESS && fake_last_image() == PTX80, "driver rejects the rewritten PTX: the original is loaded");
	GX_CHECK(log_count(m, "passed through: the driver rejected the rewritten PTX: CUDA_ERROR_INVALID_PTX") == 1 &&
			 log_count(m, "gpuext:") == 1,
		 "... and one log line says why");
	if (log_count(m, "gpuext:") != 1)
		log_dump(m);

	/* PTX the rewriter cannot parse (the fake driver accepts anything with
	 * .version): the original goes to the driver, one warning says why. */
	static const char badptx[] = ".version 8.0\n.target sm_80\n.address_size 64\n"
				     ".visible .entry kern_a(\n{ {{ %%%% not ptx\n";
	m = log_mark();
	CUmodule mbad;
	rc = cuModuleLoadData(&mbad, badptx);
	GX_CHECK(rc == CUDA_SUCCESS && fake_last_image() == badptx && log_count(m, "passed through: rewrite failed: ") == 1 &&
			 log_count(m, "gpuext:") == 1,
		 "the rewriter fails: the original image is loaded, one line says why");
	if (log_count(m, "gpuext:") != 1)
		log_dump(m);
	if (rc == CUDA_SUCCESS)
		cuModuleUnload(mbad);

	m = log_mark();
	static const unsigned char junk[64] = { 1, 2, 3, 4, 5 };
	CUmodule mj;
	rc = cuModuleLoadData(&mj, junk);
	GX_CHECK(rc == CUDA_ERROR_INVALID_IMAGE, "unrecognised image: the driver's own error comes back (%d)", rc);
	GX_CHECK(log_count(m, "passed through: unrecognised image") == 1, "... logged as passed through");

	m = log_mark();
	CUmodule mc;
	GX_CHECK(cuModuleLoad(&mc, cubin_path) == CUDA_SUCCESS && log_count(m, "(cuModuleLoad): passed through: SASS only") == 1,
		 "a cubin (SASS only) passes through and says so");
	m = log_mark();
	CUmodule mp;
	GX_CHECK(cuModuleLoad(&mp, ptx_path) == CUDA_SUCCESS && log_count(m, "(cuModuleLoad): rewritten (identity), reloaded") == 1,
		 "cuModuleLoad(PTX file) rewritten and reloaded");
	m = log_mark();
	CUmodule m9;
	GX_CHECK(cuModuleLoadData(&m9, PTX90) == CUDA_SUCCESS && log_count(m, "rewritten (identity), reloaded from sm_90") == 1,
		 "sm_90 PTX on the sm_90 device is rewritten");
	GX_CHECK(cuModuleUnload(m9) == CUDA_SUCCESS && cuModuleUnload(mp) == CUDA_SUCCESS && cuModuleUnload(mc) == CUDA_SUCCESS &&
			 cuModuleUnload(mfb) == CUDA_SUCCESS && cuModuleUnload(mex) == CUDA_SUCCESS,
		 "cuModuleUnload");
	GX_CHECK(nr_mods() == m0 + 1, "unloaded modules are forgotten (%zu left)", nr_mods());

	m = log_mark();
	GX_CHECK(cuLibraryLoadData(&lib, PTX80, NULL, NULL, 0, NULL, NULL, 0) == CUDA_SUCCESS &&
			 log_count(m, "(cuLibraryLoadData): rewritten (identity), reloaded") == 1,
		 "cuLibraryLoadData rewritten and reloaded");
	GX_CHECK(cuLibraryGetKernel(&kb, lib, "kern_b") == CUDA_SUCCESS && cuKernelGetFunction(&fkb, kb) == CUDA_SUCCESS,
		 "cuLibraryGetKernel / cuKernelGetFunction on our library");
	m = log_mark();
	CUlibrary l9;
	GX_CHECK(cuLibraryLoadData(&l9, PTX90, NULL, NULL, 0, NULL, NULL, 0) == CUDA_SUCCESS &&
			 log_count(m, "passed through: no usable code, no PTX for sm_80") == 1,
		 "a library whose PTX one device (sm_80) cannot JIT passes through");
	GX_CHECK(cuLibraryUnload(l9) == CUDA_SUCCESS, "cuLibraryUnload");
	m = log_mark();
	CUlibrary lf;
	GX_CHECK(cuLibraryLoadFromFile(&lf, ptx_path, NULL, NULL, 0, NULL, NULL, 0) == CUDA_SUCCESS &&
			 log_count(m, "(cuLibraryLoadFromFile): rewritten (identity), reloaded") == 1 &&
			 cuLibraryUnload(lf) == CUDA_SUCCESS,
		 "cuLibraryLoadFromFile rewritten and reloaded");

	/* cuLink: PTX inputs rewritten, the linked cubin reported as such. */
	CUlinkState ls;
	void *cub;
	size_t sz;
	m = log_mark();
	GX_CHECK(cuLinkCreate(0, NULL, NULL, &ls) == CUDA_SUCCESS &&
			 cuLinkAddData(ls, CU_JIT_INPUT_PTX, (void *)PTX80, sizeof(PTX80), "a.ptx", 0, NULL, NULL) == CUDA_SUCCESS &&
			 fake_last_link_data() != PTX80 &&
			 cuLinkAddFile(ls, CU_JIT_INPUT_PTX, ptx_path, 0, NULL, NULL) == CUDA_SUCCESS &&
			 cuLinkComplete(ls, &cub, &sz) == CUDA_SUCCESS,
		 "cuLinkAddData/cuLinkAddFile get rewritten PTX");
	CUmodule ml;
	GX_CHECK(cuModuleLoadData(&ml, cub) == CUDA_SUCCESS &&
			 log_count(m, "linked by cuLinkComplete from 2 rewritten and 0 passed-through inputs") == 1 &&
			 log_count(m, "(cuLinkAddData): rewritten (identity)") == 1 &&
			 log_count(m, "(cuLinkAddFile): rewritten (identity)") == 1,
		 "the linked cubin is reported as built from rewritten PTX");
	GX_CHECK(cuModuleUnload(ml) == CUDA_SUCCESS && cuLinkDestroy(ls) == CUDA_SUCCESS, "cuLinkDestroy");

	/* The application's info log (issue 20, item 8): what the driver
	 * writes while it compiles our rewritten copy and links reaches the
	 * buffer the application gave cuLinkCreate. */
	char info[256] = "untouched";
	CUjit_option lo[3] = { CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_LOG_VERBOSE };
	void *lv[3] = { info, (void *)(uintptr_t)sizeof(info), (void *)(uintptr_t)1 };
	GX_CHECK(cuLinkCreate(3, lo, lv, &ls) == CUDA_SUCCESS &&
			 cuLinkAddData(ls, CU_JIT_INPUT_PTX, (void *)PTX80, sizeof(PTX80), "app.ptx", 0, NULL, NULL) ==
				 CUDA_SUCCESS &&
			 fake_last_link_data() != PTX80 && cuLinkComplete(ls, &cub, &sz) == CUDA_SUCCESS &&
			 !strcmp(info, "info : compiled app.ptx\ninfo : linked cubin\n"),
		 "cuLink of rewritten PTX: the driver's info log reaches the application's buffer");
	GX_CHECK(cuLinkDestroy(ls) == CUDA_SUCCESS, "cuLinkDestroy (info log)");
}

/* ---- per-context tables ---- */
static void test_contexts(void)
{
	CUcontext a, b;
	size_t c0n, m0, f0, c1n, m1, f1;
	table_counts(&c0n, &m0, &f0);
	GX_CHECK(cuCtxCreate(&a, NULL, 0, 0) == CUDA_SUCCESS, "context A on device 0");
	CUmodule ma;
	CUfunction fa2;
	GX_CHECK(cuModuleLoadData(&ma, PTX80) == CUDA_SUCCESS && cuModuleGetFunction(&fa2, ma, "kern_a") == CUDA_SUCCESS, "load in A");
	GX_CHECK(cuCtxCreate(&b, NULL, 0, 1) == CUDA_SUCCESS, "context B on device 1 (sm_80)");
	CUmodule mb, m9;
	CUfunction fb2;
	long m = log_mark();
	GX_CHECK(cuModuleLoadData(&mb, PTX80) == CUDA_SUCCESS && cuModuleGetFunction(&fb2, mb, "kern_a") == CUDA_SUCCESS &&
			 log_count(m, "reloaded from sm_80") == 1,
		 "load the same image in B");
	GX_CHECK(mb != ma && fb2 != fa2, "each context has its own rewritten module and function");
	m = log_mark();
	GX_CHECK(cuModuleLoadData(&m9, PTX90) == CUDA_ERROR_INVALID_PTX && log_count(m, "passed through: no usable code, no PTX for sm_80") == 1,
		 "sm_90-only PTX in an sm_80 context: passed through, the driver's error returned");
	table_counts(&c1n, &m1, &f1);
	GX_CHECK(c1n == c0n + 2 && m1 == m0 + 2 && f1 == f0 + 2, "tables keyed by context (%zu ctx, %zu mods, %zu funcs)", c1n, m1, f1);
	GX_CHECK(cuCtxDestroy(a) == CUDA_SUCCESS, "destroy A");
	table_counts(&c1n, &m1, &f1);
	GX_CHECK(c1n == c0n + 1 && m1 == m0 + 1 && f1 == f0 + 1, "destroying A drops A's records only");
	GX_CHECK(cuCtxDestroy(b) == CUDA_SUCCESS, "destroy B");
	table_counts(&c1n, &m1, &f1);
	GX_CHECK(c1n == c0n && m1 == m0 && f1 == f0, "and B's");
	cuCtxSetCurrent(c0);
}

/* ---- events ---- */
static int nr_launch_ev, nr_node_ev, nr_other_ev[GX_EV__COUNT];
static struct gx_launch_event last_ev;
static char last_name[128];
static CUfunction swap_to;
static unsigned swap_grid;
static CUresult veto_with;
static int enqueue_nested;

static CUresult on_event(struct gx_event *ev, void *cookie)
{
	(void)cookie;
	if (ev->kind == GX_EV_LAUNCH) {
		__atomic_add_fetch(&nr_launch_ev, 1, __ATOMIC_RELAXED);
		last_ev = ev->launch;
		snprintf(last_name, sizeof(last_name), "%s", ev->launch.name ? ev->launch.name : "(null)");
		if (swap_to)
			ev->launch.func = swap_to;
		if (swap_grid)
			ev->launch.grid[0] = swap_grid;
		if (enqueue_nested)
			cuLaunchKernel(fa, 1, 1, 1, 1, 1, 1, 0, ev->launch.stream, NULL, NULL);
		return veto_with;
	}
	if (ev->kind == GX_EV_GRAPH_KERNEL_NODE) {
		nr_node_ev++;
		if (swap_to)
			ev->graph.params.func = swap_to;
		return CUDA_SUCCESS;
	}
	nr_other_ev[ev->kind]++;
	return CUDA_SUCCESS;
}

static void test_events(void)
{
	GX_CHECK(gx_events_active() == 0, "no subscriber: events inactive");
	int id = gx_events_subscribe(GX_EV_ALL, on_event, NULL);
	GX_CHECK(id >= 0 && gx_events_active() == GX_EV_ALL, "subscribe");
	GX_CHECK(gx_events_subscribe(0, on_event, NULL) == -EINVAL && gx_events_subscribe(1u << 31, on_event, NULL) == -EINVAL,
		 "bad masks refused");
	void *params[1] = { NULL };
	CUstream s = (CUstream)(uintptr_t)0x5;
	long n0 = fake_last_launch().count;
	GX_CHECK(cuLaunchKernel(fa, 2, 3, 4, 32, 1, 1, 64, s, params, NULL) == CUDA_SUCCESS && nr_launch_ev == 1 &&
			 !strcmp(last_name, "kern_a") && last_ev.grid[1] == 3 && last_ev.block[0] == 32 &&
			 last_ev.shared_mem == 64 && last_ev.stream == s && last_ev.kernel_params == params &&
			 last_ev.api == GX_LAUNCH_KERNEL && !last_ev.is_kernel,
		 "launch event: name, geometry, stream, params (%s)", last_name);
	struct fake_launch fl = fake_last_launch();
	GX_CHECK(fl.count == n0 + 1 && fl.func == fa && fl.grid[2] == 4 && !strcmp(fl.api, "cuLaunchKernel"), "launch reached the driver");

	GX_CHECK(cuLaunchKernel((CUfunction)kb, 1, 1, 1, 1, 1, 1, 0, s, params, NULL) == CUDA_SUCCESS &&
			 !strcmp(last_name, "kern_b") && last_ev.is_kernel,
		 "launch with a CUkernel handle: named, marked as kernel");
	GX_CHECK(cuLaunchKernel(fkb, 1, 1, 1, 1, 1, 1, 0, s, params, NULL) == CUDA_SUCCESS && !strcmp(last_name, "kern_b"),
		 "launch with cuKernelGetFunction's function: named");

	swap_to = fkb;
	swap_grid = 99;
	cuLaunchKernel(fa, 2, 3, 4, 32, 1, 1, 0, s, params, NULL);
	fl = fake_last_launch();
	GX_CHECK(fl.func == fkb && fl.grid[0] == 99 && fl.grid[1] == 3, "a subscriber can substitute function and grid");
	swap_to = NULL;
	swap_grid = 0;

	n0 = fake_last_launch().count;
	veto_with = CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
	CUresult rc = cuLaunchKernel(fa, 1, 1, 1, 1, 1, 1, 0, s, params, NULL);
	veto_with = CUDA_SUCCESS;
	GX_CHECK(rc == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES && fake_last_launch().count == n0, "a subscriber can veto a launch");

	int ev0 = nr_launch_ev;
	enqueue_nested = 1;
	rc = cuLaunchKernel(fa, 1, 1, 1, 1, 1, 1, 0, s, params, NULL);
	enqueue_nested = 0;
	GX_CHECK(rc == CUDA_SUCCESS && fake_last_launch().count == n0 + 2 && nr_launch_ev == ev0 + 1,
		 "work enqueued from a callback launches without a nested event");

	/* Every launch entry point, including those cudart gets with flags=2. */
	void *p = NULL;
	cuGetProcAddress_v2("cuLaunchKernel", &p, 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, NULL);
	ev0 = nr_launch_ev;
	rc = ((CUresult(*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
			   void **, void **))p)(fa, 5, 1, 1, 1, 1, 1, 0, s, params, NULL);
	GX_CHECK(rc == CUDA_SUCCESS && nr_launch_ev == ev0 + 1 && !strcmp(fake_last_launch().api, "cuLaunchKernel_ptsz") &&
			 fake_last_launch().grid[0] == 5,
		 "cuLaunchKernel_ptsz raises the event and reaches the _ptsz entry");
	CUlaunchConfig cfg = { 0 };
	cfg.gridDimX = 6, cfg.gridDimY = 1, cfg.gridDimZ = 1, cfg.blockDimX = 64, cfg.blockDimY = 1, cfg.blockDimZ = 1;
	cfg.hStream = s;
	swap_grid = 77;
	rc = cuLaunchKernelEx(&cfg, fa, params, NULL);
	swap_grid = 0;
	GX_CHECK(rc == CUDA_SUCCESS && last_ev.api == GX_LAUNCH_KERNEL_EX && last_ev.grid[0] == 6 && last_ev.block[0] == 64 &&
			 fake_last_launch().grid[0] == 77 && cfg.gridDimX == 6,
		 "cuLaunchKernelEx: event from the config, edits applied to a copy");
	void *exp = NULL, *cop = NULL;
	cuGetProcAddress_v2("cuLaunchKernelEx", &exp, 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, NULL);
	cuGetProcAddress_v2("cuLaunchCooperativeKernel", &cop, 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, NULL);
	ev0 = nr_launch_ev;
	rc = ((CUresult(*)(const CUlaunchConfig *, CUfunction, void **, void **))exp)(&cfg, fa, params, NULL);
	GX_CHECK(exp == dlsym(shim, "cuLaunchKernelEx_ptsz") && rc == CUDA_SUCCESS && nr_launch_ev == ev0 + 1 &&
			 !strcmp(fake_last_launch().api, "cuLaunchKernelEx_ptsz"),
		 "cuLaunchKernelEx_ptsz: event, and the driver's _ptsz entry");
	rc = ((CUresult(*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
			   void **))cop)(fa, 3, 1, 1, 1, 1, 1, 0, s, params);
	GX_CHECK(cop == dlsym(shim, "cuLaunchCooperativeKernel_ptsz") && rc == CUDA_SUCCESS && nr_launch_ev == ev0 + 2 &&
			 !strcmp(fake_last_launch().api, "cuLaunchCooperativeKernel_ptsz") && fake_last_launch().grid[0] == 3,
		 "cuLaunchCooperativeKernel_ptsz: event, and the driver's _ptsz entry");
	rc = cuLaunchCooperativeKernel(fa, 8, 1, 1, 1, 1, 1, 0, s, params);
	GX_CHECK(rc == CUDA_SUCCESS && last_ev.api == GX_LAUNCH_COOPERATIVE && !strcmp(fake_last_launch().api, "cuLaunchCooperativeKernel"),
		 "cuLaunchCooperativeKernel");

	/* Graph kernel nodes. */
	CUgraphNode node;
	CUDA_KERNEL_NODE_PARAMS np = { 0 };
	np.func = fa;
	np.gridDimX = np.gridDimY = np.gridDimZ = np.blockDimX = np.blockDimY = np.blockDimZ = 1;
	swap_to = fkb;
	GX_CHECK(cuGraphAddKernelNode(&node, NULL, NULL, 0, &np) == CUDA_SUCCESS && fake_last_node_func() == fkb && np.func == fa,
		 "cuGraphAddKernelNode_v2: node params substituted (caller's struct untouched)");
	void *legacy = NULL;
	cuGetProcAddress_v2("cuGraphAddKernelNode", &legacy, 11000, 0, NULL);
	CUDA_KERNEL_NODE_PARAMS_v1 np1 = { 0 };
	np1.func = fa;
	GX_CHECK(legacy == dlsym(shim, "cuGraphAddKernelNode") &&
			 ((CUresult(*)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, const CUDA_KERNEL_NODE_PARAMS_v1 *))legacy)(
				 &node, NULL, NULL, 0, &np1) == CUDA_SUCCESS &&
			 fake_last_node_func() == fkb,
		 "legacy cuGraphAddKernelNode (v1 params) substituted");
	GX_CHECK(cuGraphKernelNodeSetParams(node, &np) == CUDA_SUCCESS && fake_last_node_func() == fkb, "cuGraphKernelNodeSetParams_v2");
	CUgraphNodeParams gp;
	memset(&gp, 0, sizeof(gp));
	gp.type = CU_GRAPH_NODE_TYPE_KERNEL;
	gp.kernel.func = fa;
	GX_CHECK(cuGraphAddNode(&node, NULL, NULL, NULL, 0, &gp) == CUDA_SUCCESS && fake_last_node_func() == fkb && gp.kernel.func == fa,
		 "cuGraphAddNode_v2 with a kernel node: substituted (caller's struct untouched)");
	GX_CHECK(cuGraphExecKernelNodeSetParams((CUgraphExec)(uintptr_t)1, node, &np) == CUDA_SUCCESS && fake_last_node_func() == fkb,
		 "cuGraphExecKernelNodeSetParams_v2");
	swap_to = NULL;

	/* Memory and streams. */
	CUdeviceptr d;
	GX_CHECK(cuMemAllocManaged(&d, 4096, CU_MEM_ATTACH_GLOBAL) == CUDA_SUCCESS && nr_other_ev[GX_EV_MEM_ALLOC_MANAGED] == 1,
		 "managed allocation event");
	CUmemLocation loc = { CU_MEM_LOCATION_TYPE_DEVICE, 0 };
	GX_CHECK(cuMemPrefetchAsync(d, 4096, loc, 0, s) == CUDA_SUCCESS && nr_other_ev[GX_EV_MEM_PREFETCH] == 1, "prefetch event");
	GX_CHECK(cuMemAdvise(d, 4096, CU_MEM_ADVISE_SET_READ_MOSTLY, loc) == CUDA_SUCCESS && nr_other_ev[GX_EV_MEM_ADVISE] == 1,
		 "advise event");
	GX_CHECK(cuMemFree(d) == CUDA_SUCCESS && nr_other_ev[GX_EV_MEM_FREE] == 1, "free event");
	CUstream st;
	GX_CHECK(cuStreamCreate(&st, 0) == CUDA_SUCCESS && nr_other_ev[GX_EV_STREAM_CREATE] == 1 &&
			 cuStreamDestroy(st) == CUDA_SUCCESS && nr_other_ev[GX_EV_STREAM_DESTROY] == 1,
		 "stream create/destroy events");
	GX_CHECK(cuCtxSynchronize() == CUDA_SUCCESS && nr_other_ev[GX_EV_SYNC] == 1, "sync event");
	CUmodule mm;
	GX_CHECK(cuModuleLoadData(&mm, PTX80) == CUDA_SUCCESS && nr_other_ev[GX_EV_MODULE_LOAD] == 1 &&
			 cuModuleUnload(mm) == CUDA_SUCCESS && nr_other_ev[GX_EV_MODULE_UNLOAD] == 1,
		 "module load/unload events");

	GX_CHECK(gx_events_unsubscribe(id) == 0 && gx_events_active() == 0 && gx_events_unsubscribe(id) == -ENOENT, "unsubscribe");
	ev0 = nr_launch_ev;
	cuLaunchKernel(fa, 1, 1, 1, 1, 1, 1, 0, s, params, NULL);
	GX_CHECK(nr_launch_ev == ev0, "no events after unsubscribe");
	/* The fast path of every variant reaches the matching driver entry. */
	static const char *const vars[] = { "cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx", "cuLaunchKernelEx_ptsz",
					     "cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel_ptsz" };
	int badv = 0;
	for (int i = 0; i < 6; i++) {
		void *fp = dlsym(shim, vars[i]);
		if (strstr(vars[i], "Ex"))
			rc = ((CUresult(*)(const CUlaunchConfig *, CUfunction, void **, void **))fp)(&cfg, fa, params, NULL);
		else
			rc = ((CUresult(*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
					   CUstream, void **, void **))fp)(fa, 4, 5, 6, 7, 1, 1, 0, s, params, NULL);
		if (rc != CUDA_SUCCESS || strcmp(fake_last_launch().api, vars[i]))
			badv++, printf("# %s reached %s\n", vars[i], fake_last_launch().api);
	}
	GX_CHECK(!badv && nr_launch_ev == ev0, "no subscriber: all 6 launch entry points reach their own driver entry, no event");
}

/* ---- threads and fork ---- */
#define NTHREADS 16
#define NLAUNCH 2000
static int count_only_launches;
static CUresult count_launch(struct gx_event *ev, void *cookie)
{
	(void)ev, (void)cookie;
	__atomic_add_fetch(&count_only_launches, 1, __ATOMIC_RELAXED);
	return CUDA_SUCCESS;
}

static void *launcher(void *arg)
{
	(void)arg;
	cuCtxSetCurrent(c0);
	for (int i = 0; i < NLAUNCH; i++)
		if (cuLaunchKernel(fa, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) != CUDA_SUCCESS)
			return (void *)1;
	return NULL;
}

/* GX_EV_F_DONE_ASKED: LAUNCH_DONE only after the launches its subscriber
 * marked in done_for; a plain LAUNCH_DONE subscriber still gets every one. */
static int asked_id = -1, ask_next, nr_asked_done, nr_all_done, done_has_field;
static CUresult on_asked(struct gx_event *ev, void *cookie)
{
	(void)cookie;
	if (ev->kind == GX_EV_LAUNCH) {
		done_has_field = GX_EV_HAS(ev, launch.done_for) && ev->launch.done_for == 0;
		if (ask_next && asked_id >= 0)
			ev->launch.done_for |= 1u << asked_id;
	} else if (ev->kind == GX_EV_LAUNCH_DONE) {
		nr_asked_done++;
	}
	return CUDA_SUCCESS;
}
static CUresult on_all_done(struct gx_event *ev, void *cookie)
{
	(void)cookie;
	nr_all_done += ev->kind == GX_EV_LAUNCH_DONE;
	return CUDA_SUCCESS;
}

static void test_done_asked(void)
{
	unsigned both = GX_EV_MASK(GX_EV_LAUNCH) | GX_EV_MASK(GX_EV_LAUNCH_DONE);
	GX_CHECK(gx_events_subscribe(GX_EV_MASK(GX_EV_LAUNCH_DONE) | GX_EV_F_DONE_ASKED, on_asked, NULL) == -EINVAL,
		 "GX_EV_F_DONE_ASKED without GX_EV_LAUNCH refused");
	asked_id = gx_events_subscribe(both | GX_EV_F_DONE_ASKED, on_asked, NULL);
	GX_CHECK(asked_id >= 0 && gx_events_active() == both, "asked LAUNCH_DONE: subscribed, reported active");
	void *params[1] = { NULL };
	CUstream s = (CUstream)(uintptr_t)0x5;
	for (int i = 0; i < 6; i++) {
		ask_next = i % 3 == 0;
		cuLaunchKernel(fa, 1, 1, 1, 1, 1, 1, 0, s, params, NULL);
	}
	CUlaunchConfig cfg = { 0 };
	cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = cfg.blockDimX = cfg.blockDimY = cfg.blockDimZ = 1;
	ask_next = 1;
	cuLaunchKernelEx(&cfg, fa, params, NULL);
	GX_CHECK(nr_asked_done == 3 && done_has_field, "LAUNCH_DONE only for the 3 launches asked about (%d)", nr_asked_done);
	int all = gx_events_subscribe(GX_EV_MASK(GX_EV_LAUNCH_DONE), on_all_done, NULL);
	ask_next = 0;
	for (int i = 0; i < 4; i++)
		cuLaunchKernel(fa, 1, 1, 1, 1, 1, 1, 0, s, params, NULL);
	GX_CHECK(all >= 0 && nr_all_done == 4 && nr_asked_done == 3,
		 "a plain LAUNCH_DONE subscriber gets every launch, the asking one still none (%d, %d)", nr_all_done,
		 nr_asked_done);
	GX_CHECK(gx_events_unsubscribe(all) == 0 && gx_events_unsubscribe(asked_id) == 0 && gx_events_active() == 0,
		 "asked and plain subscribers unsubscribed");
}

static void test_threads(void)
{
	for (int phase = 0; phase < 2; phase++) {
		int id = phase ? gx_events_subscribe(GX_EV_MASK(GX_EV_LAUNCH), count_launch, NULL) : -1;
		long n0 = fake_last_launch().count;
		pthread_t t[NTHREADS];
		int fails = 0;
		for (int i = 0; i < NTHREADS; i++)
			pthread_create(&t[i], NULL, launcher, NULL);
		for (int i = 0; i < NTHREADS; i++) {
			void *r;
			pthread_join(t[i], &r);
			fails += r != NULL;
		}
		GX_CHECK(!fails && fake_last_launch().count == n0 + NTHREADS * NLAUNCH &&
				 (!phase || count_only_launches == NTHREADS * NLAUNCH),
			 "%d threads x %d launches %s", NTHREADS, NLAUNCH, phase ? "with a subscriber" : "without subscriber");
		if (id >= 0)
			gx_events_unsubscribe(id);
	}
}

static volatile int stop_loader;
static void *loader(void *arg)
{
	(void)arg;
	cuCtxSetCurrent(c0);
	while (!stop_loader) {
		CUmodule m;
		CUfunction f;
		if (cuModuleLoadData(&m, PTX80) == CUDA_SUCCESS) {
			cuModuleGetFunction(&f, m, "kern_b");
			cuModuleUnload(m);
		}
	}
	return NULL;
}

static void test_fork(void)
{
	pthread_t t;
	pthread_create(&t, NULL, loader, NULL);
	int bad = 0;
	for (int i = 0; i < 20; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			alarm(10);
			cuCtxSetCurrent(c0);
			CUmodule m;
			CUfunction f;
			int ok = cuModuleLoadData(&m, PTX80) == CUDA_SUCCESS && cuModuleGetFunction(&f, m, "kern_a") == CUDA_SUCCESS &&
				 cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) == CUDA_SUCCESS &&
				 cuModuleUnload(m) == CUDA_SUCCESS;
			_exit(ok ? 0 : 1);
		}
		int st = 0;
		waitpid(pid, &st, 0);
		if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0) && bad++ < 3)
			printf("# child %d: status %#x\n", i, st);
	}
	stop_loader = 1;
	pthread_join(t, NULL);
	GX_CHECK(!bad, "fork while another thread loads modules: 20 children load, launch, unload (%d failed)", bad);
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: test_shim CUBIN PTXFILE FATBIN [quick]\n");
		return 2;
	}
	log_capture();
	bool quick = argc > 4;
	test_forwarding();
	test_dlsym();
	if (!quick)
		test_procaddr();
	test_modules(argv[1], argv[2]);
	test_fatbin(argv[3]);
	test_bomb();
	test_contexts();
	test_events();
	test_done_asked();
	if (!quick) {
		test_threads();
		test_fork();
	}
	cuLibraryUnload(lib);
	CUdevice dev0 = 0;
	GX_CHECK(cuDevicePrimaryCtxRelease(dev0) == CUDA_SUCCESS, "primary context released");
	return gx_test_done();
}
