/* tn_app — a tenant for the CPU tests: the driver API through the shim to
 * the fake driver, whose kernels take FAKECUDA_KERNEL_US each.
 *   tn_app lc N PERIOD_US      N launches at a fixed rate, each waited for
 *                              (cuStreamSynchronize), as a latency-critical
 *                              service does
 *   tn_app be N STREAMS        N launches round robin over STREAMS streams,
 *                              back to back, one cuCtxSynchronize at the end
 *   tn_app graph N             N launches of a one-kernel CUDA graph on one
 *                              stream, 4 ahead at most, as `be` does
 *   tn_app hang                one launch, then sleep until killed
 *   tn_app mt N THREADS        THREADS threads, N launches each on a stream
 *                              of their own, then one cuStreamSynchronize
 * Prints "RESULT role=R launches=N ms=T" and exits 0 when every launch
 * succeeded. */
#include <cuda.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char PTX[] = ".version 8.0\n.target sm_80\n.address_size 64\n"
			  ".visible .entry work(.param .u64 p)\n{\n\tret;\n}\n";

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#define CK(x)                                                                   \
	do {                                                                    \
		CUresult r_ = (x);                                              \
		if (r_ != CUDA_SUCCESS) {                                       \
			fprintf(stderr, "tn_app: %s: %d\n", #x, (int)r_);       \
			return 1;                                               \
		}                                                               \
	} while (0)

static CUcontext g_ctx;
static CUfunction g_fn;
static long g_n;
static int g_failed;

static void *mt_thread(void *arg)
{
	(void)arg;
	CUstream s;
	uint64_t x = 0;
	void *args[] = {&x};
	if (cuCtxSetCurrent(g_ctx) != CUDA_SUCCESS || cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
		__atomic_store_n(&g_failed, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	for (long i = 0; i < g_n; i++)
		if (cuLaunchKernel(g_fn, 4, 1, 1, 64, 1, 1, 0, s, args, NULL) != CUDA_SUCCESS)
			__atomic_store_n(&g_failed, 1, __ATOMIC_RELAXED);
	if (cuStreamSynchronize(s) != CUDA_SUCCESS)
		__atomic_store_n(&g_failed, 1, __ATOMIC_RELAXED);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *role = argc > 1 ? argv[1] : "be";
	long n = argc > 2 ? atol(argv[2]) : 10, arg = argc > 3 ? atol(argv[3]) : 1;
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	CK(cuInit(0));
	CK(cuDeviceGet(&dev, 0));
	CK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(cuCtxSetCurrent(ctx));
	/* TN_APP_ALLOC=BYTES: hold that much device memory (the exporter test) */
	const char *al = getenv("TN_APP_ALLOC");
	CUdeviceptr held = 0;
	if (al && atol(al) > 0)
		CK(cuMemAlloc_v2(&held, (size_t)atol(al)));
	CK(cuModuleLoadData(&mod, PTX));
	CK(cuModuleGetFunction(&fn, mod, "work"));
	uint64_t x = 0;
	void *args[] = {&x};
	uint64_t t0 = now_ns();
	if (!strcmp(role, "lc")) {
		CUstream s;
		CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
		uint64_t next = now_ns();
		for (long i = 0; i < n; i++) {
			next += (uint64_t)arg * 1000;
			while (now_ns() < next)
				usleep(100);
			CK(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
			CK(cuStreamSynchronize(s));
		}
	} else if (!strcmp(role, "be")) {
		/* At most 4 launches ahead per stream, as a real program runs
		 * against the driver's queue: an event per launch, the one 4
		 * back waited for. */
		CUstream s[16];
		CUevent ev[16][4];
		int ns = arg < 1 ? 1 : arg > 16 ? 16 : (int)arg;
		for (int i = 0; i < ns; i++) {
			CK(cuStreamCreate(&s[i], CU_STREAM_NON_BLOCKING));
			for (int j = 0; j < 4; j++)
				CK(cuEventCreate(&ev[i][j], CU_EVENT_DISABLE_TIMING));
		}
		for (long i = 0; i < n; i++) {
			int k = (int)(i % ns), slot = (int)((i / ns) % 4);
			if (i >= 4 * ns)
				CK(cuEventSynchronize(ev[k][slot]));
			CK(cuLaunchKernel(fn, 132, 1, 1, 256, 1, 1, 0, s[k], args, NULL));
			CK(cuEventRecord(ev[k][slot], s[k]));
		}
		CK(cuCtxSynchronize());
	} else if (!strcmp(role, "graph")) {
		CUstream s;
		CUevent ev[4];
		CUgraph g;
		CUgraphNode node;
		CUgraphExec ge;
		CUDA_KERNEL_NODE_PARAMS kp;
		memset(&kp, 0, sizeof(kp));
		kp.func = fn;
		kp.gridDimX = 132, kp.gridDimY = kp.gridDimZ = 1;
		kp.blockDimX = 256, kp.blockDimY = kp.blockDimZ = 1;
		kp.kernelParams = args;
		CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
		for (int j = 0; j < 4; j++)
			CK(cuEventCreate(&ev[j], CU_EVENT_DISABLE_TIMING));
		CK(cuGraphCreate(&g, 0));
		CK(cuGraphAddKernelNode(&node, g, NULL, 0, &kp));
		CK(cuGraphInstantiate(&ge, g, 0));
		for (long i = 0; i < n; i++) {
			if (i >= 4)
				CK(cuEventSynchronize(ev[i % 4]));
			CK(cuGraphLaunch(ge, s));
			CK(cuEventRecord(ev[i % 4], s));
		}
		CK(cuCtxSynchronize());
	} else if (!strcmp(role, "mt")) {
		pthread_t th[64];
		int nt = arg < 1 ? 1 : arg > 64 ? 64 : (int)arg;
		g_ctx = ctx, g_fn = fn, g_n = n;
		for (int i = 0; i < nt; i++)
			pthread_create(&th[i], NULL, mt_thread, NULL);
		for (int i = 0; i < nt; i++)
			pthread_join(th[i], NULL);
		if (g_failed) {
			fprintf(stderr, "tn_app: a thread's launch failed\n");
			return 1;
		}
		n *= nt;
	} else if (!strcmp(role, "hang")) {
		CK(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
		printf("READY\n");
		fflush(stdout);
		for (;;)
			pause();
	} else {
		fprintf(stderr, "tn_app: unknown role %s\n", role);
		return 2;
	}
	printf("RESULT role=%s launches=%ld ms=%.1f\n", role, n, (now_ns() - t0) / 1e6);
	return 0;
}
