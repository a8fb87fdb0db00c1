/* test_hostpolicy_shim — end to end through the shim and the fake driver:
 * with GPUEXT_POLICY=gx_seq.bpf.o, a managed allocation passed to a launch
 * leads to cuMemPrefetchAsync calls before the launch; without a usable
 * policy nothing is prefetched and the launch still succeeds.
 * argv[1]: "expect-prefetch", "expect-none", "expect-kmod" (hints go to
 * /dev/gpuext: no cuMemPrefetchAsync; the script counts the hints) or
 * "expect-reject" (a sched policy refuses a new stream: launches on it fail
 * with CUDA_ERROR_NOT_PERMITTED). Run by test_hostpolicy.sh. */
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
		GX_CHECK(cuStreamCreate(&st, 0) == CUDA_SUCCESS, "stream create returns success (post event)");
		GX_CHECK(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, st, NULL, ex) == CUDA_ERROR_NOT_PERMITTED,
			 "launch on the rejected stream fails with CUDA_ERROR_NOT_PERMITTED");
		GX_CHECK(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, ex) == CUDA_SUCCESS,
			 "launch on the default stream still works");
		cuStreamDestroy(st);
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
