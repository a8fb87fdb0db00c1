/* test_memlimit — per-tenant memory limits in the shim (shim/memlimit.c)
 * against the fake driver, which keeps what is allocated and not freed
 * (fake_mem_live) and reports FAKECUDA_MEM_TOTAL as the device's memory.
 *   test_memlimit none         no tenant: cuMemGetInfo is the driver's
 *   test_memlimit paths LIMIT  every allocation path under a limit of LIMIT
 *                              bytes (GPUEXT_TENANT_MEM_LIMIT set to it)
 *   test_memlimit race LIMIT   16 threads racing cuMemAlloc/cuMemFree
 *   test_memlimit racepool LIMIT  the same with cuMemAllocAsync/cuMemFreeAsync
 *                              on the device's pool (kept cached), then a trim
 *   test_memlimit info         print "total=BYTES free=BYTES" (cuMemGetInfo)
 *   test_memlimit hold BYTES   allocate BYTES, print "held", sleep (killed)
 *   test_memlimit try BYTES    exit 0 if BYTES can be allocated now, 2 if
 *                              CUDA_ERROR_OUT_OF_MEMORY, 1 otherwise
 *   test_memlimit wait BYTES   retry `try` every 10 ms for 3 s; prints ms
 * TEST_ML_DEV=N: on device N (default 0). hold, try, wait and info need no
 * fake: tests/gpu/limits.sh runs them on a GPU. */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/gx_test.h"

#define MiB ((size_t)1 << 20)

/* cuda.h's struct arr_v1_desc / struct arr3_v1_desc (declared
 * only for the driver's own build): 32-bit sizes. */
struct arr_v1_desc {
	unsigned Width, Height;
	CUarray_format Format;
	unsigned NumChannels;
};
struct arr3_v1_desc {
	unsigned Width, Height, Depth;
	CUarray_format Format;
	unsigned NumChannels, Flags;
};

static uint64_t (*mem_live)(void);
static long (*fcount)(const char *);
static uint64_t limit;

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void info(size_t *f, size_t *t)
{
	*f = *t = 0;
	cuMemGetInfo(f, t);
}

static size_t used(void)
{
	size_t f, t;
	info(&f, &t);
	return t - f;
}

