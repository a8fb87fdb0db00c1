// launch_overhead.cu — what the shim adds to a kernel launch and to a module
// load. Run the same binary without and with the shim (bench/launch_overhead.sh
// does, alternating runs, and prints medians).
//   launch_overhead drv N      N empty launches through cuLaunchKernel (driver API)
//   launch_overhead rt N       N empty launches through <<<>>> (static cudart)
//   launch_overhead load FILE  time cuModuleLoadData of a PTX file (set
//                              CUDA_CACHE_DISABLE=1 so the driver really JITs)
// Launch modes print: call_ns (median CPU time of one launch call, measured in
// batches of 256 that never fill the queue) and launches_per_s (N launches
// back to back, then one synchronize).
#include <algorithm>
#include <chrono>
#include <cuda.h>
#include <string>
#include <vector>

#include "../common/gx_cu_check.h" /* CU(): driver API calls */

__global__ void empty_rt() {}

static const char empty_ptx[] = ".version 8.0\n.target sm_80\n.address_size 64\n"
				".visible .entry empty()\n{\n\tret;\n}\n";

static double now()
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

template <class F> static void measure(int n, F launch, void (*sync)())
{
	for (int i = 0; i < 2000; i++) // warm up
		launch();
	sync();
	std::vector<double> per;
	const int B = 256;
	for (int done = 0; done < n; done += B) {
		double t0 = now();
		for (int i = 0; i < B; i++)
			launch();
		double t1 = now();
		sync();
		per.push_back((t1 - t0) / B * 1e9);
	}
	std::sort(per.begin(), per.end());
	double t0 = now();
	for (int i = 0; i < n; i++)
		launch();
	sync();
	double t1 = now();
	printf("call_ns %.1f launches_per_s %.0f\n", per[per.size() / 2], n / (t1 - t0));
}

static void ctx_sync() { cuCtxSynchronize(); }
static void rt_sync() { cudaDeviceSynchronize(); }

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: launch_overhead drv|rt N | load FILE.ptx\n");
		return 2;
	}
	std::string mode = argv[1];
	if (mode == "rt") {
		int n = atoi(argv[2]);
		CK(cudaFree(0));
		measure(n, [] { empty_rt<<<1, 1>>>(); }, rt_sync);
		CK(cudaGetLastError());
		return 0;
	}
	CU(cuInit(0));
	CUdevice dev;
	CUcontext ctx;
	CU(cuDeviceGet(&dev, 0));
	CU(cuDevicePrimaryCtxRetain(&ctx, dev));
	CU(cuCtxSetCurrent(ctx));
	if (mode == "load") {
		FILE *f = fopen(argv[2], "rb");
		if (!f) {
			perror(argv[2]);
			return 1;
		}
		std::string s;
		char b[65536];
		size_t k;
		while ((k = fread(b, 1, sizeof(b), f)) > 0)
			s.append(b, k);
		fclose(f);
		CUmodule m;
		double t0 = now();
		CU(cuModuleLoadData(&m, s.c_str()));
		double t1 = now();
		printf("load_ms %.2f bytes %zu\n", (t1 - t0) * 1e3, s.size());
		CU(cuModuleUnload(m));
		return 0;
	}
	CUmodule m;
	CUfunction fn;
	CU(cuModuleLoadData(&m, empty_ptx));
	CU(cuModuleGetFunction(&fn, m, "empty"));
	static CUfunction g;
	g = fn;
	measure(atoi(argv[2]), [] { cuLaunchKernel(g, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr); }, ctx_sync);
	CU(cuCtxSynchronize());
	return 0;
}
