// golden.cu — memtrace's known answer (tests/gpu/memtrace.sh): out[i] =
// 2 * in[i] + 1 over n = 10000 floats in blocks of 128. Per launch each warp
// w (global index) makes one load and one store; their leader lane's
// addresses are in + 128 w and out + 128 w, 32 lanes, 4 bytes each, but the
// last warp (i = 9984..9999) has 16 lanes: 313 loads and 313 stores.
//   golden LAUNCHES [loop]
// loop: the same accesses made by a grid-stride loop of 4 blocks (each warp
// takes every 16th 32-float chunk: one load and one store a trip), the
// shape whose memory sites keep their sample for the loop's end
// (GX_PTX_MEM_DEFER): the same records are expected.
// stdout: nothing (memtrace's JSON report goes there); stderr: a line
// "golden: in ADDR out ADDR n N warps W launches L checksum C".
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void twice(const float *in, float *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = 2.f * in[i] + 1.f;
}

__global__ void twice_loop(const float *in, float *out, int n)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		out[i] = 2.f * in[i] + 1.f;
}

int main(int argc, char **argv)
{
	const int n = 10000, bs = 128;
	int launches = argc > 1 ? atoi(argv[1]) : 1;
	float *in, *out, *h = new float[n];
	for (int i = 0; i < n; i++)
		h[i] = (float)(i % 97);
	if (cudaMalloc(&in, n * sizeof(float)) || cudaMalloc(&out, n * sizeof(float)) ||
	    cudaMemcpy(in, h, n * sizeof(float), cudaMemcpyHostToDevice))
		return fprintf(stderr, "golden: setup failed\n"), 1;
	bool loop = argc > 2 && argv[2][0] == 'l';
	for (int l = 0; l < launches; l++)
		if (loop)
			twice_loop<<<4, bs>>>(in, out, n);
		else
			twice<<<(n + bs - 1) / bs, bs>>>(in, out, n);
	cudaError_t e = cudaDeviceSynchronize();
	cudaMemcpy(h, out, n * sizeof(float), cudaMemcpyDeviceToHost);
	double s = 0;
	for (int i = 0; i < n; i++)
		s += h[i];
	fprintf(stderr, "golden: in 0x%llx out 0x%llx n %d warps %d launches %d checksum %.6e status %s\n",
		(unsigned long long)in, (unsigned long long)out, n, (n + 31) / 32, launches, s, cudaGetErrorString(e));
	return e != cudaSuccess;
}
