// drv.cu — driver API paths: `drv file K.ptx` (cuModuleLoad of a PTX file),
// `drv link A.ptx` (cuLinkCreate + cuLinkAddFile + cuLinkAddData of PTX,
// cuLinkComplete, cuModuleLoadData of the cubin; `drv link A.ptx B.ptx` adds
// B's text with cuLinkAddData and runs its fill2/saxpy2), `drv nvrtc` (NVRTC to PTX,
// cuModuleLoadDataEx with JIT log options). Each runs fill + saxpy x10 and
// prints a checksum.
#include <cuda.h>
#include <nvrtc.h>
#include <string>

#include "common.h"

static const char *src = R"(
extern "C" __global__ void fill(int n, float *x)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = (float)(i % 97) * 0.5f; }
extern "C" __global__ void saxpy(int n, float a, const float *x, float *y)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i] * 0.5f; }
)";

static std::string read(const char *p)
{
	FILE *f = fopen(p, "rb");
	if (!f) {
		perror(p);
		exit(1);
	}
	std::string s;
	char b[65536];
	size_t n;
	while ((n = fread(b, 1, sizeof(b), f)) > 0)
		s.append(b, n);
	fclose(f);
	return s;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: drv file|link K.ptx | drv nvrtc\n");
		return 2;
	}
	std::string mode = argv[1];
	CU(cuInit(0));
	CUdevice dev;
	CUcontext ctx;
	CU(cuDeviceGet(&dev, 0));
	CU(cuDevicePrimaryCtxRetain(&ctx, dev));
	CU(cuCtxSetCurrent(ctx));
	CUmodule mod;
	CUlinkState ls = nullptr;
	if (mode == "file") {
		CU(cuModuleLoad(&mod, argv[2]));
	} else if (mode == "link") {
		char log[4096] = "";
		CUjit_option o[2] = { CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES };
		void *v[2] = { log, (void *)(uintptr_t)sizeof(log) };
		CU(cuLinkCreate(2, o, v, &ls));
		if (argc < 4) {
			fprintf(stderr, "usage: drv link A.ptx B.ptx\n");
			return 2;
		}
		CU(cuLinkAddFile(ls, CU_JIT_INPUT_PTX, argv[2], 0, nullptr, nullptr));
		std::string p2 = read(argv[3]);
		CU(cuLinkAddData(ls, CU_JIT_INPUT_PTX, (void *)p2.c_str(), p2.size() + 1, "b.ptx", 0, nullptr, nullptr));
		void *cubin;
		size_t sz;
		CU(cuLinkComplete(ls, &cubin, &sz));
		CU(cuModuleLoadData(&mod, cubin));
	} else if (mode == "nvrtc") {
		nvrtcProgram p;
		if (nvrtcCreateProgram(&p, src, "k.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS)
			return 1;
		int maj = 0, min = 0;
		CU(cuDeviceGetAttribute(&maj, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
		CU(cuDeviceGetAttribute(&min, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
		std::string arch = "--gpu-architecture=compute_" + std::to_string(maj * 10 + min);
		const char *opts[] = { arch.c_str() };
		if (nvrtcCompileProgram(p, 1, opts) != NVRTC_SUCCESS) {
			fprintf(stderr, "nvrtc compile failed\n");
			return 1;
		}
		size_t n;
		nvrtcGetPTXSize(p, &n);
		std::string ptx(n, '\0');
		nvrtcGetPTX(p, &ptx[0]);
		nvrtcDestroyProgram(&p);
		char info[4096] = "";
		CUjit_option o[3] = { CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_LOG_VERBOSE };
		void *v[3] = { info, (void *)(uintptr_t)sizeof(info), (void *)(uintptr_t)1 };
		CU(cuModuleLoadDataEx(&mod, ptx.c_str(), 3, o, v));
		// The driver writes back the log size it used: it must reach us.
		printf("jit info log %s\n", (uintptr_t)v[1] < sizeof(info) ? "written back" : "size not written back");
	} else {
		return 2;
	}
	const bool renamed = mode == "link";
	CUfunction ffill, fsaxpy;
	CU(cuModuleGetFunction(&ffill, mod, renamed ? "fill2" : "fill"));
	CU(cuModuleGetFunction(&fsaxpy, mod, renamed ? "saxpy2" : "saxpy"));
	const int n = 1 << 18;
	CUdeviceptr x, y;
	CU(cuMemAlloc(&x, n * sizeof(float)));
	CU(cuMemAlloc(&y, n * sizeof(float)));
	CU(cuMemsetD32(y, 0, n));
	int nv = n;
	void *fa[] = { &nv, &x };
	CU(cuLaunchKernel(ffill, n / 256, 1, 1, 256, 1, 1, 0, nullptr, fa, nullptr));
	float a = 1.25f;
	void *sa[] = { &nv, &a, &x, &y };
	for (int i = 0; i < 10; i++)
		CU(cuLaunchKernel(fsaxpy, n / 256, 1, 1, 256, 1, 1, 0, nullptr, sa, nullptr));
	float *h = (float *)malloc(n * sizeof(float));
	CU(cuMemcpyDtoH(h, y, n * sizeof(float)));
	printf("%s checksum %016llx\n", mode.c_str(), (unsigned long long)fnv(h, n * sizeof(float)));
	free(h);
	cuMemFree(x), cuMemFree(y);
	CU(cuModuleUnload(mod));
	if (ls)
		CU(cuLinkDestroy(ls));
	CU(cuDevicePrimaryCtxRelease(dev));
	return 0;
}
