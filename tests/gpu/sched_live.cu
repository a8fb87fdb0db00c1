// A CUDA runtime loop for tests/gpu/attach_compile.sh's live --sched part:
// each iteration runs kernels of bench/sched_kernels.cu (an imbalanced
// SGEMM, a heavy tail, vadd, and the 1-block-per-SM tiled GEMM with 141 KB
// of dynamic shared memory) on one stream, synchronizes, and prints
// "iter I checksum C" over all their outputs: the same every iteration, and
// the same with or without the shim, whatever schedule the blocks ran in.
// Built PTX-only (compute_90), so the driver JITs it through the shim and
// the shim keeps the PTX a live attach rewrites. Prints "ready" before the
// first iteration; runs SL_ITERS iterations (default: until the file
// SL_STOP exists), sleeping SL_SLEEP_MS (default 5) after each.
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <vector>
#include "../../bench/sched_kernels.cu"
#include "../../common/gx_cu_check.h" /* CK(): a runtime call that must succeed */

static unsigned long long fnv(unsigned long long h, const void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
	return h;
}

template <typename T> static unsigned long long sum(unsigned long long h, const T *d, size_t n)
{
	std::vector<T> v(n);
	CK(cudaMemcpy(v.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
	return fnv(h, v.data(), n * sizeof(T));
}

int main()
{
	unsigned long long seed = 12345;
	auto rnd = [&](unsigned n) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		return (unsigned)((seed >> 33) % n);
	};
	const int n = 256, tiles = (n / 32) * (n / 32);
	std::vector<float> hm((size_t)n * n);
	for (size_t i = 0; i < hm.size(); i++)
		hm[i] = (float)((i * 2654435761u) % 1000) / 1000.f;
	std::vector<int> hk(tiles);
	for (int t = 0; t < tiles; t++)
		hk[t] = 32 * (2 + (int)rnd(7));
	float *A, *B, *C;
	int *K;
	CK(cudaMalloc(&A, hm.size() * 4));
	CK(cudaMalloc(&B, hm.size() * 4));
	CK(cudaMalloc(&C, hm.size() * 4));
	CK(cudaMalloc(&K, tiles * 4));
	CK(cudaMemcpy(A, hm.data(), hm.size() * 4, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(B, hm.data(), hm.size() * 4, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(K, hk.data(), tiles * 4, cudaMemcpyHostToDevice));
	const int sb = 3000;
	std::vector<int> hw(sb);
	for (int b = 0; b < sb; b++)
		hw[b] = b >= sb - sb / 10 ? 50 * (20 + (int)rnd(21)) : 50;
	int *W;
	float *S;
	CK(cudaMalloc(&W, sb * 4));
	CK(cudaMalloc(&S, (size_t)sb * 128 * 4));
	CK(cudaMemcpy(W, hw.data(), sb * 4, cudaMemcpyHostToDevice));
	const unsigned long long vn = 1 << 20;
	float *va, *vb, *vc;
	CK(cudaMalloc(&va, vn * 4));
	CK(cudaMalloc(&vb, vn * 4));
	CK(cudaMalloc(&vc, vn * 4));
	std::vector<float> hv(vn);
	for (size_t i = 0; i < vn; i++)
		hv[i] = (float)(i % 1000) * 0.5f;
	CK(cudaMemcpy(va, hv.data(), vn * 4, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(vb, hv.data(), vn * 4, cudaMemcpyHostToDevice));
	const int gtn = 256, gtt = 16, gsm = 4 * (128 * 36 + 32 * 132) * 4;
	std::vector<float> ga((size_t)512 * gtn);
	for (size_t i = 0; i < ga.size(); i++)
		ga[i] = (float)((i * 2654435761u) % 1000) / 1000.f;
	std::vector<int> gk(gtt);
	for (int t = 0; t < gtt; t++)
		gk[t] = 2 + (int)rnd(39);
	float *GA, *GB, *GC;
	int *GK;
	CK(cudaMalloc(&GA, ga.size() * 4));
	CK(cudaMalloc(&GB, ga.size() * 4));
	CK(cudaMalloc(&GC, (size_t)512 * 512 * 4));
	CK(cudaMalloc(&GK, gtt * 4));
	CK(cudaMemcpy(GA, ga.data(), ga.size() * 4, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(GB, ga.data(), ga.size() * 4, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(GK, gk.data(), gtt * 4, cudaMemcpyHostToDevice));
	CK(cudaFuncSetAttribute(gemm_tile, cudaFuncAttributeMaxDynamicSharedMemorySize, gsm));
	cudaStream_t s;
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	const char *stop = getenv("SL_STOP"), *it = getenv("SL_ITERS"), *sl = getenv("SL_SLEEP_MS");
	long iters = it ? atol(it) : 0, sleep_ms = sl ? atol(sl) : 5;
	printf("ready\n");
	fflush(stdout);
	for (long i = 0; !iters || i < iters; i++) {
		gemm_imb<<<dim3(n / 32, n / 32), dim3(32, 8), 0, s>>>(A, B, C, K, n);
		spin<<<sb, 128, 0, s>>>(S, W);
		vadd<<<(unsigned)(vn / 256), 256, 0, s>>>(va, vb, vc, vn);
		gemm_tile<<<dim3(4, 4), 256, gsm, s>>>(GA, GB, GC, GK, gtn);
		CK(cudaGetLastError());
		CK(cudaStreamSynchronize(s));
		unsigned long long h = 1469598103934665603ull;
		h = sum(h, C, (size_t)n * n);
		h = sum(h, S, (size_t)sb * 128);
		h = sum(h, vc, vn);
		h = sum(h, GC, (size_t)512 * 512);
		printf("iter %ld checksum %016llx\n", i, h);
		fflush(stdout);
		if (stop && !access(stop, F_OK))
			break;
		if (sleep_ms > 0)
			usleep((useconds_t)(sleep_ms * 1000));
	}
	printf("done\n");
	return 0;
}
