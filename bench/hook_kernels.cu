// Kernels for bench/hook_overhead: memory-bound (vadd, stencil, reduction)
// and compute-bound (tiled SGEMM), each sized to run >= 1 ms on an H200.
// extern "C" so the bench finds them by name in the PTX.
extern "C" __global__ void vadd(const float *a, const float *b, float *c, unsigned long long n)
{
	unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
	if (i < n)
		c[i] = a[i] + b[i];
}

#define TILE 32
extern "C" __global__ void sgemm(const float *A, const float *B, float *C, int n)
{
	__shared__ float as[TILE][TILE], bs[TILE][TILE];
	int tx = threadIdx.x, ty = threadIdx.y;
	int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
	float acc = 0.f;
	for (int k0 = 0; k0 < n; k0 += TILE) {
		as[ty][tx] = A[row * n + k0 + tx];
		bs[ty][tx] = B[(k0 + ty) * n + col];
		__syncthreads();
#pragma unroll
		for (int k = 0; k < TILE; k++)
			acc += as[ty][k] * bs[k][tx];
		__syncthreads();
	}
	C[row * n + col] = acc;
}

extern "C" __global__ void stencil(const float *in, float *out, int w, int h)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
	if (x < 1 || y < 1 || x >= w - 1 || y >= h - 1)
		return;
	size_t i = (size_t)y * w + x;
	out[i] = 0.2f * (in[i] + in[i - 1] + in[i + 1] + in[i - w] + in[i + w]);
}

extern "C" __global__ void reduce(const unsigned *in, unsigned long long *out, unsigned long long n)
{
	__shared__ unsigned long long s[256];
	unsigned long long acc = 0;
	for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
	     i += (unsigned long long)blockDim.x * gridDim.x)
		acc += in[i];
	s[threadIdx.x] = acc;
	__syncthreads();
	for (int k = blockDim.x / 2; k > 0; k >>= 1) {
		if (threadIdx.x < k)
			s[threadIdx.x] += s[threadIdx.x + k];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		atomicAdd(out, s[0]);
}

// Divergence check (hook_overhead, not timed): odd and even lanes of each warp
// run different loops with global stores, so two lane groups of one warp
// reach memory hooks at different times. The handler bound to them checks
// that the context it reads is its own group's (tests/gpu/passes.sh).
extern "C" __global__ void diverge(volatile unsigned *out, int iters)
{
	unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
	unsigned acc = t;
	if (threadIdx.x & 1) {
		for (int i = 0; i < iters; i++) {
			acc = acc * 3 + 1;
			out[t] = acc;
		}
	} else {
		for (int i = 0; i < iters + 1; i++) {
			acc = acc * 5 + 7;
			out[t] = acc;
		}
	}
}
