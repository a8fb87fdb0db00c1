// uvm_prefetch.cu — managed-memory access patterns for the host-policy
// benchmark (bench/uvm_prefetch.sh, tests/gpu/hostpolicy.sh).
//
// Data is initialised on the CPU, then read by kernels: sequential, strided
// (jumping across 2 MiB regions), random; a CPU/GPU ping-pong; a
// three-kernel pipeline. Mode "default" relies on UVM demand paging,
// "hand" adds cudaMemPrefetchAsync before each kernel (what a programmer
// would write). "--hand-stream" issues the same prefetches on a separate
// non-blocking stream and makes the kernel's stream wait on an event — the
// ordering the shim uses — to tell the cost of that ordering from the cost
// of the shim. The gpuext runs are mode "default" under the shim with a
// prefetch policy: the program is not changed. Integer data and integer
// sums make the checksums identical across modes.
//   uvm_prefetch [--hand|--hand-stream] [--mb N] [--reps N] [--only PATTERN]
// Prints "RESULT pattern=P ms=MEDIAN checksum=C api_ms=A" per pattern (A:
// mean host time per repeat spent inside cudaMemPrefetchAsync, hand modes).
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <algorithm>
#include <vector>

#define CK(x)                                                                        \
	do {                                                                         \
		cudaError_t e_ = (x);                                                \
		if (e_ != cudaSuccess) {                                             \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
			exit(1);                                                     \
		}                                                                    \
	} while (0)

static bool hand, hand_stream;
static int dev;
static cudaStream_t pstream;
static cudaEvent_t pevent;
static double api_ms;

static double now_ms()
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void prefetch(const void *p, size_t n)
{
	if (!hand)
		return;
	cudaMemLocation loc = {};
	loc.type = cudaMemLocationTypeDevice;
	loc.id = dev;
	double t0 = now_ms();
	CK(cudaMemPrefetchAsync(p, n, loc, 0, hand_stream ? pstream : 0));
	if (hand_stream) {
		CK(cudaEventRecord(pevent, pstream));
		CK(cudaStreamWaitEvent(0, pevent, 0));
	}
	api_ms += now_ms() - t0;
}

__global__ void k_seq(const uint32_t *a, size_t n, unsigned long long *sum)
{
	unsigned long long s = 0;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		s += a[i];
	atomicAdd(sum, s);
}

// Every element once, in an order that jumps `S` slices apart.
__global__ void k_stride(const uint32_t *a, size_t n, size_t S, unsigned long long *sum)
{
	unsigned long long s = 0;
	size_t per = n / S;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < per * S; i += (size_t)gridDim.x * blockDim.x)
		s += a[(i % S) * per + i / S];
	atomicAdd(sum, s);
}

__global__ void k_random(const uint32_t *a, size_t n, size_t reads, unsigned long long *sum)
{
	unsigned long long s = 0;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < reads; i += (size_t)gridDim.x * blockDim.x) {
		uint64_t h = i * 0x9E3779B97F4A7C15ull;
		h ^= h >> 29;
		s += a[h % n];
	}
	atomicAdd(sum, s);
}

__global__ void k_inc(uint32_t *a, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		a[i] += 3;
}

__global__ void k_map(const uint32_t *x, uint32_t *y, size_t n, uint32_t mul)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		y[i] = x[i] * mul + 1;
}

static void cpu_init(uint32_t *a, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		a[i] = (uint32_t)(i * 2654435761u) ^ seed;
}

static const int GRID = 1320, BLOCK = 256;

