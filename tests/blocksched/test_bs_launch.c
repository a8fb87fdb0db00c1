/* test_persist.c — GPUEXT_PERSISTENT launches through the shim, against the
 * fake driver (tests/shim/fakecuda): run by tests/shim/run.sh with
 * GPUEXT_PERSISTENT=<argv[1]> (dynamic or static). Checks that a kernel the
 * transform accepts is launched as its copy with the work descriptor
 * appended and written on the launch's stream, that the grid is occupancy x
 * SMs capped at the original block count, and that refused kernels and the
 * launches the shim cannot vouch for run the original kernel. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuext/gx_work.h"
#include "tests/gx_test.h"
#include "tests/shim/stderr_log.h"

/* k_ok reads %ctaid (accepted); k_cluster uses cluster ids (refused). */
static const char PTX[] = ".version 8.0\n.target sm_80\n.address_size 64\n"
			  ".visible .entry k_ok(.param .u64 p, .param .u32 n)\n{\n"
			  "\t.reg .b32 %r<3>;\n\t.reg .b64 %rd<3>;\n"
			  "\tld.param.u64 %rd1, [p];\n\tmov.u32 %r1, %ctaid.x;\n"
			  "\tmul.wide.u32 %rd2, %r1, 4;\n\tadd.s64 %rd1, %rd1, %rd2;\n"
			  "\tst.global.u32 [%rd1], %r1;\n\tret;\n}\n"
			  ".visible .entry k_cluster()\n{\n\t.reg .b32 %r<2>;\n"
			  "\tmov.u32 %r1, %clusterid.x;\n\tret;\n}\n";

/* The per-thread-stream form, declared by cuda.h only for the driver itself. */
CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
			     unsigned bz, unsigned sh, CUstream s, void **p, void **e);

struct fake_launch {
	const char *api;
	void *func;
	unsigned grid[3], block[3], shmem;
	void *stream;
	void **params;
	long count;
};
static struct fake_launch (*last)(void);
static long (*count)(const char *);
static void (*set_occ)(int);
static void *(*memcpy_stream)(void);

static int log_has(const char *s)
{
	return log_count(0, s) > 0;
}

/* The descriptor a launch of the copy got (NULL if the original ran: its
 * argument array has no such slot). */
static const struct gx_work_desc *desc_of(const struct fake_launch *l, void *orig, unsigned nparams)
{
	if (l->func == orig || !l->params || !l->params[nparams - 1])
		return NULL;
	CUdeviceptr d = *(CUdeviceptr *)l->params[nparams - 1];
	return (const struct gx_work_desc *)(uintptr_t)d;
}

