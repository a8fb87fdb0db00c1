// kernels.cuh — the corpus's kernels (float math, integer atomics, shared
// memory), compiled into each runtime-API program and, as PTX, loaded by
// the driver-API ones.
#pragma once
// Values stay exactly representable (multiples of small powers of two), so
// results are bit-identical whether the driver runs nvcc's SASS or JIT-
// compiles the PTX (fused or not): comparisons need no tolerance.
extern "C" __global__ void fill(int n, float *x)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] = (float)(i % 97) * 0.5f;
}

extern "C" __global__ void saxpy(int n, float a, const float *x, float *y)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = a * x[i] + y[i] * 0.5f;
}

extern "C" __global__ void block_sum(int n, const float *x, unsigned long long *out)
{
	__shared__ float s[256];
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	s[threadIdx.x] = i < n ? x[i] : 0.f;
	__syncthreads();
	for (int k = blockDim.x / 2; k > 0; k >>= 1) {
		if (threadIdx.x < k)
			s[threadIdx.x] += s[threadIdx.x + k];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		atomicAdd(out, (unsigned long long)(long long)(s[0] * 1000.f)); // integer: order-independent
}
