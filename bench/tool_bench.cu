// tool_bench.cu — the workloads of bench/tool_overhead.sh: vector add, GEMM,
// a 2D stencil and a reduction, each one timed batch >= 1 ms on the H200.
// `rowsoftmax` (not in the default list: `tool_bench 21 rowsoftmax`) is the
// shape of Triton's and Inductor's row reductions (softmax, layer norm): one
// block of 4 warps per row of 1000 floats, 4096 rows (two waves of ~7.5 us
// kernels, 150 per batch), the warps meeting at two block reductions, so a
// delay of warp 0 at entry holds its whole block (docs/devbpf-perf.md).
// Every workload runs WARM batches untimed, then REPS timed batches (CUDA
// events on one stream); prints "bench: NAME median_ms min_ms" per workload
// and a checksum line per workload (outputs must not change under tools).
// usage: tool_bench [REPS] [workload,...]
// `burst` (not in the default list) is the ring stress of tests/gpu/tools.sh:
// one batch = one launch of 2^20 blocks of 64 threads, far more per-block
// records than kernelretsnoop's ring holds. "blocks: NAME N" lines say how
// many blocks each workload (and the initial fills) launched in all.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)

__global__ void vadd(const float *a, const float *b, float *c, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		c[i] = a[i] + b[i];
}

#define TILE 32
__global__ void gemm(const float *A, const float *B, float *C, int n)
{
	__shared__ float As[TILE][TILE], Bs[TILE][TILE];
	int r = blockIdx.y * TILE + threadIdx.y, c = blockIdx.x * TILE + threadIdx.x;
	float acc = 0;
	for (int k = 0; k < n; k += TILE) {
		As[threadIdx.y][threadIdx.x] = A[r * n + k + threadIdx.x];
		Bs[threadIdx.y][threadIdx.x] = B[(k + threadIdx.y) * n + c];
		__syncthreads();
		for (int j = 0; j < TILE; j++)
			acc += As[threadIdx.y][j] * Bs[j][threadIdx.x];
		__syncthreads();
	}
	C[r * n + c] = acc;
}

__global__ void stencil(const float *in, float *out, int n)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
	if (x < 1 || y < 1 || x >= n - 1 || y >= n - 1)
		return;
	size_t i = (size_t)y * n + x;
	out[i] = 0.2f * (in[i] + in[i - 1] + in[i + 1] + in[i - n] + in[i + n]);
}

__global__ void reduce(const float *in, float *out, size_t n)
{
	__shared__ float s[256];
	float v = 0;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		v += in[i];
	s[threadIdx.x] = v;
	__syncthreads();
	for (int k = 128; k > 0; k >>= 1) {
		if (threadIdx.x < k)
			s[threadIdx.x] += s[threadIdx.x + k];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		out[blockIdx.x] = s[0];
}

// one row per block of 128 threads; each thread keeps its 8 elements in
// registers between the two reductions (max, then sum of exponentials)
__global__ void rowsoftmax(const float *in, float *out, int ncols)
{
	__shared__ float part[4];
	const float *row = in + (size_t)blockIdx.x * ncols;
	int t = threadIdx.x;
	float x[8], m = -1e30f;
	for (int i = 0; i < 8; i++) {
		int c = t + i * 128;
		x[i] = c < ncols ? row[c] : -1e30f;
		m = fmaxf(m, x[i]);
	}
	for (int o = 16; o; o >>= 1)
		m = fmaxf(m, __shfl_xor_sync(~0u, m, o));
	if ((t & 31) == 0)
		part[t >> 5] = m;
	__syncthreads();
	m = fmaxf(fmaxf(part[0], part[1]), fmaxf(part[2], part[3]));
	__syncthreads();
	float s = 0;
	for (int i = 0; i < 8; i++) {
		x[i] = __expf(x[i] - m);
		s += x[i];
	}
	for (int o = 16; o; o >>= 1)
		s += __shfl_xor_sync(~0u, s, o);
	if ((t & 31) == 0)
		part[t >> 5] = s;
	__syncthreads();
	s = part[0] + part[1] + part[2] + part[3];
	float *orow = out + (size_t)blockIdx.x * ncols;
	for (int i = 0; i < 8; i++) {
		int c = t + i * 128;
		if (c < ncols)
			orow[c] = x[i] / s;
	}
}

__global__ void burst(float *p)
{
	p[(size_t)blockIdx.x * blockDim.x + threadIdx.x] = (float)(blockIdx.x & 1023);
}

__global__ void fill(float *p, size_t n, float s)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		p[i] = (float)((i * 2654435761u) % 1000) * s;
}

