// tools_kern.cu — kernels with known answers for tests/gpu/tools.sh.
// `uneven` gives block b (b % 7 + 1) units of work; every thread writes one
// value, so the output (written to argv[1]) is deterministic and can be
// bit-compared with and without the tools. One exit per warp (no divergent
// returns), so kernelretsnoop sees exactly one finish per block. Launches:
//   A: 1000 blocks x 256 threads   B: 333 blocks x 200 threads (partial warp)
//   C: 2 more launches of A (for launchlate: 3 launches of `uneven` ... plus
//      B's one), then a small copy kernel touching known buffers (memtrace);
//      TOOLS_KERN_BURST=N: N one-block copies after it.
// Prints the facts the script checks: blocks/warps/threads launched, the
// buffer address range, the SM count.
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cuda_runtime.h>

__global__ void uneven(float *out, int iters)
{
	int b = blockIdx.x;
	int work = (b % 7 + 1) * iters;
	float x = threadIdx.x * 0.001f + b;
	for (int i = 0; i < work; i++)
		x = x * 0.999f + 0.5f;
	out[(size_t)b * blockDim.x + threadIdx.x] = x;
}

__global__ void copy(const float *in, float *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = in[i] * 2.0f;
}

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: tools_kern OUTFILE [iters]\n");
		return 2;
	}
	int iters = argc > 2 ? atoi(argv[2]) : 2000;
	const int GA = 1000, TA = 256, GB = 333, TB = 200, NC = 1 << 16;
	size_t na = (size_t)GA * TA, nb = (size_t)GB * TB;
	float *a, *b, *cin, *cout;
	CK(cudaMalloc(&a, na * sizeof(float)));
	CK(cudaMalloc(&b, nb * sizeof(float)));
	CK(cudaMalloc(&cin, NC * sizeof(float)));
	CK(cudaMalloc(&cout, NC * sizeof(float)));
	CK(cudaMemset(cin, 0, NC * sizeof(float)));
	uneven<<<GA, TA>>>(a, iters);
	CK(cudaGetLastError());
	uneven<<<GB, TB>>>(b, iters);
	for (int r = 0; r < 2; r++)
		uneven<<<GA, TA>>>(a, iters);
	copy<<<NC / 256, 256>>>(cin, cout, NC);
	// TOOLS_KERN_BURST=N: N more launches of a one-block copy back to back
	// (the same values again: the output does not change), for launchlate's
	// record table under a launch rate far above its drain period's slots
	const char *burst = getenv("TOOLS_KERN_BURST");
	for (long i = 0, n = burst ? atol(burst) : 0; i < n; i++)
		copy<<<1, 256>>>(cin, cout, 256);
	CK(cudaGetLastError());
	CK(cudaDeviceSynchronize());
	float *ha = (float *)malloc(na * sizeof(float)), *hb = (float *)malloc(nb * sizeof(float));
	float *hc = (float *)malloc(NC * sizeof(float));
	CK(cudaMemcpy(ha, a, na * sizeof(float), cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(hb, b, nb * sizeof(float), cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(hc, cout, NC * sizeof(float), cudaMemcpyDeviceToHost));
	FILE *f = fopen(argv[1], "wb");
	if (!f)
		return 1;
	fwrite(ha, sizeof(float), na, f);
	fwrite(hb, sizeof(float), nb, f);
	fwrite(hc, sizeof(float), NC, f);
	fclose(f);
	int sms = 0;
	cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
	// uneven: 3 launches of A + 1 of B; copy: NC/256 blocks of 256 threads.
	long long blocks = 3LL * GA + GB + NC / 256;
	long long warps = 3LL * GA * (TA / 32) + (long long)GB * ((TB + 31) / 32) + (NC / 256) * 8;
	long long threads = 3LL * GA * TA + (long long)GB * TB + NC;
	fprintf(stderr, "launched blocks=%lld warps=%lld threads=%lld\n", blocks, warps, threads);
	fprintf(stderr, "launches uneven=4 copy=1\n");
	fprintf(stderr, "range");
	const float *lo[4] = { a, b, cin, cout };
	size_t len[4] = { na, nb, (size_t)NC, (size_t)NC };
	for (int i = 0; i < 4; i++)
		fprintf(stderr, " %llu %llu", (unsigned long long)(uintptr_t)lo[i], (unsigned long long)(uintptr_t)(lo[i] + len[i]));
	fprintf(stderr, "\n");
	fprintf(stderr, "sms %d\n", sms);
	return 0;
}
