// rt_basic.cu — runtime API: memory, two kernels, a reduction, streams.
// Built three ways by shim.sh: static cudart (default), shared cudart, and
// --default-stream per-thread.
#include "common.h"
#include "kernels.cuh"

int main()
{
	const int n = 1 << 20;
	float *x, *y;
	unsigned long long *sum, hs = 0;
	float *h = (float *)malloc(n * sizeof(float));
	for (int i = 0; i < n; i++)
		h[i] = (float)(i % 1000) * 0.25f;
	CK(cudaMalloc(&x, n * sizeof(float)));
	CK(cudaMalloc(&y, n * sizeof(float)));
	CK(cudaMalloc(&sum, sizeof(*sum)));
	CK(cudaMemcpy(x, h, n * sizeof(float), cudaMemcpyHostToDevice));
	CK(cudaMemset(y, 0, n * sizeof(float)));
	CK(cudaMemset(sum, 0, sizeof(*sum)));
	cudaStream_t s;
	CK(cudaStreamCreate(&s));
	for (int it = 0; it < 10; it++)
		saxpy<<<(n + 255) / 256, 256, 0, s>>>(n, 1.5f, x, y);
	block_sum<<<(n + 255) / 256, 256, 0, s>>>(n, y, sum);
	CK(cudaGetLastError());
	CK(cudaStreamSynchronize(s));
	CK(cudaMemcpy(h, y, n * sizeof(float), cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(&hs, sum, sizeof(hs), cudaMemcpyDeviceToHost));
	printf("y checksum %016llx sum %llu\n", (unsigned long long)fnv(h, n * sizeof(float)), hs);
	CK(cudaStreamDestroy(s));
	cudaFree(x), cudaFree(y), cudaFree(sum);
	free(h);
	return 0;
}