static double checksum(const float *d, size_t n)
{
	std::vector<float> h(std::min(n, (size_t)1 << 20));
	CK(cudaMemcpy(h.data(), d, h.size() * sizeof(float), cudaMemcpyDeviceToHost));
	double s = 0;
	for (float v : h)
		s += v;
	return s;
}

int main(int argc, char **argv)
{
	int reps = argc > 1 ? atoi(argv[1]) : 21;
	const char *only = argc > 2 ? argv[2] : "vadd,gemm,stencil,reduce";
	int sms = 0;
	cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
	const size_t NV = (size_t)1 << 27;       // 512 MiB per vector
	const int NG = 2048;                     // GEMM n
	const int NS = 8192;                     // stencil grid
	const size_t NR = (size_t)1 << 28;       // 1 GiB reduced
	const int SR = 4096, SC = 1000;          // rowsoftmax rows, columns
	float *a, *b, *c, *red;
	size_t big = std::max(NV, std::max((size_t)NS * NS, NR));
	CK(cudaMalloc(&a, big * sizeof(float)));
	CK(cudaMalloc(&b, big * sizeof(float)));
	CK(cudaMalloc(&c, big * sizeof(float)));
	CK(cudaMalloc(&red, 4096 * sizeof(float)));
	fill<<<sms * 8, 256>>>(a, big, 0.001f);
	fill<<<sms * 8, 256>>>(b, big, 0.002f);
	CK(cudaDeviceSynchronize());
	printf("blocks: fill %lld\n", 2LL * sms * 8);
	cudaEvent_t e0, e1;
	cudaEventCreate(&e0);
	cudaEventCreate(&e1);
	struct W { const char *name; int batch; };
	W ws[] = { { "vadd", 4 }, { "gemm", 1 }, { "stencil", 10 }, { "reduce", 4 }, { "rowsoftmax", 150 }, { "burst", 1 } };
	const int NB = 1 << 20; // burst: blocks per launch
	for (W &w : ws) {
		if (!strstr(only, w.name))
			continue;
		long long per = !strcmp(w.name, "vadd") || !strcmp(w.name, "reduce") ? sms * 8
				: !strcmp(w.name, "gemm")			    ? (long long)(NG / TILE) * (NG / TILE)
				: !strcmp(w.name, "stencil")			    ? (long long)(NS / 32) * (NS / 8)
				: !strcmp(w.name, "rowsoftmax")			    ? SR
										    : NB;
		auto once = [&]() {
			if (!strcmp(w.name, "vadd"))
				vadd<<<sms * 8, 256>>>(a, b, c, NV);
			else if (!strcmp(w.name, "gemm"))
				gemm<<<dim3(NG / TILE, NG / TILE), dim3(TILE, TILE)>>>(a, b, c, NG);
			else if (!strcmp(w.name, "stencil"))
				stencil<<<dim3(NS / 32, NS / 8), dim3(32, 8)>>>(a, c, NS);
			else if (!strcmp(w.name, "rowsoftmax"))
				rowsoftmax<<<SR, 128>>>(a, c, SC);
			else if (!strcmp(w.name, "burst"))
				burst<<<NB, 64>>>(c);
			else
				reduce<<<sms * 8, 256>>>(a, red, NR);
		};
		for (int i = 0; i < 3; i++)
			once();
		CK(cudaDeviceSynchronize());
		std::vector<float> t;
		for (int r = 0; r < reps; r++) {
			cudaEventRecord(e0);
			for (int i = 0; i < w.batch; i++)
				once();
			cudaEventRecord(e1);
			CK(cudaEventSynchronize(e1));
			float ms = 0;
			cudaEventElapsedTime(&ms, e0, e1);
			t.push_back(ms);
		}
		std::sort(t.begin(), t.end());
		printf("bench: %s %.4f %.4f\n", w.name, t[t.size() / 2], t[0]);
		printf("blocks: %s %lld\n", w.name, per * (3 + (long long)reps * w.batch));
		printf("checksum: %s %.6e\n", w.name, checksum(!strcmp(w.name, "reduce") ? red : c, !strcmp(w.name, "reduce") ? sms * 8 : NV));
		fflush(stdout);
	}
	return 0;
}
