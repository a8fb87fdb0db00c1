/* probe_ab — on a GPU: what each part of a block probe costs a short
 * barrier kernel (issue 40: threadhist +17.8 % on CuPy's shared-memory
 * stencil, +13 % on its ReductionKernel, where the kernels without barriers
 * pay ~2 %).
 *
 * Loads every DIR/NAME.ptx (bench/probe_ab.sh makes them: the kernels of
 * bench/probe_ab_kernels.cu natively and rewritten under threadhist, then
 * edited one part at a time: no counters, one counter, plain stores, no
 * special registers, another warp), JIT-loads each through the driver (so
 * `nat` is JIT'd from PTX as the rewritten ones are), gives the ones whose
 * name starts with `th` a threadhist map in __gx_devrt, and times each
 * kernel with CUDA events: LAUNCHES launches per pair, REPS rounds, the
 * variants interleaved within each round. nat and th_exit also as
 * `_link`: compiled through cuLinkAddData/cuLinkComplete as the shim's
 * cubin route compiles a rewritten module (relocatable code), not loaded
 * whole (run 90's route row: rowsoftmax +12.3 % with no probe), and as
 * `_linknopic`: the same with CU_JIT_POSITION_INDEPENDENT_CODE=0. Prints the median µs per launch,
 * the % over `nat`, registers, and whether the output equals nat's.
 *
 *   probe_ab DIR [REPS [LAUNCHES]]
 * No shim: the figures are the instrumented code's own cost. */
#include <cuda.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/gx_cu_check.h"
#include "common/gx_util.h"
#include "gpuext/gx_devrt.h"

#define CK(x) GX_CU_TAP("probe_ab", x)
#define MAXV  48
#define N     (1 << 22)

struct kern {
	const char *name, *label;
	unsigned elems_per_block; /* grid = N / this */
	unsigned threads;
	int n; /* the third argument: N, or rowsoftmax's columns */
	size_t out_elems;
};
/* rowsoftmax: tool_bench's, 4,096 rows of 1,000 columns, 4 warps a row */
/* blockred1: the block reduction as one block (the second kernel of
 * CuPy's two-pass ReductionKernel is one block): its warp 0's exit is the
 * kernel's end */
static const struct kern kerns[] = { { "stencil3", "stencil3", 256, 256, N, N },
				     { "blockred", "blockred", 1024, 256, N, N / 1024 },
				     { "blockred", "blockred1", N, 256, N, 1 },
				     { "_Z10rowsoftmaxPKfPfi", "rowsoftmax", 1024, 128, 1000, 4096 * 1000 } };
#define NK (sizeof(kerns) / sizeof(kerns[0]))

struct variant {
	char name[64];
	CUmodule mod;
	CUfunction fn[NK];
	int regs[NK];
	float *us[NK]; /* per round */
	int same[NK];
};

static int cmp_f(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return x < y ? -1 : x > y;
}

static int by_name(const void *a, const void *b)
{
	const struct variant *x = a, *y = b;
	/* nat first: the baseline */
	int xn = !strcmp(x->name, "nat"), yn = !strcmp(y->name, "nat");
	return xn != yn ? yn - xn : strcmp(x->name, y->name);
}

/* Map 0 of the module's __gx_devrt as the shim sets it, its storage
 * allocated and zeroed here */
static void set_devrt_map(CUmodule mod, struct gx_devrt_map m)
{
	CUdeviceptr sym;
	size_t len;
	if (cuModuleGetGlobal(&sym, &len, mod, GDEV_DEVRT_SYMBOL) != CUDA_SUCCESS)
		return;
	CK(cuMemAlloc(&m.data, m.data_size));
	CK(cuMemsetD8(m.data, 0, m.data_size));
	struct gx_devrt rt = { .magic = GX_DEVRT_MAGIC, .version = GX_DEVRT_VERSION, .nr_maps = 1 };
	rt.maps[0] = m;
	CK(cuMemcpyHtoD(sym, &rt, len < sizeof(rt) ? len : sizeof(rt)));
}

/* threadhist's per-warp-slot counters */
static void set_devrt(CUmodule mod, int nsm)
{
	size_t shards = (size_t)nsm * GX_WARP_SLOTS_PER_SM;
	set_devrt_map(mod, (struct gx_devrt_map){ .type = GX_MAP_PERWARP_ARRAY,
						  .key_size = 4,
						  .value_size = 24,
						  .max_entries = 1,
						  .value_stride = 24,
						  .nr_shards = (gdev_u32)shards,
						  .data_size = shards * 24 });
}

