// threads16.cu — 16 host threads, each with its own stream and buffers,
// launching 200 kernels; per-thread results printed in thread order.
#include <thread>
#include <vector>

#include "common.h"
#include "kernels.cuh"

int main()
{
	const int T = 16, n = 1 << 14;
	std::vector<unsigned long long> res(T);
	std::vector<std::thread> th;
	for (int t = 0; t < T; t++)
		th.emplace_back([&, t] {
			float *x, *y;
			unsigned long long *sum;
			cudaStream_t s;
			CK(cudaStreamCreate(&s));
			CK(cudaMalloc(&x, n * sizeof(float)));
			CK(cudaMalloc(&y, n * sizeof(float)));
			CK(cudaMalloc(&sum, sizeof(*sum)));
			fill<<<n / 256, 256, 0, s>>>(n, x);
			CK(cudaMemsetAsync(y, 0, n * sizeof(float), s));
			CK(cudaMemsetAsync(sum, 0, sizeof(*sum), s));
			for (int i = 0; i < 200; i++)
				saxpy<<<n / 256, 256, 0, s>>>(n, 0.5f + t, x, y);
			block_sum<<<n / 256, 256, 0, s>>>(n, y, sum);
			CK(cudaMemcpyAsync(&res[t], sum, sizeof(*sum), cudaMemcpyDeviceToHost, s));
			CK(cudaStreamSynchronize(s));
			cudaFree(x), cudaFree(y), cudaFree(sum), cudaStreamDestroy(s);
		});
	for (auto &t : th)
		t.join();
	for (int t = 0; t < T; t++)
		printf("thread %d sum %llu\n", t, res[t]);
	return 0;
}
