// hostpolicy_streams — streams created by an unchanged CUDA program under a
// host scheduling policy (tests/gpu/hostpolicy.sh): prints each stream's
// priority and flags as the driver reports them, the device's priority
// range, and a checksum of kernels run on those streams over managed
// memory, so runs with and without the shim can be compared.
// A second part measures launch ordering: a flood of long kernels on a
// default-priority stream, then one short kernel on a stream the program
// created with the greatest priority; prints how long the short one took
// from its launch (the GPU dispatches pending blocks of higher-priority
// streams first, so it depends on the priorities a policy leaves).
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CK(x)                                                                      \
	do {                                                                       \
		cudaError_t e_ = (x);                                              \
		if (e_ != cudaSuccess) {                                           \
			fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));  \
			return 1;                                                  \
		}                                                                  \
	} while (0)

__global__ void k_fill(unsigned long long *a, size_t n, unsigned long long seed)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		a[i] = (i * 2654435761ull) ^ seed;
}

__global__ void k_spin(unsigned long long cycles, unsigned long long *sink)
{
	unsigned long long t0 = clock64(), x = threadIdx.x;
	while (clock64() - t0 < cycles)
		x = x * 6364136223846793005ull + 1;
	if (x == 42)
		*sink = x;
}

int main(int argc, char **argv)
{
	int least = 0, greatest = 0;
	CK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
	cudaStream_t s[3];
	CK(cudaStreamCreate(&s[0]));
	CK(cudaStreamCreateWithFlags(&s[1], cudaStreamNonBlocking));
	CK(cudaStreamCreateWithPriority(&s[2], cudaStreamNonBlocking, least));
	int pr[3];
	unsigned fl[3];
	for (int i = 0; i < 3; i++) {
		CK(cudaStreamGetPriority(s[i], &pr[i]));
		CK(cudaStreamGetFlags(s[i], &fl[i]));
	}
	printf("RANGE least=%d greatest=%d\n", least, greatest);
	printf("STREAMS prio=%d,%d,%d flags=%u,%u,%u\n", pr[0], pr[1], pr[2], fl[0], fl[1], fl[2]);
	const size_t n = 1 << 24;
	unsigned long long *a;
	CK(cudaMallocManaged(&a, 3 * n * sizeof(*a)));
	for (int i = 0; i < 3; i++)
		k_fill<<<256, 256, 0, s[i]>>>(a + i * n, n, (unsigned long long)i + 1);
	CK(cudaDeviceSynchronize());
	unsigned long long sum = 0;
	for (size_t i = 0; i < 3 * n; i++)
		sum += a[i] * (i % 7 + 1);
	printf("RESULT checksum=%llu\n", sum);
	CK(cudaFree(a));
	for (int i = 0; i < 3; i++)
		CK(cudaStreamDestroy(s[i]));

	// Launch ordering: bg floods the GPU, fg's short kernel is measured.
	int sms = 0;
	CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	cudaStream_t bg, fg;
	CK(cudaStreamCreateWithFlags(&bg, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithPriority(&fg, cudaStreamNonBlocking, greatest)); /* the app's latency stream */
	int pbg, pfg;
	CK(cudaStreamGetPriority(bg, &pbg));
	CK(cudaStreamGetPriority(fg, &pfg));
	unsigned long long *sink;
	CK(cudaMalloc(&sink, 8));
	int rounds = argc > 1 ? atoi(argv[1]) : 5;
	float best = 1e30f, total = 0;
	for (int r = 0; r < rounds; r++) {
		cudaEvent_t e0, e1;
		CK(cudaEventCreate(&e0));
		CK(cudaEventCreate(&e1));
		for (int k = 0; k < 8; k++) /* ~8 x 2 ms of full-GPU work queued */
			k_spin<<<sms * 16, 256, 0, bg>>>(3000000ull, sink);
		CK(cudaEventRecord(e0, fg));
		k_spin<<<sms, 256, 0, fg>>>(20000ull, sink);
		CK(cudaEventRecord(e1, fg));
		CK(cudaEventSynchronize(e1));
		float ms = 0;
		CK(cudaEventElapsedTime(&ms, e0, e1));
		total += ms;
		best = ms < best ? ms : best;
		CK(cudaDeviceSynchronize());
		CK(cudaEventDestroy(e0));
		CK(cudaEventDestroy(e1));
	}
	printf("ORDER bg_prio=%d fg_prio=%d fg_ms_min=%.3f fg_ms_avg=%.3f\n", pbg, pfg, best, total / rounds);
	CK(cudaFree(sink));
	CK(cudaStreamDestroy(bg));
	CK(cudaStreamDestroy(fg));
	return 0;
}
