/* record_app — an application with a varied managed-memory life, run under
 * the shim and the fake driver with GPUEXT_HOSTPOLICY_RECORD so that the
 * executor's event stream is recorded from a real shim run (allocations,
 * launch footprints read from launch arguments, syncs, frees, streams with
 * priorities). test_hostexec replays the recording under every policy,
 * native and interpreted, and compares the decisions. Patterns: a
 * sequential sweep in chunks, a strided walk, pseudo-random offsets, a
 * CPU/GPU ping-pong with syncs, a pipeline over three buffers, streams. */
#define CUDA_ENABLE_DEPRECATED 1
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static const char PTX[] = ".version 8.0\n.target sm_80\n.address_size 64\n"
			  ".visible .entry kern2(.param .u64 a, .param .u64 b)\n{\n\tret;\n}\n";

#define MB (1ull << 20)
static CUfunction fn;

static int launch(CUstream s, uint64_t a, uint64_t b)
{
	uint64_t args[2] = {a, b};
	size_t sz = sizeof(args);
	void *ex[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, args, CU_LAUNCH_PARAM_BUFFER_SIZE, &sz, CU_LAUNCH_PARAM_END};
	return cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, s, NULL, ex) != CUDA_SUCCESS;
}

int main(void)
{
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	int bad = 0;
	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx) ||
	    cuModuleLoadData(&mod, PTX) || cuModuleGetFunction(&fn, mod, "kern2")) {
		fprintf(stderr, "record_app: setup failed\n");
		return 1;
	}
	CUdeviceptr big = 0, small = 0, odd = 0, p[3] = {0};
	bad |= cuMemAllocManaged(&big, 256 * MB, CU_MEM_ATTACH_GLOBAL) != CUDA_SUCCESS;
	bad |= cuMemAllocManaged(&small, 64 * 1024, CU_MEM_ATTACH_GLOBAL) != CUDA_SUCCESS;
	bad |= cuMemAllocManaged(&odd, 3 * MB + 4096, CU_MEM_ATTACH_GLOBAL) != CUDA_SUCCESS;
	CUstream s1, s2;
	bad |= cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS;
	bad |= cuStreamCreateWithPriority(&s2, 0, -3) != CUDA_SUCCESS;
	/* sequential sweep in 16 MiB chunks, twice (second pass resident) */
	for (int pass = 0; pass < 2; pass++)
		for (uint64_t off = 0; off < 256 * MB; off += 16 * MB)
			bad |= launch(s1, big + off, small);
	cuCtxSynchronize();
	/* strided single pages, then pseudo-random offsets */
	for (uint64_t i = 0; i < 24; i++)
		bad |= launch(s2, big + i * 10 * MB + (i % 3) * 4096, 0);
	uint64_t r = 88172645463325252ull;
	for (int i = 0; i < 40; i++) {
		r ^= r << 13, r ^= r >> 7, r ^= r << 17;
		bad |= launch(s1, big + (r % (256 * MB)) / 4096 * 4096, odd + (r >> 40) % (3 * MB));
	}
	cuStreamSynchronize(s1);
	/* ping-pong: the CPU touches between kernels */
	for (int i = 0; i < 6; i++) {
		bad |= launch(NULL, odd, big + 128 * MB);
		cuCtxSynchronize();
	}
	/* pipeline over three fresh buffers, freed as it goes */
	for (int i = 0; i < 3; i++)
		bad |= cuMemAllocManaged(&p[i], 40 * MB, CU_MEM_ATTACH_GLOBAL) != CUDA_SUCCESS;
	for (int round = 0; round < 3; round++) {
		bad |= launch(s2, p[0], p[1]);
		bad |= launch(s2, p[1], p[2]);
		bad |= launch(s2, p[2], p[0] + 8 * MB);
		cuStreamSynchronize(s2);
	}
	cuMemFree(p[1]);
	bad |= launch(s1, p[0], p[2]);
	CUstream s3;
	bad |= cuStreamCreateWithPriority(&s3, CU_STREAM_NON_BLOCKING, -5) != CUDA_SUCCESS;
	bad |= launch(s3, big, odd);
	cuStreamDestroy(s2);
	cuStreamDestroy(s3);
	cuCtxSynchronize();
	cuMemFree(p[0]);
	cuMemFree(p[2]);
	cuMemFree(odd);
	cuStreamDestroy(s1);
	printf("%s - record_app: ran its patterns\n", bad ? "not ok" : "ok");
	return bad;
}
