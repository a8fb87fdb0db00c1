// A CUDA runtime program for tests/gpu/blocksched.sh: the kernels of
// bench/sched_kernels.cu at small sizes, launched the ways a scheduler must
// survive: one after another, concurrently on 4 streams (the per-stream
// states), and replayed from a captured CUDA graph. Prints one checksum per
// output; built PTX-only (compute_90) so the driver JITs it through the shim,
// which gives it persistent copies. Run with and without the shim under each
// policy: the lines must be the same, and it must finish (a lost unit or a
// barrier the loop broke would hang or change a checksum).
#include <cstdio>
#include <cstring>
#include <vector>
#include "../../bench/sched_kernels.cu"
#include "../../common/gx_cu_check.h" /* CK(): a runtime call that must succeed */

static unsigned long long fnv(const void *p, size_t n)
{
	unsigned long long h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
	return h;
}

template <typename T> static int sum(const char *what, const T *d, size_t n)
{
	std::vector<T> h(n);
	CK(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
	printf("sum %s %016llx\n", what, fnv(h.data(), n * sizeof(T)));
	return 0;
}

int main()
{
	unsigned long long seed = 12345;
	auto rnd = [&](unsigned n) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		return (unsigned)((seed >> 33) % n);
	};
	// gemm_imb, n = 256: 8 x 8 tiles, K from n/4 to n
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
	// spin: 3000 blocks, the last tenth 20..40x
	const int sb = 3000;
	std::vector<int> hw(sb);
	for (int b = 0; b < sb; b++)
		hw[b] = b >= sb - sb / 10 ? 50 * (20 + (int)rnd(21)) : 50;
	int *W;
	float *S;
	CK(cudaMalloc(&W, sb * 4));
	CK(cudaMalloc(&S, (size_t)sb * 128 * 4));
	CK(cudaMemcpy(W, hw.data(), sb * 4, cudaMemcpyHostToDevice));
	// spmv: 4096 rows, power-law degrees up to 2048
	const int nr = 4096;
	std::vector<int> rp(nr + 1), ci;
	std::vector<float> vv, xv(nr);
	for (int r = 0; r < nr; r++) {
		rp[r] = (int)ci.size();
		int d = 4 + (int)(2048.0 / (1 + rnd(2048)));
		for (int j = 0; j < d; j++) {
			ci.push_back((int)rnd(nr));
			vv.push_back((float)(j % 7) - 3.f);
		}
		xv[r] = (float)(r % 11);
	}
	rp[nr] = (int)ci.size();
	int *RP, *CI;
	float *VV, *X, *Y;
	CK(cudaMalloc(&RP, (nr + 1) * 4));
	CK(cudaMalloc(&CI, ci.size() * 4));
	CK(cudaMalloc(&VV, vv.size() * 4));
	CK(cudaMalloc(&X, nr * 4));
	CK(cudaMalloc(&Y, nr * 4));
	CK(cudaMemcpy(RP, rp.data(), (nr + 1) * 4, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(CI, ci.data(), ci.size() * 4, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(VV, vv.data(), vv.size() * 4, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(X, xv.data(), nr * 4, cudaMemcpyHostToDevice));
	// vadd: 1M
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

	// gemm_tile: 4 x 4 tiles of 128 x 128, n = 256, 2..40 K-steps each, with
	// 141 KB of dynamic shared memory (the launcher must carry the attribute
	// over to the copy)
	const int gtn = 256, gtt = 16, gsm = 4 * (128 * 36 + 32 * 132) * 4;
	std::vector<float> ga((size_t)512 * gtn);
	for (size_t i = 0; i < ga.size(); i++)
		ga[i] = (float)((i * 2654435761u) % 1000) / 1000.f;
	std::vector<int> gk(gtt);
	for (int t = 0; t < gtt; t++)
		gk[t] = 2 + (int)rnd(39);
	float *GA, *GB, *GC, *GGC;
	int *GK;
	CK(cudaMalloc(&GA, ga.size() * 4));
	CK(cudaMalloc(&GB, ga.size() * 4));
	CK(cudaMalloc(&GC, (size_t)512 * 512 * 4));
	CK(cudaMalloc(&GGC, (size_t)512 * 512 * 4));
	CK(cudaMalloc(&GK, gtt * 4));
	CK(cudaMemcpy(GA, ga.data(), ga.size() * 4, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(GB, ga.data(), ga.size() * 4, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(GK, gk.data(), gtt * 4, cudaMemcpyHostToDevice));
	CK(cudaFuncSetAttribute(gemm_tile, cudaFuncAttributeMaxDynamicSharedMemorySize, gsm));

	// 1. one after another, each launched three times (policies learn)
	for (int r = 0; r < 3; r++) {
		gemm_imb<<<dim3(n / 32, n / 32), dim3(32, 8)>>>(A, B, C, K, n);
		spin<<<sb, 128>>>(S, W);
		spmv_csr_vector<<<nr / 8, 256>>>(RP, CI, VV, X, Y, nr);
		vadd<<<(unsigned)(vn / 256), 256>>>(va, vb, vc, vn);
		gemm_tile<<<dim3(4, 4), 256, gsm>>>(GA, GB, GC, GK, gtn);
	}
	CK(cudaDeviceSynchronize());
	if (sum("gemm_imb", C, (size_t)n * n) || sum("spin", S, (size_t)sb * 128) || sum("spmv", Y, nr) ||
	    sum("vadd", vc, vn) || sum("gemm_tile", GC, (size_t)512 * 512))
		return 1;

	// 2. four streams at once, each with its own outputs, 25 rounds
	cudaStream_t st[4];
	float *so[4], *co[4];
	for (int i = 0; i < 4; i++) {
		CK(cudaStreamCreateWithFlags(&st[i], cudaStreamNonBlocking));
		CK(cudaMalloc(&so[i], (size_t)sb * 128 * 4));
		CK(cudaMalloc(&co[i], hm.size() * 4));
	}
	for (int r = 0; r < 25; r++)
		for (int i = 0; i < 4; i++) {
			spin<<<sb, 128, 0, st[i]>>>(so[i], W);
			gemm_imb<<<dim3(n / 32, n / 32), dim3(32, 8), 0, st[i]>>>(A, B, co[i], K, n);
		}
	CK(cudaDeviceSynchronize());
	for (int i = 0; i < 4; i++) {
		char w1[32], w2[32];
		snprintf(w1, sizeof(w1), "stream%d_spin", i);
		snprintf(w2, sizeof(w2), "stream%d_gemm", i);
		if (sum(w1, so[i], (size_t)sb * 128) || sum(w2, co[i], hm.size()))
			return 1;
	}

	// 3. a captured graph replayed 20 times
	cudaStream_t cs;
	cudaGraph_t g;
	cudaGraphExec_t ge;
	float *gs, *gc;
	CK(cudaMalloc(&gs, (size_t)sb * 128 * 4));
	CK(cudaMalloc(&gc, hm.size() * 4));
	CK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
	CK(cudaStreamBeginCapture(cs, cudaStreamCaptureModeGlobal));
	spin<<<sb, 128, 0, cs>>>(gs, W);
	gemm_imb<<<dim3(n / 32, n / 32), dim3(32, 8), 0, cs>>>(A, B, gc, K, n);
	gemm_tile<<<dim3(4, 4), 256, gsm, cs>>>(GA, GB, GGC, GK, gtn);
	CK(cudaStreamEndCapture(cs, &g));
	CK(cudaGraphInstantiate(&ge, g, 0));
	for (int r = 0; r < 20; r++)
		CK(cudaGraphLaunch(ge, cs));
	CK(cudaStreamSynchronize(cs));
	if (sum("graph_spin", gs, (size_t)sb * 128) || sum("graph_gemm", gc, hm.size()) ||
	    sum("graph_gemm_tile", GGC, (size_t)512 * 512))
		return 1;
	printf("done\n");
	return 0;
}