/* kernelretsnoop's record table (tools/tools_common.h's geometry: 65,536
 * slots of 56 bytes) */
static void set_devrt_krs(CUmodule mod)
{
	set_devrt_map(mod, (struct gx_devrt_map){ .type = GX_MAP_ARRAY,
						  .key_size = 4,
						  .value_size = 56,
						  .max_entries = 65536,
						  .value_stride = 56,
						  .data_size = (size_t)65536 * 56 });
}

/* The module as the shim's cubin route makes it (shim/cubin.c): the PTX
 * compiled by the driver's linker, the cubin loaded. */
static CUresult load_linked(CUmodule *mod, const char *ptx, size_t len, int nopic)
{
	CUlinkState st;
	void *cubin;
	size_t clen;
	CUjit_option o = CU_JIT_POSITION_INDEPENDENT_CODE;
	void *ov = (void *)(uintptr_t)0;
	CUresult r = cuLinkCreate(nopic ? 1 : 0, nopic ? &o : NULL, nopic ? &ov : NULL, &st);
	if (r != CUDA_SUCCESS)
		return r;
	r = cuLinkAddData(st, CU_JIT_INPUT_PTX, (void *)ptx, len + 1, "probe_ab", 0, NULL, NULL);
	if (r == CUDA_SUCCESS)
		r = cuLinkComplete(st, &cubin, &clen);
	if (r == CUDA_SUCCESS)
		r = cuModuleLoadData(mod, cubin);
	cuLinkDestroy(st);
	return r;
}

static int load_variants(const char *dir, struct variant *v, int nsm)
{
	DIR *d = opendir(dir);
	if (!d) {
		perror(dir);
		return -1;
	}
	int nv = 0;
	struct dirent *e;
	while ((e = readdir(d)) && nv < MAXV) {
		size_t l = strlen(e->d_name);
		if (l < 5 || l > 60 || strcmp(e->d_name + l - 4, ".ptx"))
			continue;
		char path[4096], *ptx;
		size_t plen;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (gx_read_file(path, &ptx, &plen, 0))
			continue;
		struct variant *x = &v[nv];
		memset(x, 0, sizeof(*x));
		snprintf(x->name, sizeof(x->name), "%.*s", (int)(l - 4), e->d_name);
		char log[8192] = "";
		CUjit_option o[] = { CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES };
		void *ov[] = { log, (void *)(size_t)sizeof(log) };
		CUresult r = cuModuleLoadDataEx(&x->mod, ptx, 2, o, ov);
		if (r != CUDA_SUCCESS) {
			printf("not ok - probe_ab: %s does not load (%d): %s\n", x->name, r, log);
			free(ptx);
			continue;
		}
		for (unsigned k = 0; k < NK; k++) {
			CK(cuModuleGetFunction(&x->fn[k], x->mod, kerns[k].name));
			CK(cuFuncGetAttribute(&x->regs[k], CU_FUNC_ATTRIBUTE_NUM_REGS, x->fn[k]));
		}
		if (!strncmp(x->name, "th", 2))
			set_devrt(x->mod, nsm);
		if (!strncmp(x->name, "krs", 3))
			set_devrt_krs(x->mod);
		nv++;
		for (int nopic = 0; nopic < 2 && (!strcmp(x->name, "nat") || !strcmp(x->name, "th_exit")) && nv < MAXV;
		     nopic++) {
			struct variant *y = &v[nv];
			char base[16];
			memset(y, 0, sizeof(*y));
			snprintf(base, sizeof(base), "%.8s", x->name);
			snprintf(y->name, sizeof(y->name), "%s_link%s", base, nopic ? "nopic" : "");
			if (load_linked(&y->mod, ptx, plen, nopic) != CUDA_SUCCESS) {
				printf("not ok - probe_ab: %s does not link\n", y->name);
				continue;
			}
			for (unsigned k = 0; k < NK; k++) {
				CK(cuModuleGetFunction(&y->fn[k], y->mod, kerns[k].name));
				CK(cuFuncGetAttribute(&y->regs[k], CU_FUNC_ATTRIBUTE_NUM_REGS, y->fn[k]));
			}
			if (y->name[0] == 't')
				set_devrt(y->mod, nsm);
			nv++;
		}
		free(ptx);
	}
	closedir(d);
	qsort(v, nv, sizeof(*v), by_name);
	return nv;
}