static void paths(void)
{
	size_t f, t;
	info(&f, &t);
	GX_CHECK(t == limit && f == limit, "cuMemGetInfo_v2: total %zu MiB = the limit, all of it free", t / MiB);
	typedef CUresult (*getinfo_fn)(size_t *, size_t *);
	getinfo_fn gi = NULL;
	CUdriverProcAddressQueryResult st;
	cuGetProcAddress_v2("cuMemGetInfo", (void **)&gi, 12000, 0, &st);
	size_t f2 = 0, t2 = 0;
	if (gi)
		gi(&f2, &t2);
	GX_CHECK(gi && t2 == limit, "cuMemGetInfo through cuGetProcAddress: the limit (%zu MiB)", t2 / MiB);
	typedef CUresult (*getinfo_v1)(unsigned *, unsigned *);
	getinfo_v1 g1 = (getinfo_v1)dlsym(RTLD_DEFAULT, "cuMemGetInfo");
	unsigned f1 = 0, t1 = 0;
	if (g1)
		g1(&f1, &t1);
	GX_CHECK(g1 && t1 == (limit > 0xffffffffu ? 0xffffffffu : limit), "cuMemGetInfo (v1): the limit");
	size_t dt = 0;
	GX_CHECK(cuDeviceTotalMem(&dt, 0) == CUDA_SUCCESS && dt == limit,
		 "cuDeviceTotalMem_v2: the limit (%zu MiB), as device properties report it", dt / MiB);

	/* plain */
	CUdeviceptr a = 0, b = 0;
	long before = fcount("cuMemAlloc_v2");
	GX_CHECK(cuMemAlloc(&a, limit * 3 / 4) == CUDA_SUCCESS, "cuMemAlloc 3/4 of the limit");
	GX_CHECK(cuMemAlloc(&b, limit / 2) == CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc past it: CUDA_ERROR_OUT_OF_MEMORY");
	GX_CHECK(fcount("cuMemAlloc_v2") == before + 1, "the refused allocation never reached the driver");
	info(&f, &t);
	GX_CHECK(f == limit / 4, "free is what is left of the limit (%zu MiB)", f / MiB);
	GX_CHECK(cuMemFree(a) == CUDA_SUCCESS && used() == 0, "cuMemFree gives it back");
	GX_CHECK(cuMemAlloc(&b, limit / 2) == CUDA_SUCCESS && cuMemFree(b) == CUDA_SUCCESS, "then it fits");
	GX_CHECK(cuMemFree(0xdead0000) == CUDA_SUCCESS && used() == 0, "an unknown pointer's free changes nothing");

	/* pitch */
	size_t pitch = 0;
	GX_CHECK(cuMemAllocPitch(&a, &pitch, 1000, limit / 1024 / 2, 4) == CUDA_SUCCESS &&
			 used() == pitch * (limit / 1024 / 2),
		 "cuMemAllocPitch counts pitch x height (%zu x %llu)", pitch, (unsigned long long)(limit / 2048));
	GX_CHECK(cuMemAllocPitch(&b, &pitch, 1024, limit / 1024, 4) == CUDA_ERROR_OUT_OF_MEMORY,
		 "cuMemAllocPitch past the limit refused");
	cuMemFree(a);

	/* stream-ordered: what the pool holds counts, until trimmed */
	CUstream s = 0;
	CUmemoryPool dp = NULL;
	cuuint64_t keep = UINT64_MAX, zero = 0;
	cuDeviceGetMemPool(&dp, 0);
	cuMemPoolSetAttribute(dp, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep); /* as PyTorch's cudaMallocAsync */
	GX_CHECK(cuMemAllocAsync(&a, limit / 2, s) == CUDA_SUCCESS && used() == limit / 2, "cuMemAllocAsync counts");
	GX_CHECK(cuMemFreeAsync(a, s) == CUDA_SUCCESS && used() == limit / 2 && mem_live() == limit / 2,
		 "a free into the pool keeps the budget: the pool still holds it");
	GX_CHECK(cuMemAllocAsync(&a, limit / 2, s) == CUDA_SUCCESS && used() == limit / 2,
		 "an allocation from the pool's cache takes no more");
	GX_CHECK(cuMemAllocAsync(&b, limit / 2 + 1, s) == CUDA_ERROR_OUT_OF_MEMORY,
		 "cuMemAllocAsync past the limit refused");
	GX_CHECK(mem_live() == limit / 2, "and the pool never grew past it");
	cuMemFreeAsync(a, s);
	GX_CHECK(cuMemAlloc(&b, limit / 2 + 1) == CUDA_ERROR_OUT_OF_MEMORY,
		 "while the pool caches it, a plain allocation of the rest is refused");
	GX_CHECK(cuMemAllocAsync(&a, limit / 4, s) == CUDA_SUCCESS && used() == limit / 2,
		 "at the limit, an allocation the pool has cached goes on");
	cuMemFreeAsync(a, s);
	GX_CHECK(cuMemPoolTrimTo(dp, 0) == CUDA_SUCCESS && used() == 0 && mem_live() == 0,
		 "cuMemPoolTrimTo gives the budget back (%zu MiB used)", used() / MiB);
	cuMemPoolSetAttribute(dp, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &zero); /* the driver's default */
	GX_CHECK(cuMemAllocAsync(&a, limit * 3 / 4, s) == CUDA_SUCCESS && cuMemFreeAsync(a, s) == CUDA_SUCCESS &&
			 cuCtxSynchronize() == CUDA_SUCCESS && mem_live() == 0,
		 "release threshold 0: the driver trims the pool at a synchronisation");
	GX_CHECK(cuMemAlloc(&b, limit * 3 / 4) == CUDA_SUCCESS,
		 "an allocation refused on the stale figure is tried again after reading the pools");
	GX_CHECK(cuMemFree(b) == CUDA_SUCCESS && used() == 0, "and nothing is left counted");
	CUmemoryPool mp = NULL;
	CUmemPoolProps pp;
	memset(&pp, 0, sizeof(pp));
	GX_CHECK(cuMemPoolCreate(&mp, &pp) == CUDA_SUCCESS, "cuMemPoolCreate");
	GX_CHECK(cuMemAllocFromPoolAsync(&b, limit + 1, mp, s) == CUDA_ERROR_OUT_OF_MEMORY,
		 "cuMemAllocFromPoolAsync past the limit refused");
	GX_CHECK(cuMemAllocFromPoolAsync(&b, limit / 4, mp, s) == CUDA_SUCCESS && used() == limit / 4,
		 "cuMemAllocFromPoolAsync within it counts");
	GX_CHECK(cuMemFreeAsync(b, s) == CUDA_SUCCESS && used() == limit / 4, "its free keeps the pool's budget");
	GX_CHECK(cuMemPoolDestroy(mp) == CUDA_SUCCESS && used() == 0 && mem_live() == 0,
		 "cuMemPoolDestroy gives back what the pool held");
	CUstream cap = (CUstream)(uintptr_t)0xC0DE; /* always capturing in the fake */
	GX_CHECK(cuMemAllocAsync(&a, limit, cap) == CUDA_SUCCESS && used() == limit,
		 "an allocation into a captured stream counts");
	GX_CHECK(cuMemAllocAsync(&b, 1, cap) == CUDA_ERROR_OUT_OF_MEMORY, "and the next one in capture is refused");
	GX_CHECK(cuMemFreeAsync(a, cap) == CUDA_SUCCESS && used() == 0, "its free gives it back");

	/* graph memory nodes */
	CUDA_MEM_ALLOC_NODE_PARAMS np;
	memset(&np, 0, sizeof(np));
	np.bytesize = limit / 2;
	CUgraphNode n;
	GX_CHECK(cuGraphAddMemAllocNode(&n, (CUgraph)0x1, NULL, 0, &np) == CUDA_SUCCESS && used() == limit / 2,
		 "cuGraphAddMemAllocNode counts");
	CUgraphNodeParams gp;
	memset(&gp, 0, sizeof(gp));
	gp.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
	gp.alloc.bytesize = limit / 2 + 1;
	GX_CHECK(cuGraphAddNode(&n, (CUgraph)0x1, NULL, NULL, 0, &gp) == CUDA_ERROR_OUT_OF_MEMORY,
		 "cuGraphAddNode(MEM_ALLOC) past the limit refused");
	gp.alloc.bytesize = limit / 4;
	GX_CHECK(cuGraphAddNode(&n, (CUgraph)0x1, NULL, NULL, 0, &gp) == CUDA_SUCCESS && used() == limit * 3 / 4,
		 "cuGraphAddNode(MEM_ALLOC) within it counts");
	CUdeviceptr g2 = gp.alloc.dptr;
	memset(&gp, 0, sizeof(gp));
	gp.type = CU_GRAPH_NODE_TYPE_MEM_FREE;
	gp.free.dptr = g2;
	GX_CHECK(cuGraphAddNode(&n, (CUgraph)0x1, NULL, NULL, 0, &gp) == CUDA_SUCCESS &&
			 cuGraphAddMemFreeNode(&n, (CUgraph)0x1, NULL, 0, np.dptr) == CUDA_SUCCESS && used() == 0,
		 "memory free nodes give back");

	/* VMM */
	CUmemGenericAllocationHandle h = 0, h2 = 0;
	CUmemAllocationProp prop;
	memset(&prop, 0, sizeof(prop));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	GX_CHECK(cuMemCreate(&h, limit / 2, &prop, 0) == CUDA_SUCCESS && used() == limit / 2, "cuMemCreate counts");
	GX_CHECK(cuMemCreate(&h2, limit, &prop, 0) == CUDA_ERROR_OUT_OF_MEMORY, "cuMemCreate past the limit refused");
	GX_CHECK(cuMemRelease(h) == CUDA_SUCCESS && used() == 0, "cuMemRelease gives back");

	/* arrays */
	CUarray arr;
	CUDA_ARRAY_DESCRIPTOR ad = {
		.Width = 1024, .Height = limit / 1024 / 4 / 2, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1
	};
	GX_CHECK(cuArrayCreate(&arr, &ad) == CUDA_SUCCESS && used() == limit / 2, "cuArrayCreate counts w x h x 4");
	CUDA_ARRAY3D_DESCRIPTOR a3 = { .Width = 1024,
				       .Height = 1024,
				       .Depth = limit / MiB,
				       .Format = CU_AD_FORMAT_UNSIGNED_INT8,
				       .NumChannels = 1 };
	CUarray arr3;
	GX_CHECK(cuArray3DCreate(&arr3, &a3) == CUDA_ERROR_OUT_OF_MEMORY, "cuArray3DCreate past the limit refused");
	GX_CHECK(cuArrayDestroy(arr) == CUDA_SUCCESS && used() == 0, "cuArrayDestroy gives back");
	typedef CUresult (*arr_v1)(CUarray *, const struct arr_v1_desc *);
	typedef CUresult (*arr3_v1)(CUarray *, const struct arr3_v1_desc *);
	arr_v1 ac1 = (arr_v1)dlsym(RTLD_DEFAULT, "cuArrayCreate");
	arr3_v1 ac31 = (arr3_v1)dlsym(RTLD_DEFAULT, "cuArray3DCreate");
	struct arr_v1_desc d1 = { .Width = 1024,
				  .Height = (unsigned)(limit / 1024 / 2),
				  .Format = CU_AD_FORMAT_UNSIGNED_INT16,
				  .NumChannels = 1 };
	GX_CHECK(ac1 && ac1(&arr, &d1) == CUDA_SUCCESS && used() == limit, "cuArrayCreate (v1) counts w x h x 2");
	GX_CHECK(ac1 && ac1(&arr3, &d1) == CUDA_ERROR_OUT_OF_MEMORY, "cuArrayCreate (v1) past the limit refused");
	cuArrayDestroy(arr);
	struct arr3_v1_desc d31 = { .Width = 256,
				    .Height = 256,
				    .Depth = (unsigned)(limit / MiB * 2),
				    .Format = CU_AD_FORMAT_SIGNED_INT8,
				    .NumChannels = 4 };
	GX_CHECK(ac31 && ac31(&arr, &d31) == CUDA_SUCCESS && used() == limit / 2,
		 "cuArray3DCreate (v1) counts w x h x d x 4");
	GX_CHECK(cuArrayDestroy(arr) == CUDA_SUCCESS && used() == 0, "and its destroy gives back");
	CUmipmappedArray mm;
	a3.Depth = 0;
	a3.Width = a3.Height = 2048;
	size_t want = 0;
	for (int l = 0; l < 4; l++)
		want += (size_t)(2048 >> l) * (2048 >> l);
	GX_CHECK(cuMipmappedArrayCreate(&mm, &a3, 4) == CUDA_SUCCESS && used() == want,
		 "cuMipmappedArrayCreate counts its levels (%zu bytes)", used());
	GX_CHECK(cuMipmappedArrayDestroy(mm) == CUDA_SUCCESS && used() == 0, "cuMipmappedArrayDestroy gives back");

	/* managed, by reservation */
	GX_CHECK(cuMemAllocManaged(&a, limit / 2, CU_MEM_ATTACH_GLOBAL) == CUDA_SUCCESS && used() == limit / 2,
		 "cuMemAllocManaged counts its full size");
	GX_CHECK(cuMemAllocManaged(&b, limit, CU_MEM_ATTACH_GLOBAL) == CUDA_ERROR_OUT_OF_MEMORY,
		 "cuMemAllocManaged past the limit refused");
	GX_CHECK(cuMemFree(a) == CUDA_SUCCESS && used() == 0, "its free gives back");
	GX_CHECK(mem_live() == 0, "the driver holds nothing either");
}

struct racer {
	unsigned seed;
	long ok, oom, over, err;
};

static int dev_ord;
static bool pooled; /* racepool: stream-ordered allocations from the device's pool */

static CUresult r_alloc(CUdeviceptr *p, size_t n)
{
	return pooled ? cuMemAllocAsync(p, n, CU_STREAM_PER_THREAD) : cuMemAlloc(p, n);
}

static CUresult r_free(CUdeviceptr p)
{
	return pooled ? cuMemFreeAsync(p, CU_STREAM_PER_THREAD) : cuMemFree(p);
}

static void *race(void *arg)
{
	struct racer *r = arg;
	CUcontext c;
	cuDevicePrimaryCtxRetain(&c, dev_ord);
	cuCtxSetCurrent(c);
	CUdeviceptr held[16];
	size_t sz[16];
	int nh = 0;
	for (int i = 0; i < 3000; i++) {
		if (nh < 16 && (rand_r(&r->seed) & 1)) {
			/* one thread alone can pass the limit (16 x 8 MiB on a pool) */
			size_t n = (1 + rand_r(&r->seed) % 4) * (pooled ? 2 * MiB : MiB);
			CUresult rc = r_alloc(&held[nh], n);
			if (rc == CUDA_SUCCESS) {
				sz[nh++] = n;
				r->ok++;
				if (mem_live() > limit)
					r->over++;
			} else if (rc == CUDA_ERROR_OUT_OF_MEMORY) {
				r->oom++;
			} else {
				r->err++;
			}
		} else if (nh) {
			nh--;
			if (r_free(held[nh]) != CUDA_SUCCESS)
				r->err++;
			(void)sz[nh];
		}
	}
	while (nh)
		r_free(held[--nh]);
	return NULL;
}

static void race_all(void)
{
	pthread_t th[16];
	struct racer r[16];
	long ok = 0, oom = 0, over = 0, err = 0;
	for (int i = 0; i < 16; i++) {
		r[i] = (struct racer){ .seed = (unsigned)i * 2654435761u };
		pthread_create(&th[i], NULL, race, &r[i]);
	}
	for (int i = 0; i < 16; i++) {
		pthread_join(th[i], NULL);
		ok += r[i].ok, oom += r[i].oom, over += r[i].over, err += r[i].err;
	}
	GX_CHECK(ok > 1000 && oom > 100 && !err, "16 threads%s: %ld allocations, %ld out of memory, no other error",
		 pooled ? " on a pool" : "", ok, oom);
	GX_CHECK(!over, "the driver never held more than the limit");
	if (pooled) {
		CUmemoryPool mp = NULL;
		GX_CHECK(used() == mem_live() && used() > 0, "the budget is what the pool holds (%zu MiB cached)",
			 used() / MiB);
		cuDeviceGetMemPool(&mp, dev_ord);
		cuMemPoolTrimTo(mp, 0);
	}
	GX_CHECK(used() == 0 && mem_live() == 0, "all given back: no leaked budget");
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "none";
	uint64_t arg = argc > 2 ? strtoull(argv[2], NULL, 0) : 0;
	CUcontext c;
	CUresult rc0 = cuInit(0);
	void *fake = dlopen(getenv("GPUEXT_REAL_LIBCUDA"), RTLD_NOW | RTLD_NOLOAD);
	mem_live = fake ? (uint64_t (*)(void))dlsym(fake, "fake_mem_live") : NULL;
	fcount = fake ? (long (*)(const char *))dlsym(fake, "fake_count") : NULL;
	const char *dv = getenv("TEST_ML_DEV");
	dev_ord = dv ? atoi(dv) : 0;
	bool real = !strcmp(mode, "hold") || !strcmp(mode, "try") || !strcmp(mode, "wait") || !strcmp(mode, "info");
	if (rc0 || cuDevicePrimaryCtxRetain(&c, dev_ord) || cuCtxSetCurrent(c) || (!real && (!mem_live || !fcount))) {
		printf("not ok - the fake driver under the shim\n");
		return 1;
	}
	limit = arg;
	if (!strcmp(mode, "none")) {
		size_t f, t;
		info(&f, &t);
		GX_CHECK(t == 80ull << 30, "no tenant: cuMemGetInfo is the driver's (%zu GiB)", t >> 30);
	} else if (!strcmp(mode, "paths")) {
		paths();
	} else if (!strcmp(mode, "race") || !strcmp(mode, "racepool")) {
		pooled = !strcmp(mode, "racepool");
		if (pooled) {
			CUmemoryPool mp = NULL;
			cuuint64_t keep = UINT64_MAX;
			cuDeviceGetMemPool(&mp, dev_ord);
			cuMemPoolSetAttribute(mp, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep);
		}
		race_all();
	} else if (!strcmp(mode, "info")) {
		size_t f, t;
		info(&f, &t);
		printf("total=%zu free=%zu\n", t, f);
		return 0;
	} else if (!strcmp(mode, "hold")) {
		CUdeviceptr p;
		if (cuMemAlloc(&p, arg) != CUDA_SUCCESS)
			return 1;
		printf("held\n");
		fflush(stdout);
		for (;;)
			pause();
	} else if (!strcmp(mode, "try") || !strcmp(mode, "wait")) {
		uint64_t t0 = now_ms();
		for (;;) {
			CUdeviceptr p;
			CUresult rc = cuMemAlloc(&p, arg);
			if (rc == CUDA_SUCCESS) {
				cuMemFree(p);
				printf("%llu\n", (unsigned long long)(now_ms() - t0));
				return 0;
			}
			if (rc != CUDA_ERROR_OUT_OF_MEMORY)
				return 1;
			if (!strcmp(mode, "try") || now_ms() - t0 > 3000)
				return 2;
			usleep(10000);
		}
	}
	return gx_test_done();
}
