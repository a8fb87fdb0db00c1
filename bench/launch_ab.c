/* launch_ab.c — what the shim adds to one launch, measured inside ONE
 * process so that the per-process noise of the driver (a launch costs
 * 3.6-4.9 us depending on the run) cancels out.
 *
 * The program dlopens "libcuda.so.1" (the shim, when build/lib comes first in
 * LD_LIBRARY_PATH), calls cuInit through it, then finds the real driver the
 * shim loaded (the same handle: dlopen with RTLD_NOLOAD of the loaded object
 * that is named libcuda.so* and lacks the shim's marker). It loads IMAGE
 * through the shim (the rewritten module) and takes each launch entry point
 * twice — the real driver's and the shim's, by dlsym and by
 * cuGetProcAddress_v2 the way cudart 13 does — and launches the SAME
 * CUfunction through both in many alternating rounds (A B, B A, ...), each a
 * batch of launches timed on the CPU then synchronised. Reported per entry
 * point: median call time of each side, the median and quartiles of the
 * per-round differences (the added cost), and the throughput ratio (the
 * median over rounds of launches/s, batch + synchronise, of B over A). One more line compares the original
 * image loaded by the real driver itself with the rewritten one, both
 * launched through the real entry point (does the rewritten code launch
 * slower?).
 *   launch_ab IMAGE [KERNEL [ROUNDS [BATCH]]]   (KERNEL default "empty")
 * Output: one "ab NAME key value..." line per case, then a table. Works
 * against the test driver of tests/shim too (the CPU cost, no GPU noise). */

#include <cuda.h>
#include <dlfcn.h>
#include <link.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			      CUstream, void **, void **);
typedef CUresult (*launch_ex_fn)(const CUlaunchConfig *, CUfunction, void **, void **);
typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
typedef CUresult (*sync_fn)(void);

static void *shim, *real;
static sync_fn ctx_sync;

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "launch_ab: %s\n", what);
	exit(1);
}

static void *sym(void *h, const char *name)
{
	void *p = dlsym(h, name);
	if (!p) {
		fprintf(stderr, "launch_ab: %s: no %s\n", h == shim ? "shim" : "real driver", name);
		exit(1);
	}
	return p;
}

#define CALL(h, name, T, ...)                                                                  \
	do {                                                                                   \
		CUresult rc_ = ((T)sym(h, name))(__VA_ARGS__);                                 \
		if (rc_ != CUDA_SUCCESS) {                                                     \
			fprintf(stderr, "launch_ab: %s failed: %d\n", name, (int)rc_);         \
			exit(1);                                                               \
		}                                                                              \
	} while (0)

static int find_real(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size, (void)data;
	const char *n = info->dlpi_name, *b = n ? strrchr(n, '/') : NULL;
	b = b ? b + 1 : n;
	if (!b || strncmp(b, "libcuda.so", 10))
		return 0;
	void *h = dlopen(n, RTLD_NOW | RTLD_NOLOAD);
	if (h && !dlsym(h, "gpuext_shim_marker")) {
		real = h;
		fprintf(stderr, "launch_ab: real driver %s\n", n);
		return 1;
	}
	if (h)
		dlclose(h);
	return 0;
}

/* One entry point, both sides. */
struct side {
	launch_fn fn;
	launch_ex_fn ex;
};

static CUfunction func;
static CUlaunchConfig cfg = { .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1 };

