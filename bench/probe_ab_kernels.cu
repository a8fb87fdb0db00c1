/* probe_ab_kernels — the short barrier kernels issue 40 found the block
 * probe costing most on (bench/probe_ab.c): CuPy's shared-memory 3-point
 * stencil as tests/gpu/ml/perkernel.py writes it (16,384 blocks of 256, one
 * barrier, threads 0 and 255 load a halo element), and a block reduction of
 * the ReductionKernel shape (a tree in shared memory, eight barriers, thread
 * 0 writes the block's sum). Same signature, so the harness launches both
 * alike: grid = n / ELEMS_PER_BLOCK, 256 threads. And bench/tool_bench.cu's
 * kernels (its host code unused): the harness runs its rowsoftmax, where
 * GPU run 92's route row (no probe at all) cost +7 % through the shim's
 * cubin route and nothing as a PTX load. */
#define main tool_bench_main
#include "tool_bench.cu"
#undef main
extern "C" __global__ void stencil3(const float *x, float *y, int n)
{
	__shared__ float t[258];
	int i = blockIdx.x * 256 + threadIdx.x;
	t[threadIdx.x + 1] = i < n ? x[i] : 0.f;
	if (threadIdx.x == 0)
		t[0] = i > 0 && i - 1 < n ? x[i - 1] : 0.f;
	if (threadIdx.x == 255)
		t[257] = i + 1 < n ? x[i + 1] : 0.f;
	__syncthreads();
	if (i < n)
		y[i] = (t[threadIdx.x] + t[threadIdx.x + 1] + t[threadIdx.x + 2]) * (1.f / 3.f);
}

/* 1,024 elements per block: 4 per thread, then the tree. */
extern "C" __global__ void blockred(const float *x, float *y, int n)
{
	__shared__ float s[256];
	int i = blockIdx.x * 1024 + threadIdx.x;
	float a = 0.f;
	for (int k = 0; k < 4; k++) {
		int j = i + k * 256;
		if (j < n)
			a += x[j] * x[j];
	}
	s[threadIdx.x] = a;
	__syncthreads();
	for (int st = 128; st > 0; st >>= 1) {
		if (threadIdx.x < st)
			s[threadIdx.x] += s[threadIdx.x + st];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		y[blockIdx.x] = s[0];
}
