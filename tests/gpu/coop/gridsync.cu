// gridsync.cu — a cooperative kernel with grid-wide syncs (the shape of
// cuda-samples' reductionMultiBlockCG): each block sums its slice, grid.sync(),
// block 0 sums the partials, grid.sync() again, every block checks the total.
// The grid is sized with the occupancy API on the function the application
// holds (under a tool, the instrumented one: fewer blocks, as its registers
// say), so the data are integers: the sum is exact whatever the grid.
// Prints the sum, the wall time of the 20 launches, and each launch's GPU
// time from events between them: the first launch apart from the median of
// the others (a tool's one-off costs against its per-launch cost).
#include <cooperative_groups.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cuda_runtime.h>
namespace cg = cooperative_groups;

__global__ void reduce_grid(const int *in, long long *partial, long long *out, int *bad, int n)
{
	cg::grid_group grid = cg::this_grid();
	__shared__ long long s[256];
	long long v = 0;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		v += in[i];
	s[threadIdx.x] = v;
	__syncthreads();
	for (int k = blockDim.x / 2; k; k >>= 1) {
		if (threadIdx.x < k)
			s[threadIdx.x] += s[threadIdx.x + k];
		__syncthreads();
	}
	if (!threadIdx.x)
		partial[blockIdx.x] = s[0];
	grid.sync();
	if (!blockIdx.x && !threadIdx.x) {
		long long t = 0;
		for (int b = 0; b < gridDim.x; b++)
			t += partial[b];
		*out = t;
	}
	grid.sync();
	if (!threadIdx.x && *out < 0)
		atomicAdd(bad, 1);
}

int main()
{
	const int n = 1 << 24;
	int *in;
	long long *partial, *out;
	int *bad, dev = 0, sms = 0, per_sm = 0;
	cudaMalloc(&in, n * sizeof(int));
	int *h = new int[n];
	for (int i = 0; i < n; i++)
		h[i] = i % 7;
	cudaMemcpy(in, h, n * sizeof(int), cudaMemcpyHostToDevice);
	cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
	cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, reduce_grid, 256, 0);
	int blocks = sms * per_sm;
	cudaMalloc(&partial, blocks * sizeof(long long));
	cudaMalloc(&out, sizeof(long long));
	cudaMalloc(&bad, sizeof(int));
	cudaMemset(bad, 0, sizeof(int));
	int nn = n;
	void *args[] = { &in, &partial, &out, &bad, &nn };
	const int reps = 20;
	cudaEvent_t ev[reps + 1];
	for (int r = 0; r <= reps; r++)
		cudaEventCreate(&ev[r]);
	auto t0 = std::chrono::steady_clock::now();
	cudaError_t e = cudaSuccess;
	for (int r = 0; r < reps && e == cudaSuccess; r++) {
		cudaEventRecord(ev[r], 0);
		e = cudaLaunchCooperativeKernel((void *)reduce_grid, blocks, 256, args, 0, 0);
	}
	cudaEventRecord(ev[reps], 0);
	if (e == cudaSuccess)
		e = cudaDeviceSynchronize();
	double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
	long long r = 0;
	int b = 0;
	cudaMemcpy(&r, out, sizeof(r), cudaMemcpyDeviceToHost);
	cudaMemcpy(&b, bad, sizeof(int), cudaMemcpyDeviceToHost);
	printf("sum %lld bad %d status %s\n", r, b, cudaGetErrorString(e));
	printf("blocks %d (%d per SM) time_ms %.3f\n", blocks, per_sm, ms);
	float lt[reps];
	for (int r = 0; r < reps; r++)
		if (cudaEventElapsedTime(&lt[r], ev[r], ev[r + 1]) != cudaSuccess)
			lt[r] = -1;
	float first = lt[0];
	std::sort(lt + 1, lt + reps);
	printf("launch_ms first %.4f median %.4f\n", first, lt[reps / 2]);
	return e == cudaSuccess ? 0 : 1;
}