int main(int argc, char **argv)
{
	size_t mb = 1024;
	int reps = 5;
	const char *only = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--hand")) hand = true;
		else if (!strcmp(argv[i], "--hand-stream")) hand = hand_stream = true;
		else if (!strcmp(argv[i], "--mb") && i + 1 < argc) mb = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
		else { fprintf(stderr, "usage: uvm_prefetch [--hand|--hand-stream] [--mb N] [--reps N] [--only P]\n"); return 2; }
	}
	CK(cudaGetDevice(&dev));
	if (hand_stream) {
		CK(cudaStreamCreateWithFlags(&pstream, cudaStreamNonBlocking));
		CK(cudaEventCreateWithFlags(&pevent, cudaEventDisableTiming));
	}
	size_t n = mb * (1u << 20) / sizeof(uint32_t);
	unsigned long long *sum;
	CK(cudaMalloc(&sum, sizeof(*sum)));
	const char *pats[] = {"seq", "stride", "random", "pingpong", "pipeline"};
	for (int p = 0; p < 5; p++) {
		if (only && strcmp(only, pats[p]))
			continue;
		std::vector<double> t;
		unsigned long long check = 0;
		api_ms = 0;
		for (int r = 0; r < reps; r++) {
			unsigned long long h = 0;
			double t0 = 0, t1 = 0;
			if (p <= 2) {
				uint32_t *a;
				CK(cudaMallocManaged(&a, n * 4));
				cpu_init(a, n, 7);
				CK(cudaMemset(sum, 0, 8));
				CK(cudaDeviceSynchronize());
				t0 = now_ms();
				prefetch(a, n * 4);
				if (p == 0) k_seq<<<GRID, BLOCK>>>(a, n, sum);
				if (p == 1) k_stride<<<GRID, BLOCK>>>(a, n, 4096, sum);
				if (p == 2) k_random<<<GRID, BLOCK>>>(a, n, n / 4, sum);
				CK(cudaGetLastError());
				CK(cudaDeviceSynchronize());
				t1 = now_ms();
				CK(cudaMemcpy(&h, sum, 8, cudaMemcpyDeviceToHost));
				CK(cudaFree(a));
			} else if (p == 3) {
				size_t m = n / 4;
				uint32_t *a;
				CK(cudaMallocManaged(&a, m * 4));
				cpu_init(a, m, 3);
				CK(cudaDeviceSynchronize());
				t0 = now_ms();
				for (int it = 0; it < 4; it++) {
					for (size_t i = 0; i < m; i += 1) a[i] += 1;
					prefetch(a, m * 4);
					k_inc<<<GRID, BLOCK>>>(a, m);
					CK(cudaDeviceSynchronize());
				}
				CK(cudaMemset(sum, 0, 8));
				prefetch(a, m * 4);
				k_seq<<<GRID, BLOCK>>>(a, m, sum);
				CK(cudaDeviceSynchronize());
				t1 = now_ms();
				CK(cudaMemcpy(&h, sum, 8, cudaMemcpyDeviceToHost));
				CK(cudaFree(a));
			} else {
				size_t m = n / 4;
				uint32_t *x, *y, *z;
				CK(cudaMallocManaged(&x, m * 4));
				CK(cudaMallocManaged(&y, m * 4));
				CK(cudaMallocManaged(&z, m * 4));
				cpu_init(x, m, 11);
				CK(cudaMemset(sum, 0, 8));
				CK(cudaDeviceSynchronize());
				t0 = now_ms();
				prefetch(x, m * 4);
				prefetch(y, m * 4);
				k_map<<<GRID, BLOCK>>>(x, y, m, 3);
				prefetch(z, m * 4);
				k_map<<<GRID, BLOCK>>>(y, z, m, 5);
				k_seq<<<GRID, BLOCK>>>(z, m, sum);
				CK(cudaDeviceSynchronize());
				t1 = now_ms();
				CK(cudaMemcpy(&h, sum, 8, cudaMemcpyDeviceToHost));
				CK(cudaFree(x));
				CK(cudaFree(y));
				CK(cudaFree(z));
			}
			if (r && h != check) {
				fprintf(stderr, "%s: checksum differs between repeats\n", pats[p]);
				return 1;
			}
			check = h;
			t.push_back(t1 - t0);
		}
		std::sort(t.begin(), t.end());
		printf("RESULT pattern=%s ms=%.3f checksum=%llu api_ms=%.3f\n", pats[p], t[t.size() / 2], check,
		       api_ms / reps);
		fflush(stdout);
	}
	return 0;
}
