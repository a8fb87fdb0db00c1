// Kernels for bench/sched_bench (block scheduling on the H200): each block's
// work is set by a table made on the host with a fixed seed, the same at
// every launch (what a policy can learn). Deterministic outputs: every block
// writes only its own, in a fixed order, so the outputs of the native launch
// and of every schedule compare bit for bit. extern "C" so the bench finds
// them by name in the PTX.

// GEMM-like: a tiled SGEMM whose tile (bx, by) sums only the first
// klen[tile] columns of A (a block-sparse or grouped GEMM with uneven
// groups). 32x8 threads, 4 outputs each, tiles staged in shared memory.
#define SK_TILE 32
extern "C" __global__ void gemm_imb(const float *A, const float *B, float *C, const int *klen, int n)
{
	__shared__ float as[SK_TILE][SK_TILE + 1], bs[SK_TILE][SK_TILE + 1];
	int tx = threadIdx.x, ty = threadIdx.y;
	int K = klen[blockIdx.y * gridDim.x + blockIdx.x];
	int row0 = blockIdx.y * SK_TILE, col = blockIdx.x * SK_TILE + tx;
	float acc[4] = {0.f, 0.f, 0.f, 0.f};
	for (int k0 = 0; k0 < K; k0 += SK_TILE) {
		for (int r = ty; r < SK_TILE; r += 8) {
			as[r][tx] = A[(size_t)(row0 + r) * n + k0 + tx];
			bs[r][tx] = B[(size_t)(k0 + r) * n + col];
		}
		__syncthreads();
#pragma unroll 8
		for (int k = 0; k < SK_TILE; k++) {
			float b = bs[k][tx];
#pragma unroll
			for (int i = 0; i < 4; i++)
				acc[i] += as[ty + 8 * i][k] * b;
		}
		__syncthreads();
	}
#pragma unroll
	for (int i = 0; i < 4; i++)
		C[(size_t)(row0 + ty + 8 * i) * n + col] = acc[i];
}

// Compute only: block b runs work[b] rounds of two dependent FMAs per
// thread (latency bound, so co-resident blocks barely slow each other:
// a block's time is its work).
extern "C" __global__ void spin(float *out, const int *work)
{
	int iters = work[blockIdx.x];
	float x = threadIdx.x * 1e-3f, y = 1.0f;
	for (int i = 0; i < iters; i++) {
		y = fmaf(y, 0.9999f, x);
		x = fmaf(x, 1.0001f, -y * 1e-4f);
	}
	out[(size_t)blockIdx.x * blockDim.x + threadIdx.x] = x + y;
}

// Sparse matrix-vector product, CSR, one warp per row, as SHOC's
// spmv_csr_vector kernel does it (rows in a block: blockDim.x / 32).
extern "C" __global__ void spmv_csr_vector(const int *rowptr, const int *colidx, const float *val,
					   const float *x, float *y, int nrows)
{
	int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x & 31;
	if (row >= nrows)
		return;
	float sum = 0.f;
	for (int j = rowptr[row] + lane; j < rowptr[row + 1]; j += 32)
		sum += val[j] * x[colidx[j]];
	for (int o = 16; o > 0; o >>= 1)
		sum += __shfl_down_sync(0xffffffffu, sum, o);
	if (lane == 0)
		y[row] = sum;
}

// Balanced: one element per thread.
extern "C" __global__ void vadd(const float *a, const float *b, float *c, unsigned long long n)
{
	unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
	if (i < n)
		c[i] = a[i] + b[i];
}
