// Plain SIMT kernels: indexing, grid-stride loops, shared-memory reduction,
// 2D tiles, dynamic shared memory, launch bounds.
#include <cstdint>

__global__ void vec_add(const float *a, const float *b, float *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		c[i] = a[i] + b[i];
}

__global__ void saxpy_grid_stride(float a, const float *x, float *y, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)blockDim.x * gridDim.x)
		y[i] = a * x[i] + y[i];
}

__global__ void __launch_bounds__(256, 2) reduce_sum(const float *in, float *out, int n)
{
	__shared__ float buf[256];
	int t = threadIdx.x, i = blockIdx.x * blockDim.x * 2 + t;
	float v = 0;
	if (i < n)
		v = in[i];
	if (i + blockDim.x < n)
		v += in[i + blockDim.x];
	buf[t] = v;
	__syncthreads();
	for (int s = blockDim.x / 2; s > 0; s >>= 1) {
		if (t < s)
			buf[t] += buf[t + s];
		__syncthreads();
	}
	if (t == 0)
		out[blockIdx.x] = buf[0];
}

__global__ void transpose_tile(const double *in, double *out, int w, int h)
{
	__shared__ double tile[32][33];
	int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
	if (x < w && y < h)
		tile[threadIdx.y][threadIdx.x] = in[(size_t)y * w + x];
	__syncthreads();
	x = blockIdx.y * 32 + threadIdx.x;
	y = blockIdx.x * 32 + threadIdx.y;
	if (x < h && y < w)
		out[(size_t)y * h + x] = tile[threadIdx.x][threadIdx.y];
}

extern __shared__ uint4 dyn_smem[];

__global__ void dyn_shared_copy(const uint4 *in, uint4 *out, int n)
{
	int t = threadIdx.x;
	if (t < n)
		dyn_smem[t] = in[blockIdx.x * n + t];
	__syncthreads();
	if (t < n)
		out[blockIdx.x * n + (n - 1 - t)] = dyn_smem[t];
}

__global__ void int_math(const int64_t *a, int64_t *b, uint8_t *c, short *d, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	int64_t v = a[i];
	b[i] = v / 7 + (v % 13) * __popcll(v) - __clzll(v) + __brevll(v);
	c[i] = (uint8_t)(v >> 3);
	d[i] = (short)__mul24((int)v, 3) + __umulhi((unsigned)v, 77u);
}
