/* memlimit_cost — what the shim adds to the allocation path (docs/limits.md):
 * ns per cuMemAlloc + cuMemFree pair (SIZE bytes, default 1 MiB), per
 * cuMemGetInfo, per cuMemAllocAsync + cuMemFreeAsync pair on the device's
 * pool (kept cached, as PyTorch's cudaMallocAsync backend does; the pool
 * path reads the pool's size) and per cuGraphLaunch of an empty graph (the
 * launch path a share gates), over N rounds (default 20000), after a
 * warm-up. Run it natively, under gpuext-run without a tenant, and under
 * gpuext-run --tenant with --mem-limit; tests/gpu/limits.sh and
 * tests/gpu/limits2.sh print them side by side.
 *   memlimit_cost [N] [SIZE]  ->  RESULT alloc_free_ns=X getinfo_ns=Y
 *                                 async_free_ns=Z graph_launch_ns=W total=T */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20000;
	size_t sz = argc > 2 ? strtoull(argv[2], NULL, 0) : (1u << 20);
	CUcontext c;
	CUdevice d;
	if (cuInit(0) || cuDeviceGet(&d, 0) || cuDevicePrimaryCtxRetain(&c, d) || cuCtxSetCurrent(c)) {
		fprintf(stderr, "memlimit_cost: no CUDA device\n");
		return 1;
	}
	CUdeviceptr p;
	for (int i = 0; i < 1000; i++)
		if (cuMemAlloc(&p, sz) || cuMemFree(p))
			return 1;
	double t0 = now_ns();
	for (int i = 0; i < n; i++)
		if (cuMemAlloc(&p, sz) || cuMemFree(p))
			return 1;
	double t1 = now_ns();
	size_t f, t;
	for (int i = 0; i < n; i++)
		cuMemGetInfo(&f, &t);
	double t2 = now_ns();
	CUstream s;
	CUmemoryPool pool;
	cuuint64_t keep = ~0ull;
	if (cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) || cuDeviceGetMemPool(&pool, d) ||
	    cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep))
		return 1;
	double ta = 0;
	for (int i = 0; i < n + 1000; i++) {
		if (i == 1000)
			ta = now_ns();
		if (cuMemAllocAsync(&p, sz, s) || cuMemFreeAsync(p, s))
			return 1;
		if (i % 1000 == 999)
			cuStreamSynchronize(s);
	}
	cuStreamSynchronize(s);
	double t3 = now_ns();
	cuMemPoolTrimTo(pool, 0);
	CUgraph g;
	CUgraphNode node;
	CUgraphExec ge;
	if (cuGraphCreate(&g, 0) || cuGraphAddEmptyNode(&node, g, NULL, 0) || cuGraphInstantiate(&ge, g, 0))
		return 1;
	double t4 = 0;
	for (int i = 0; i < n + 1000; i++) {
		if (i == 1000)
			t4 = now_ns();
		if (cuGraphLaunch(ge, s))
			return 1;
		if (i % 1000 == 999)
			cuStreamSynchronize(s);
	}
	cuStreamSynchronize(s);
	double t5 = now_ns();
	printf("RESULT alloc_free_ns=%.0f getinfo_ns=%.0f async_free_ns=%.0f graph_launch_ns=%.0f total=%zu\n",
	       (t1 - t0) / n, (t2 - t1) / n, (t3 - ta) / n, (t5 - t4) / n, t);
	return 0;
}
