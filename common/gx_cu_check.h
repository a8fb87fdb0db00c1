/* gx_cu_check.h — CU(): a driver API call that must succeed (and CK(): a
 * runtime API call, in nvcc-compiled code), for the GPU test programs and
 * benchmarks in C and C++ (header only): on failure
 * the file, line, call and error name go to stderr and the program exits 1,
 * so the run's comparison with and without the shim fails loudly. */
#ifndef GX_CU_CHECK_H
#define GX_CU_CHECK_H
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#define CU(x)                                                                              \
	do {                                                                               \
		CUresult r_ = (x);                                                         \
		if (r_ != CUDA_SUCCESS) {                                                  \
			const char *s_ = "?";                                              \
			cuGetErrorName(r_, &s_);                                           \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, s_);    \
			exit(1);                                                           \
		}                                                                          \
	} while (0)

/* The same as a TAP line on stdout ("not ok - NAME: call: error (line N)"),
 * for programs whose output a GPU script reads as test results. */
#define GX_CU_TAP(name, x)                                                                 \
	do {                                                                               \
		CUresult r_ = (x);                                                         \
		if (r_ != CUDA_SUCCESS) {                                                  \
			const char *s_ = "?";                                              \
			cuGetErrorString(r_, &s_);                                         \
			printf("not ok - %s%s%s: %s (line %d)\n", name, *name ? ": " : "", #x, \
			       s_, __LINE__);                                              \
			exit(1);                                                           \
		}                                                                          \
	} while (0)

/* Device 0 with its primary context current: the start of the driver-API
 * benchmarks (bench/hook_overhead, sched_bench, probe_ab); a TAP line
 * named `name` and exit 1 on failure. */
static inline CUdevice gx_cu_primary_ctx(const char *name)
{
	CUdevice dev;
	CUcontext ctx;
	GX_CU_TAP(name, cuInit(0));
	GX_CU_TAP(name, cuDeviceGet(&dev, 0));
	GX_CU_TAP(name, cuDevicePrimaryCtxRetain(&ctx, dev));
	GX_CU_TAP(name, cuCtxSetCurrent(ctx));
	return dev;
}

#ifdef __CUDACC__
#define CK(x)                                                                              \
	do {                                                                               \
		cudaError_t e_ = (x);                                                      \
		if (e_ != cudaSuccess) {                                                   \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,         \
				cudaGetErrorString(e_));                                   \
			exit(1);                                                           \
		}                                                                          \
	} while (0)
#endif

#endif