int main(int argc, char **argv)
{
	unsigned want_mode = argc > 1 && !strcmp(argv[1], "static") ? GX_WORK_STATIC : GX_WORK_DYNAMIC;
	log_capture();

	CUcontext ctx;
	CUmodule mod;
	CUfunction ok, cl;
	GX_CHECK(cuInit(0) == CUDA_SUCCESS && cuCtxCreate(&ctx, NULL, 0, 0) == CUDA_SUCCESS, "persistent: context");
	void *fake = dlopen(getenv("GPUEXT_REAL_LIBCUDA"), RTLD_NOW | RTLD_NOLOAD);
	if (!fake) {
		printf("not ok - persistent: fake driver loaded by the shim\n");
		return 1;
	}
	*(void **)&last = dlsym(fake, "fake_last_launch");
	*(void **)&count = dlsym(fake, "fake_count");
	*(void **)&set_occ = dlsym(fake, "fake_set_occupancy");
	*(void **)&memcpy_stream = dlsym(fake, "fake_last_memcpy_stream");
	GX_CHECK(cuModuleLoadData(&mod, PTX) == CUDA_SUCCESS, "persistent: module loads");
	GX_CHECK(log_has("1 persistent copies"), "persistent: the load line counts one persistent copy");
	GX_CHECK(cuModuleGetFunction(&ok, mod, "k_ok") == CUDA_SUCCESS &&
			 cuModuleGetFunction(&cl, mod, "k_cluster") == CUDA_SUCCESS,
		 "persistent: the application's kernels keep their names");

	/* An accepted kernel: 10x2 blocks, 3 per SM x 1 SM (the fake's) = 3 workers. */
	CUdeviceptr buf = 0x1000;
	unsigned n = 7;
	void *args[] = { &buf, &n };
	long cp0 = count("cuMemcpyHtoDAsync_v2");
	GX_CHECK(cuLaunchKernel(ok, 10, 2, 1, 128, 1, 1, 0, NULL, args, NULL) == CUDA_SUCCESS,
		 "persistent: launch succeeds");
	struct fake_launch l = last();
	const struct gx_work_desc *d = desc_of(&l, ok, 3);
	GX_CHECK(l.func != (void *)ok, "persistent: the copy is launched, not the original");
	GX_CHECK(l.grid[0] == 3 && l.grid[1] == 1 && l.grid[2] == 1 && l.block[0] == 128,
		 "persistent: grid = occupancy x SMs as 1-D (%u,%u,%u), block kept", l.grid[0], l.grid[1], l.grid[2]);
	GX_CHECK(l.params && l.params[0] == &buf && l.params[1] == &n,
		 "persistent: the application's arguments come first, unchanged");
	GX_CHECK(d && d->total == 20 && d->grid_x == 10 && d->grid_y == 2 && d->grid_z == 1 && d->next == 0 &&
			 d->mode == want_mode,
		 "persistent: descriptor appended: total 20, grid 10x2x1, next 0, mode %u", want_mode);
	GX_CHECK(count("cuMemcpyHtoDAsync_v2") == cp0 + 1 && memcpy_stream() == NULL,
		 "persistent: descriptor written once, on the launch's stream");
	GX_CHECK(log_has("persistent: k_ok: launched as __gx_pw_k_ok, 3 workers"), "persistent: first launch logged");

	/* Small grid: capped at the original block count (8 per SM here). */
	set_occ(8);
	cuLaunchKernel(ok, 5, 1, 1, 64, 1, 1, 0, NULL, args, NULL);
	l = last();
	GX_CHECK(l.grid[0] == 5, "persistent: workers capped at the original 5 blocks (%u)", l.grid[0]);
	cuLaunchKernel(ok, 50, 1, 1, 64, 1, 1, 0, NULL, args, NULL);
	GX_CHECK(last().grid[0] == 8, "persistent: 50 blocks: 8 per SM x 1 SM = 8 workers (%u)", last().grid[0]);
	set_occ(3);
	const struct gx_work_desc *dn = desc_of(&l, ok, 3);
	CUdeviceptr d_null = (CUdeviceptr)(uintptr_t)dn;

	/* One descriptor per stream; the same stream reuses its own. */
	CUstream s1, s2;
	cuStreamCreate(&s1, 0);
	cuStreamCreate(&s2, 0);
	cuLaunchKernel(ok, 4, 1, 1, 32, 1, 1, 0, s1, args, NULL);
	l = last();
	CUdeviceptr d1 = (CUdeviceptr)(uintptr_t)desc_of(&l, ok, 3);
	GX_CHECK(memcpy_stream() == s1, "persistent: descriptor copy on the launch's stream s1");
	cuLaunchKernel(ok, 4, 1, 1, 32, 1, 1, 0, s2, args, NULL);
	l = last();
	CUdeviceptr d2 = (CUdeviceptr)(uintptr_t)desc_of(&l, ok, 3);
	cuLaunchKernel(ok, 4, 1, 1, 32, 1, 1, 0, s1, args, NULL);
	l = last();
	CUdeviceptr d1b = (CUdeviceptr)(uintptr_t)desc_of(&l, ok, 3);
	GX_CHECK(d1 && d2 && d1 != d2 && d1 != d_null && d1 == d1b,
		 "persistent: one descriptor per stream, reused on the same stream");

	/* Per-thread default stream (_ptsz with NULL). */
	cuLaunchKernel_ptsz(ok, 4, 1, 1, 32, 1, 1, 0, NULL, args, NULL);
	GX_CHECK(last().func != (void *)ok && memcpy_stream() == CU_STREAM_PER_THREAD,
		 "persistent: _ptsz launch: descriptor copied on the per-thread stream");

	/* cuLaunchKernelEx: plain config is launched persistent, a cluster one is not. */
	CUlaunchConfig cfg = { .gridDimX = 6, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 32, .blockDimY = 1,
			       .blockDimZ = 1 };
	GX_CHECK(cuLaunchKernelEx(&cfg, ok, args, NULL) == CUDA_SUCCESS && last().func != (void *)ok &&
			 last().grid[0] == 3,
		 "persistent: cuLaunchKernelEx launches the copy");
	CUlaunchAttribute at = { .id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION };
	at.value.clusterDim.x = 2, at.value.clusterDim.y = 1, at.value.clusterDim.z = 1;
	cfg.attrs = &at;
	cfg.numAttrs = 1;
	cuLaunchKernelEx(&cfg, ok, args, NULL);
	l = last();
	GX_CHECK(l.func == (void *)ok && l.grid[0] == 6 && log_has("cluster, cooperative or other attributes"),
		 "persistent: cuLaunchKernelEx with a cluster attribute runs the original (logged)");

	/* Fallbacks. */
	cuLaunchCooperativeKernel(ok, 3, 1, 1, 32, 1, 1, 0, NULL, args);
	GX_CHECK(last().func == (void *)ok && last().grid[0] == 3 && log_has("cooperative launches run the original"),
		 "persistent: cooperative launch runs the original (logged)");
	cuLaunchKernel(cl, 9, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
	GX_CHECK(last().func == (void *)cl && last().grid[0] == 9, "persistent: a refused kernel runs unchanged");
	cuLaunchKernel(ok, 8, 1, 1, 32, 1, 1, 0, (CUstream)(uintptr_t)0xC0DE, args, NULL);
	GX_CHECK(last().func == (void *)ok && last().grid[0] == 8 && log_has("stream being captured"),
		 "persistent: a launch into a capturing stream runs the original (logged)");
	void *extra[] = { CU_LAUNCH_PARAM_END };
	cuLaunchKernel(ok, 8, 1, 1, 32, 1, 1, 0, NULL, NULL, extra);
	GX_CHECK(last().func == (void *)ok && log_has("through `extra`"),
		 "persistent: parameters through extra: the original (logged)");
	set_occ(0);
	cuLaunchKernel(ok, 8, 1, 1, 1024, 1, 1, 0, NULL, args, NULL);
	GX_CHECK(last().func == (void *)ok && log_has("no block per SM"),
		 "persistent: zero occupancy: the original (logged)");
	set_occ(3);
	CUDA_KERNEL_NODE_PARAMS np = { .func = ok, .gridDimX = 2, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 32,
				       .blockDimY = 1, .blockDimZ = 1, .kernelParams = args };
	CUgraphNode node;
	cuGraphAddKernelNode(&node, (CUgraph)(uintptr_t)0x10, NULL, 0, &np);
	GX_CHECK(log_has("graph kernel nodes run the original"), "persistent: graph kernel nodes: the original (logged)");

	/* Libraries: launched with the CUkernel handle. */
	CUlibrary lib;
	CUkernel kk;
	GX_CHECK(cuLibraryLoadData(&lib, PTX, NULL, NULL, 0, NULL, NULL, 0) == CUDA_SUCCESS &&
			 cuLibraryGetKernel(&kk, lib, "k_ok") == CUDA_SUCCESS,
		 "persistent: library loads");
	cuLaunchKernel((CUfunction)kk, 10, 1, 1, 32, 1, 1, 0, NULL, args, NULL);
	l = last();
	d = desc_of(&l, kk, 3);
	GX_CHECK(l.func != (void *)kk && l.grid[0] == 3 && d && d->total == 10,
		 "persistent: a library kernel (CUkernel handle) launches its copy");

	/* Unload: the records go, a later launch of a stale handle is not swapped. */
	GX_CHECK(cuLibraryUnload(lib) == CUDA_SUCCESS && cuModuleUnload(mod) == CUDA_SUCCESS, "persistent: unloads");
	cuStreamDestroy(s1);
	cuStreamDestroy(s2);
	GX_CHECK(cuCtxDestroy(ctx) == CUDA_SUCCESS, "persistent: context destroyed");
	return gx_test_done();
}
