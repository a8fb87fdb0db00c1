// Compiled by clang (NVPTX back end) rather than nvcc: different register
// naming, .weak wrapper functions, callseq comments, byte-array globals.
#include <cstdio>

__device__ float clang_gdata[64];

__device__ __attribute__((noinline)) float clang_helper(float a, int k)
{
	return a * k + clang_gdata[k & 63];
}

__global__ void clang_saxpy(float a, const float *x, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = clang_helper(a, i) * x[i] + y[i];
}

__global__ void clang_shared_atomics(const int *in, int *out)
{
	__shared__ int s[32];
	if (threadIdx.x < 32)
		s[threadIdx.x] = 0;
	__syncthreads();
	atomicAdd(&s[in[threadIdx.x] & 31], 1);
	atomicMax(&out[0], in[threadIdx.x]);
	atomicCAS(&out[1], 0, in[threadIdx.x]);
	__syncthreads();
	int v = s[threadIdx.x & 31];
	v += __shfl_xor_sync(0xffffffffu, v, 2);
	out[2 + threadIdx.x] = v + __ballot_sync(0xffffffffu, v > 3);
}

__global__ void clang_printf(int n)
{
	if (threadIdx.x == 0)
		printf("clang block %d n=%d\n", blockIdx.x, n);
}