static double batch(const struct side *s, CUfunction f, int n, double *total)
{
	ctx_sync();
	double t0 = now_ns();
	CUresult rc = CUDA_SUCCESS;
	if (s->ex) {
		for (int i = 0; i < n; i++)
			rc |= s->ex(&cfg, f, NULL, NULL);
	} else {
		for (int i = 0; i < n; i++)
			rc |= s->fn(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
	}
	double t1 = now_ns();
	ctx_sync();
	double t2 = now_ns();
	if (rc != CUDA_SUCCESS)
		die("a launch failed");
	*total = (t2 - t0) / n;
	return (t1 - t0) / n;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double quantile(double *v, int n, double q)
{
	qsort(v, n, sizeof(*v), cmp_d);
	double pos = q * (n - 1);
	int i = (int)pos;
	return i + 1 < n ? v[i] + (pos - i) * (v[i + 1] - v[i]) : v[i];
}

struct result {
	const char *name, *a_name, *b_name;
	double a_ns, b_ns, d_med, d_p25, d_p75, ratio, ci_lo, ci_hi;
};

/* A = reference, B = under test; returns B - A statistics. */
static struct result ab(const char *name, const char *a_name, const struct side *a, CUfunction fa,
			const char *b_name, const struct side *b, CUfunction fb, int rounds, int n)
{
	double *ca = malloc(rounds * sizeof(double)), *cb = malloc(rounds * sizeof(double));
	double *d = malloc(rounds * sizeof(double)), *q = malloc(rounds * sizeof(double));
	double ta, tb;
	if (!ca || !cb || !d || !q)
		die("out of memory");
	for (int w = 0; w < 8; w++) { /* warm up both paths */
		batch(a, fa, n, &ta);
		batch(b, fb, n, &tb);
	}
	for (int r = 0; r < rounds; r++) {
		if (r & 1) {
			cb[r] = batch(b, fb, n, &tb);
			ca[r] = batch(a, fa, n, &ta);
		} else {
			ca[r] = batch(a, fa, n, &ta);
			cb[r] = batch(b, fb, n, &tb);
		}
		d[r] = cb[r] - ca[r];
		q[r] = ta / tb; /* launches/s of B over A, batch + synchronise */
	}
	struct result res = { .name = name, .a_name = a_name, .b_name = b_name };
	res.d_p25 = quantile(d, rounds, 0.25);
	res.d_med = quantile(d, rounds, 0.5);
	res.d_p75 = quantile(d, rounds, 0.75);
	/* 95 % confidence interval of the median from order statistics
	 * (d is sorted by quantile()): ranks n/2 -+ 0.98 sqrt(n). */
	double half = 0.98 * sqrt((double)rounds);
	int lo = (int)floor((rounds - 1) / 2.0 - half), hi = (int)ceil((rounds - 1) / 2.0 + half);
	res.ci_lo = d[lo < 0 ? 0 : lo];
	res.ci_hi = d[hi >= rounds ? rounds - 1 : hi];
	res.a_ns = quantile(ca, rounds, 0.5);
	res.b_ns = quantile(cb, rounds, 0.5);
	res.ratio = quantile(q, rounds, 0.5);
	printf("ab %s %s_ns %.1f %s_ns %.1f added_ns %.1f p25 %.1f p75 %.1f ratio %.4f rounds %d batch %d ci95 %.1f %.1f\n",
	       name, a_name, res.a_ns, b_name, res.b_ns, res.d_med, res.d_p25, res.d_p75, res.ratio, rounds, n, res.ci_lo,
	       res.ci_hi);
	fflush(stdout);
	free(ca), free(cb), free(d), free(q);
	return res;
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, len = 0;
	char *b = malloc(cap + 1);
	for (size_t k; b && (k = fread(b + len, 1, cap - len, f)) > 0;) {
		len += k;
		if (len == cap) {
			char *nb = realloc(b, (cap *= 2) + 1);
			if (!nb)
				free(b);
			b = nb;
		}
	}
	fclose(f);
	if (b)
		b[len] = 0;
	return b;
}

static void *gpa(void *h, const char *name, cuuint64_t flags)
{
	void *p = NULL;
	CUdriverProcAddressQueryResult st;
	if (((gpa_fn)sym(h, "cuGetProcAddress_v2"))(name, &p, 13000, flags, &st) != CUDA_SUCCESS || !p)
		return NULL;
	return p;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: launch_ab IMAGE [KERNEL [ROUNDS [BATCH]]]\n");
		return 2;
	}
	const char *kname = argc > 2 ? argv[2] : "empty";
	int rounds = argc > 3 ? atoi(argv[3]) : 400, n = argc > 4 ? atoi(argv[4]) : 256;
	if (rounds < 4 || n < 1)
		die("ROUNDS must be >= 4 and BATCH >= 1");
	shim = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	if (!shim || !dlsym(shim, "gpuext_shim_marker"))
		die("the libcuda.so.1 found is not the gpuext shim (put build/lib first in LD_LIBRARY_PATH)");
	CUdevice dev;
	CUcontext ctx;
	CALL(shim, "cuInit", CUresult(*)(unsigned), 0);
	CALL(shim, "cuDeviceGet", CUresult(*)(CUdevice *, int), &dev, 0);
	CALL(shim, "cuDevicePrimaryCtxRetain", CUresult(*)(CUcontext *, CUdevice), &ctx, dev);
	CALL(shim, "cuCtxSetCurrent", CUresult(*)(CUcontext), ctx);
	dl_iterate_phdr(find_real, NULL);
	if (!real)
		die("the shim has not loaded a real driver");
	ctx_sync = (sync_fn)sym(real, "cuCtxSynchronize");
	char *img = read_file(argv[1]);
	if (!img)
		die("cannot read IMAGE");
	CUmodule m, m0;
	CUfunction f0;
	CALL(shim, "cuModuleLoadData", CUresult(*)(CUmodule *, const void *), &m, img);
	CALL(shim, "cuModuleGetFunction", CUresult(*)(CUfunction *, CUmodule, const char *), &func, m, kname);
	CALL(real, "cuModuleLoadData", CUresult(*)(CUmodule *, const void *), &m0, img);
	CALL(real, "cuModuleGetFunction", CUresult(*)(CUfunction *, CUmodule, const char *), &f0, m0, kname);

	struct {
		const char *name, *sym;
		int ex;
		cuuint64_t gpa_flags; /* ~0: dlsym */
	} cases[] = {
		{ "cuLaunchKernel", "cuLaunchKernel", 0, ~0ULL },
		{ "cuLaunchKernel_ptsz", "cuLaunchKernel_ptsz", 0, ~0ULL },
		{ "cuLaunchKernelEx", "cuLaunchKernelEx", 1, ~0ULL },
		{ "cuLaunchKernelEx_ptsz", "cuLaunchKernelEx_ptsz", 1, ~0ULL },
		{ "gpa:cuLaunchKernel", "cuLaunchKernel", 0, CU_GET_PROC_ADDRESS_DEFAULT },
		{ "gpa:cuLaunchKernel/ptds", "cuLaunchKernel", 0, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM },
		{ "gpa:cuLaunchKernelEx/ptds", "cuLaunchKernelEx", 1, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM },
	};
	struct result res[16];
	int nres = 0;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		void *pr, *ps;
		if (cases[i].gpa_flags == ~0ULL) {
			pr = sym(real, cases[i].sym), ps = sym(shim, cases[i].sym);
		} else {
			pr = gpa(real, cases[i].sym, cases[i].gpa_flags), ps = gpa(shim, cases[i].sym, cases[i].gpa_flags);
			if (!pr || !ps)
				die("cuGetProcAddress_v2 failed");
			Dl_info di;
			if (dladdr(pr, &di) && di.dli_sname && di.dli_saddr == pr)
				printf("# %s: the real driver's cuGetProcAddress answers its export %s\n", cases[i].name,
				       di.dli_sname);
			else
				printf("# %s: the real driver's cuGetProcAddress answers %p, not an exported symbol\n",
				       cases[i].name, pr);
		}
		struct side a = { 0 }, b = { 0 };
		if (cases[i].ex)
			a.ex = (launch_ex_fn)pr, b.ex = (launch_ex_fn)ps;
		else
			a.fn = (launch_fn)pr, b.fn = (launch_fn)ps;
		res[nres++] = ab(cases[i].name, "direct", &a, func, "shim", &b, func, rounds, n);
	}
	/* The code itself: original image by the real driver vs rewritten. */
	struct side r = { .fn = (launch_fn)sym(real, "cuLaunchKernel") };
	res[nres++] = ab("code:rewritten-vs-original", "original", &r, f0, "rewritten", &r, func, rounds, n);

	printf("| entry point | A | B | A ns/call | B ns/call | added (median, p25..p75) | 95%% CI of the median | launches/s B/A |\n");
	printf("|---|---|---|---|---|---|---|---|\n");
	for (int i = 0; i < nres; i++)
		printf("| %s | %s | %s | %.1f | %.1f | %+.1f ns (%+.1f..%+.1f) | %+.1f..%+.1f ns | %.4f |\n", res[i].name,
		       res[i].a_name, res[i].b_name, res[i].a_ns, res[i].b_ns, res[i].d_med, res[i].d_p25, res[i].d_p75,
		       res[i].ci_lo, res[i].ci_hi, res[i].ratio);
	free(img);
	return 0;
}
