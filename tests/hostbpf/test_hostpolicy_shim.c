/* test_hostpolicy_shim — end to end through the shim and the fake driver:
 * with GPUEXT_POLICY=gx_seq.bpf.o, a managed allocation passed to a launch
 * leads to cuMemPrefetchAsync calls before the launch; without a usable
 * policy nothing is prefetched and the launch still succeeds.
 * argv[1]: "expect-prefetch", "expect-none", "expect-kmod" (hints go to
 * /dev/gpuext: no cuMemPrefetchAsync; the script counts the hints) or
 * "expect-reject" (a sched policy refuses a new stream: cuStreamCreate fails
 * with CUDA_ERROR_NOT_PERMITTED) or "expect-priority P" (streams are made
 * with the sched policy's priority, CUDA priority P). Run by
 * test_hostpolicy.sh. */
#define CUDA_ENABLE_DEPRECATED 1
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tests/gx_test.h"

static const char PTX[] = ".version 8.0\n.target sm_80\n.address_size 64\n"
			  ".visible .entry kern_p(.param .u64 p)\n{\n\tret;\n}\n";

int main(int argc, char **argv)
{
	int want = argc > 1 && !strcmp(argv[1], "expect-prefetch");
	int kmod = argc > 1 && !strcmp(argv[1], "expect-kmod"); /* hints go to /dev/gpuext */
	const char *fake = getenv("GPUEXT_REAL_LIBCUDA");
	void *fh = fake ? dlopen(fake, RTLD_NOW | RTLD_NOLOAD) : NULL;
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	CUdeviceptr p = 0;
	GX_CHECK(cuInit(0) == CUDA_SUCCESS && cuDeviceGet(&dev, 0) == CUDA_SUCCESS, "init");
	GX_CHECK(cuDevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS && cuCtxSetCurrent(ctx) == CUDA_SUCCESS, "context");
	GX_CHECK(cuModuleLoadData(&mod, PTX) == CUDA_SUCCESS && cuModuleGetFunction(&fn, mod, "kern_p") == CUDA_SUCCESS,
		 "module");
	GX_CHECK(cuMemAllocManaged(&p, 32768, CU_MEM_ATTACH_GLOBAL) == CUDA_SUCCESS, "managed alloc");
	if (!fh)
		fh = fake ? dlopen(fake, RTLD_NOW | RTLD_NOLOAD) : NULL;
	long (*count)(const char *) = fh ? (long (*)(const char *))dlsym(fh, "fake_count") : NULL;
	GX_CHECK(count != NULL, "fake driver's call record");
	if (!count)
		return gx_test_done();
	if (argc > 1 && !strcmp(argv[1], "expect-reject")) {
		CUstream st;
		uint64_t a0 = p;
		size_t s0 = sizeof(a0);
		void *ex[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &a0, CU_LAUNCH_PARAM_BUFFER_SIZE, &s0, CU_LAUNCH_PARAM_END};
		long made = count("cuStreamCreate");
		GX_CHECK(cuStreamCreate(&st, 0) == CUDA_ERROR_NOT_PERMITTED && count("cuStreamCreate") == made,
			 "rejected stream: cuStreamCreate fails with CUDA_ERROR_NOT_PERMITTED, the driver is not called");
		GX_CHECK(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, ex) == CUDA_SUCCESS,
			 "launch on the default stream still works");
		return gx_test_done();
	}
	if (argc > 1 && !strcmp(argv[1], "expect-priority")) {
		/* hx_prioset (prio=N): streams are created with the policy's
		 * priority, mapped into the fake's range [-5, 0], flags kept */
		int want_prio = argc > 2 ? atoi(argv[2]) : -5;
		int keep = argc > 3 && !strcmp(argv[3], "keep"); /* a policy that keeps priorities */
		int want_a = keep ? 0 : want_prio, want_b = keep ? -1 : want_prio;
		CUstream a, b, c;
		int pa = 1, pb = 1, pc = 1;
		unsigned fa = 0, fb = 0;
		long wp = count("cuStreamCreateWithPriority"), plain = count("cuStreamCreate");
		GX_CHECK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS &&
				 cuStreamGetPriority(a, &pa) == CUDA_SUCCESS && cuStreamGetFlags(a, &fa) == CUDA_SUCCESS,
			 "cuStreamCreate under the policy");
		GX_CHECK(pa == want_a && fa == CU_STREAM_NON_BLOCKING,
			 "cuStreamCreate: priority %d (want %d), flags %u kept", pa, want_a, fa);
		GX_CHECK(cuStreamCreateWithPriority(&b, CU_STREAM_DEFAULT, -1) == CUDA_SUCCESS &&
				 cuStreamGetPriority(b, &pb) == CUDA_SUCCESS && cuStreamGetFlags(b, &fb) == CUDA_SUCCESS,
			 "cuStreamCreateWithPriority under the policy");
		GX_CHECK(pb == want_b && fb == CU_STREAM_DEFAULT,
			 "cuStreamCreateWithPriority(-1): priority %d (want %d), flags %u kept", pb, want_b, fb);
		GX_CHECK(cuStreamCreateWithPriority(&c, 0, want_prio) == CUDA_SUCCESS &&
				 cuStreamGetPriority(c, &pc) == CUDA_SUCCESS && pc == want_prio,
			 "a stream asking for the policy's priority gets it (%d)", pc);
		long wp2 = count("cuStreamCreateWithPriority"), plain2 = count("cuStreamCreate");
		if (keep)
			GX_CHECK(wp2 == wp + 2 && plain2 == plain + 1,
				 "priorities kept: the application's calls reach the driver unchanged");
		else if (want_prio)
			GX_CHECK(wp2 == wp + 3 && plain2 == plain,
				 "the driver saw cuStreamCreateWithPriority 3 times (%ld), cuStreamCreate %ld times",
				 wp2 - wp, plain2 - plain);
		else
			GX_CHECK(wp2 == wp + 2 && plain2 == plain + 1,
				 "priority 0 (the default): cuStreamCreate stays cuStreamCreate (%ld), %ld with priority",
				 plain2 - plain, wp2 - wp);
		uint64_t a0 = p;
		size_t s0 = sizeof(a0);
		void *ex[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &a0, CU_LAUNCH_PARAM_BUFFER_SIZE, &s0, CU_LAUNCH_PARAM_END};
		GX_CHECK(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, a, NULL, ex) == CUDA_SUCCESS, "launch on such a stream");
		cuStreamDestroy(a);
		cuStreamDestroy(b);
		cuStreamDestroy(c);
		return gx_test_done();
	}
	long before = count("cuMemPrefetchAsync_v2");
	uint64_t arg = p;
	size_t sz = sizeof(arg);
	void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &arg, CU_LAUNCH_PARAM_BUFFER_SIZE, &sz, CU_LAUNCH_PARAM_END};
	GX_CHECK(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, extra) == CUDA_SUCCESS, "launch succeeds");
	long after = count("cuMemPrefetchAsync_v2");
	if (want)
		GX_CHECK(after > before, "launch on managed memory issued cuMemPrefetchAsync (%ld)", after - before);
	else
		GX_CHECK(after == before, "%s: no cuMemPrefetchAsync (%ld)", kmod ? "gpuext.ko" : "no policy",
			 after - before);
	/* resident now: a second launch issues nothing */
	before = after;
	cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, extra);
	GX_CHECK(count("cuMemPrefetchAsync_v2") == before, "resident data: no second prefetch");
	if (want || kmod) {
		/* a host synchronisation (any of the driver's entry points): the
		 * CPU may touch the data, the next launch prefetches (hints) again */
		int more = want ? 1 : 0;
		cuCtxSynchronize_v2(NULL);
		cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, extra);
		GX_CHECK(count("cuMemPrefetchAsync_v2") == before + more,
			 "after cuCtxSynchronize_v2 (cudart 13's cudaDeviceSynchronize) the data is prefetched again");
		before = count("cuMemPrefetchAsync_v2");
		CUevent e;
		cuEventCreate(&e, 0);
		cuEventSynchronize(e);
		cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, extra);
		GX_CHECK(count("cuMemPrefetchAsync_v2") == before + more, "after cuEventSynchronize too");
		before = count("cuMemPrefetchAsync_v2");
		cuEventDestroy(e);
	}
	/* not managed: nothing */
	uint64_t bogus = 0x1000;
	void *extra2[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &bogus, CU_LAUNCH_PARAM_BUFFER_SIZE, &sz, CU_LAUNCH_PARAM_END};
	GX_CHECK(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, extra2) == CUDA_SUCCESS &&
			 count("cuMemPrefetchAsync_v2") == before,
		 "launch without managed arguments: no prefetch");
	GX_CHECK(cuMemFree(p) == CUDA_SUCCESS, "free");
	return gx_test_done();
}
