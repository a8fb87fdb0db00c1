// cudart_probe.cu — a real nvcc-built program (static cudart) for the CPU
// tests: against the fake driver it must at least reach the shim through
// dlopen("libcuda.so.1") + cuGetProcAddress_v2; on a GPU it runs a kernel.
#include <cstdio>

__global__ void add1(int *p) { p[threadIdx.x] += 1; }

int main()
{
	int n = -1;
	cudaError_t e = cudaGetDeviceCount(&n);
	printf("cudaGetDeviceCount: %d (%s), %d devices\n", (int)e, cudaGetErrorName(e), n);
	if (e != cudaSuccess)
		return 3;
	int *d, h[32];
	for (int i = 0; i < 32; i++)
		h[i] = i;
	cudaMalloc(&d, sizeof(h));
	cudaMemcpy(d, h, sizeof(h), cudaMemcpyHostToDevice);
	add1<<<1, 32>>>(d);
	cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost);
	e = cudaGetLastError();
	printf("kernel: %s, h[31] = %d\n", cudaGetErrorName(e), h[31]);
	return e == cudaSuccess && h[31] == 32 ? 0 : 4;
}
