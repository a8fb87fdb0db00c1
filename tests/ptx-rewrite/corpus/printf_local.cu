// printf (vprintf calls), local arrays with dynamic indexing (local memory
// depot), device malloc/free, alloca-like stack use, assert, trap.
#include <cstdio>
#include <cassert>

__global__ void print_values(const int *v, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		printf("block %d thread %d value %d %f %s\n", blockIdx.x, threadIdx.x, v[i],
		       (double)v[i] * 0.5, i & 1 ? "odd" : "even");
}

__global__ void local_array(const int *idx, float *out)
{
	float a[64];
	for (int k = 0; k < 64; k++)
		a[k] = k * 1.5f + threadIdx.x;
	int j = idx[threadIdx.x] & 63;
	a[j] += 3;
	out[threadIdx.x] = a[(j * 7) & 63] + a[j];
}

__global__ void device_malloc(int n, int *out)
{
	int *p = (int *)malloc(n * sizeof(int));
	if (!p) {
		out[threadIdx.x] = -1;
		return;
	}
	for (int i = 0; i < n; i++)
		p[i] = i * threadIdx.x;
	int s = 0;
	for (int i = 0; i < n; i++)
		s += p[i];
	free(p);
	out[threadIdx.x] = s;
}

__global__ void check_assert(const int *v)
{
	assert(v[threadIdx.x] >= 0);
	if (v[threadIdx.x] == 12345)
		__trap();
	if (v[threadIdx.x] == 54321)
		__brkpt();
}
