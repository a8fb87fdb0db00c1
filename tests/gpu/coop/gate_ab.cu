// gate_ab.cu — times PTX variants of gridsync.cu's kernel (gate_variants.py)
// in one process, interleaved: which part of memtrace's sample gate costs the
// cooperative sample its 2.2x. No gpuext involved: each variant is loaded
// with the driver's JIT as it is, launched cooperatively over the grid the
// occupancy API gives it, and checked (the sum over the same input).
//
//     gate_ab ROUNDS A.ptx B.ptx ...
//
// Prints per variant: registers, blocks per SM, the median GPU time of one
// launch over every round (20 launches a round, events between them) and its
// ratio to the first variant.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda.h>
#include <string>
#include <vector>

#include "../../../common/gx_cu_check.h" /* CU(): driver API calls */

struct variant {
	std::string name;
	CUmodule mod;
	CUfunction fn;
	int regs, per_sm, blocks;
	std::vector<float> us;
};

static std::string slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		exit(1);
	}
	std::string s;
	char buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, f)) > 0)
		s.append(buf, n);
	fclose(f);
	return s;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: gate_ab ROUNDS A.ptx [B.ptx ...]\n");
		return 2;
	}
	int rounds = atoi(argv[1]);
	CUdevice dev;
	CUcontext ctx;
	CU(cuInit(0));
	CU(cuDeviceGet(&dev, 0));
	CU(cuDevicePrimaryCtxRetain(&ctx, dev));
	CU(cuCtxSetCurrent(ctx));
	int sms = 0;
	CU(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));

	const int n = 1 << 24, reps = 20;
	std::vector<int> h(n);
	long long want = 0;
	for (int i = 0; i < n; i++)
		want += h[i] = i % 7;
	CUdeviceptr in, partial, out, bad;
	CU(cuMemAlloc(&in, n * sizeof(int)));
	CU(cuMemcpyHtoD(in, h.data(), n * sizeof(int)));
	CU(cuMemAlloc(&partial, 64 * sms * sizeof(long long)));
	CU(cuMemAlloc(&out, sizeof(long long)));
	CU(cuMemAlloc(&bad, sizeof(int)));

	std::vector<variant> vs;
	for (int a = 2; a < argc; a++) {
		variant v;
		v.name = argv[a];
		size_t sl = v.name.rfind('/');
		if (sl != std::string::npos)
			v.name = v.name.substr(sl + 1);
		std::string ptx = slurp(argv[a]);
		CU(cuModuleLoadData(&v.mod, ptx.c_str()));
		CU(cuModuleGetFunction(&v.fn, v.mod, "_Z11reduce_gridPKiPxS1_Pii"));
		CU(cuFuncGetAttribute(&v.regs, CU_FUNC_ATTRIBUTE_NUM_REGS, v.fn));
		CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&v.per_sm, v.fn, 256, 0));
		v.blocks = std::min(sms * v.per_sm, 64 * sms);
		vs.push_back(v);
	}
	CUevent ev[reps + 1];
	for (auto &e : ev)
		CU(cuEventCreate(&e, CU_EVENT_DEFAULT));
	int fail = 0;
	for (int r = 0; r <= rounds; r++) {
		for (auto &v : vs) {
			int nn = n;
			void *args[] = { &in, &partial, &out, &bad, &nn };
			for (int k = 0; k < reps; k++) {
				CU(cuEventRecord(ev[k], 0));
				CU(cuLaunchCooperativeKernel(v.fn, v.blocks, 1, 1, 256, 1, 1, 0, 0, args));
			}
			CU(cuEventRecord(ev[reps], 0));
			CU(cuCtxSynchronize());
			long long got = 0;
			CU(cuMemcpyDtoH(&got, out, sizeof got));
			if (got != want) {
				fprintf(stderr, "gate_ab: %s: sum %lld, want %lld\n", v.name.c_str(), got, want);
				fail = 1;
			}
			if (r == 0)
				continue; // warm-up round
			for (int k = 1; k < reps; k++) {
				float ms = 0;
				CU(cuEventElapsedTime(&ms, ev[k], ev[k + 1]));
				v.us.push_back(ms * 1000.0f);
			}
		}
	}
	printf("%-22s %5s %7s %10s %7s\n", "variant", "regs", "blk/SM", "launch_us", "ratio");
	float base = 0;
	for (auto &v : vs) {
		std::sort(v.us.begin(), v.us.end());
		float med = v.us.empty() ? 0 : v.us[v.us.size() / 2];
		if (!base)
			base = med;
		printf("%-22s %5d %7d %10.1f %7.3f\n", v.name.c_str(), v.regs, v.per_sm, med, med / base);
	}
	return fail;
}