static void launch(CUfunction f, const struct kern *k, CUdeviceptr x, CUdeviceptr y)
{
	int n = k->n;
	void *args[] = { &x, &y, &n };
	CK(cuLaunchKernel(f, N / k->elems_per_block, 1, 1, k->threads, 1, 1, 0, 0, args, NULL));
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: probe_ab DIR [REPS [LAUNCHES]]\n");
		return 2;
	}
	int reps = argc > 2 ? atoi(argv[2]) : 21, launches = argc > 3 ? atoi(argv[3]) : 50;
	CUdevice dev = gx_cu_primary_ctx("probe_ab");
	int nsm;
	CK(cuDeviceGetAttribute(&nsm, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
	static struct variant v[MAXV];
	int nv = load_variants(argv[1], v, nsm);
	if (nv < 2 || strcmp(v[0].name, "nat")) {
		printf("not ok - probe_ab: need nat.ptx and at least one variant in %s\n", argv[1]);
		return 1;
	}
	/* inputs: a fixed pattern (no RNG on the device needed) */
	float *hx = malloc(N * sizeof(float)), *ref = malloc(N * sizeof(float)), *got = malloc(N * sizeof(float));
	for (int i = 0; i < N; i++)
		hx[i] = (float)((i * 2654435761u) >> 20) / 4096.f - 0.5f;
	CUdeviceptr x, y;
	CK(cuMemAlloc(&x, N * sizeof(float)));
	CK(cuMemAlloc(&y, N * sizeof(float)));
	CK(cuMemcpyHtoD(x, hx, N * sizeof(float)));
	for (unsigned k = 0; k < NK; k++)
		for (int i = 0; i < nv; i++) {
			CK(cuMemsetD8(y, 0, N * sizeof(float)));
			launch(v[i].fn[k], &kerns[k], x, y);
			CK(cuCtxSynchronize());
			CK(cuMemcpyDtoH(i ? got : ref, y, kerns[k].out_elems * sizeof(float)));
			v[i].same[k] = !i || !memcmp(ref, got, kerns[k].out_elems * sizeof(float));
			v[i].us[k] = calloc(reps, sizeof(float));
		}
	CUevent e0, e1;
	CK(cuEventCreate(&e0, 0));
	CK(cuEventCreate(&e1, 0));
	for (int r = -2; r < reps; r++) /* two warm-up rounds */
		for (unsigned k = 0; k < NK; k++)
			for (int i = 0; i < nv; i++) {
				CK(cuEventRecord(e0, 0));
				for (int l = 0; l < launches; l++)
					launch(v[i].fn[k], &kerns[k], x, y);
				CK(cuEventRecord(e1, 0));
				CK(cuEventSynchronize(e1));
				float ms;
				CK(cuEventElapsedTime(&ms, e0, e1));
				if (r >= 0)
					v[i].us[k][r] = ms * 1000.f / launches;
			}
	int bad = 0;
	printf("| variant | regs |");
	for (unsigned k = 0; k < NK; k++)
		printf(" %s µs | %% |", kerns[k].label);
	printf(" same |\n|---|---|");
	for (unsigned k = 0; k < NK; k++)
		printf("---|---|");
	printf("---|\n");
	float base[NK];
	for (int i = 0; i < nv; i++) {
		printf("| %s | %d/%d/%d", v[i].name, v[i].regs[0], v[i].regs[1], v[i].regs[2]);
		int same = 1;
		for (unsigned k = 0; k < NK; k++) {
			qsort(v[i].us[k], reps, sizeof(float), cmp_f);
			float med = v[i].us[k][reps / 2];
			if (!i)
				base[k] = med;
			printf(" | %.2f | %+.1f", med, 100.0 * (med - base[k]) / base[k]);
			same &= v[i].same[k];
			bad += !v[i].same[k];
		}
		printf(" | %s |\n", same ? "yes" : "NO");
		for (unsigned k = 0; k < NK; k++)
			printf("bench: probe_ab %s %s %.3f %.2f\n", kerns[k].label, v[i].name, v[i].us[k][reps / 2],
			       100.0 * (v[i].us[k][reps / 2] - base[k]) / base[k]);
	}
	printf("%s - probe_ab: outputs of %d variants equal nat's\n", bad ? "not ok" : "ok", nv);
	return bad != 0;
}
