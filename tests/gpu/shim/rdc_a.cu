// rdc_a.cu — with rdc_b.cu, a program built with -rdc whose two translation
// units call each other's device functions (the shim must redo the device
// link from the units' PTX). Prints a checksum of both kernels' results.
#include <cuda_runtime.h>
#include <vector>

#include "common.h"

__device__ float b_scale(float x); // rdc_b.cu
__device__ float a_offset(float x) { return x + 0.5f; }
__global__ void rdc_kernel_b(float *y, int n); // rdc_b.cu

__global__ void rdc_kernel_a(float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = b_scale((float)i);
}

int main()
{
	const int n = 1024;
	float *d;
	CK(cudaMalloc(&d, 2 * n * sizeof(float)));
	rdc_kernel_a<<<n / 256, 256>>>(d, n);
	rdc_kernel_b<<<n / 256, 256>>>(d + n, n);
	CK(cudaGetLastError());
	std::vector<float> h(2 * n);
	CK(cudaMemcpy(h.data(), d, h.size() * sizeof(float), cudaMemcpyDeviceToHost));
	double sum = 0;
	for (float v : h)
		sum += v;
	printf("rdc checksum %016llx sum %.1f\n", (unsigned long long)fnv(h.data(), h.size() * sizeof(float)), sum);
	CK(cudaFree(d));
	return 0;
}
