// devrt_place — where a device policy's runtime block should live, measured
// on the kernels it costs most: µs-long ones launched back to back (the
// small fusions of JAX graphs, CuPy's elementwise kernels).
//
// threadhist's probe costs a 4.4 µs saxpy +21 % (bench/results run 40):
// warp 0's leader loads the module's `__gx_devrt` (a pointer in device
// memory), then the map's descriptor through it, then issues three reds;
// the warp waits at its reconvergence point for the two dependent loads.
// This program emulates that probe in CUDA C with the runtime block placed
// several ways, so the next change to the rewriter is chosen by measurement:
//   none               no probe (the kernel as it is)
//   branch only        the leader's branch and the reconvergence, no memory
//   ptr global         today: pointer in a __device__ u64, block in device memory
//   ptr const          the pointer in __constant__, block in device memory
//   blk global         the block itself in the module (__device__): one load
//   blk const          the block itself in __constant__ (constant cache)
//   blk const, no red / one red / no %smid   what of the rest costs
//   map address as a kernel parameter       no load at all (the map's layout
//                      known when the policy is compiled)
// Each variant: 50 launches back to back between two events, the time per
// launch; rounds interleave the variants; medians of ROUNDS (default 11).
// Sizes: 1M floats (the data stays in the 50 MB L2) and 16M (streams from
// HBM). Prints `| ` rows and `bench:` lines.
//
//   nvcc -O3 -arch=sm_90 bench/devrt_place.cu -o devrt_place && ./devrt_place [ROUNDS]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                                       \
	do {                                                                                        \
		cudaError_t e_ = (x);                                                               \
		if (e_ != cudaSuccess) {                                                            \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
			exit(1);                                                                    \
		}                                                                                   \
	} while (0)

// The layout of struct gx_devrt / gx_devrt_map (include/gpuext/gx_devrt.h).
struct Map {
	unsigned type, key_size, value_size, max_entries, value_stride, nr_shards, nr_buckets, bucket_size;
	unsigned long long data, data_size;
};
struct Blk {
	unsigned magic, version, nr_maps, flags;
	unsigned long long ring, launch_id, next[4], pad[1];
	Map maps[64];
};

__device__ unsigned long long g_ptr;
__constant__ unsigned long long c_ptr;
__device__ Blk g_blk;
__constant__ Blk c_blk;

enum { NONE, BRANCH, PTR_GLOBAL, PTR_CONST, BLK_GLOBAL, BLK_CONST, BLK_CONST_NORED, BLK_CONST_ONE, RED_NOSREG, PARAM, NV };
static const char *const vname[NV] = { "none",      "branch only",		"ptr global (today)",
				       "ptr const", "blk global",		"blk const",
				       "blk const, no red", "blk const, one red", "blk const, no %smid/%warpid",
				       "map address as a kernel parameter" };

__device__ __forceinline__ unsigned sreg_smid()
{
	unsigned r;
	asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
	return r;
}
__device__ __forceinline__ unsigned sreg_warpid()
{
	unsigned r;
	asm volatile("mov.u32 %0, %%warpid;" : "=r"(r));
	return r;
}

template <int V> __device__ __forceinline__ void probe(unsigned long long pdata)
{
	if (V == NONE || threadIdx.x >= 32)
		return;
	if (threadIdx.x == 0 && V != BRANCH) {
		const Map *m = V == PTR_GLOBAL ? &((const Blk *)g_ptr)->maps[0]
			       : V == PTR_CONST ? &((const Blk *)c_ptr)->maps[0]
			       : V == BLK_GLOBAL ? &g_blk.maps[0]
						 : nullptr;
		unsigned ns, me, st;
		unsigned long long data;
		if (V == PARAM) // the layout is the JIT's to know: constants
			ns = 132 * 64, me = 1, st = 24, data = pdata;
		else if (V >= BLK_CONST)
			ns = c_blk.maps[0].nr_shards, me = c_blk.maps[0].max_entries, st = c_blk.maps[0].value_stride,
			data = c_blk.maps[0].data;
		else
			ns = m->nr_shards, me = m->max_entries, st = m->value_stride, data = m->data;
		unsigned s = V == RED_NOSREG ? blockIdx.x & 1023 : sreg_smid() * 64 + sreg_warpid();
		if (s >= ns)
			s = ns ? s % ns : 0;
		if (data && me) {
			unsigned long long v = data + (unsigned long long)s * me * st, n = blockDim.x;
			if (V == BLK_CONST_NORED) { // the address, kept, never written
				if (v == 1)
					asm volatile("red.global.add.u64 [%0], %1;" ::"l"(v), "l"(1ull) : "memory");
				goto out;
			}
			// what the JIT emits for adds whose results are unused
			asm volatile("red.global.add.u64 [%0], %1;" ::"l"(v), "l"(1ull) : "memory");
			if (V == BLK_CONST_ONE)
				goto out;
			asm volatile("red.global.add.u64 [%0], %1;" ::"l"(v + 8), "l"((n + 31) / 32) : "memory");
			asm volatile("red.global.add.u64 [%0], %1;" ::"l"(v + 16), "l"(n) : "memory");
		}
	}
out:
	__syncwarp(); // the rewriter's reconvergence after the site
}

template <int V> __global__ void saxpy(float a, const float *x, float *y, int n, unsigned long long pdata)
{
	probe<V>(pdata);
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = a * x[i] + y[i];
}

typedef void (*kfn)(float, const float *, float *, int, unsigned long long);
static const kfn kern[NV] = { saxpy<NONE>,	    saxpy<BRANCH>,	     saxpy<PTR_GLOBAL>,
			      saxpy<PTR_CONST>,	    saxpy<BLK_GLOBAL>,	     saxpy<BLK_CONST>,
			      saxpy<BLK_CONST_NORED>, saxpy<BLK_CONST_ONE>, saxpy<RED_NOSREG>,
			      saxpy<PARAM> };

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 11;
	if (rounds < 1 || rounds > 101)
		rounds = 11;
	int nsm = 0;
	CK(cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, 0));
	// the map: a per-warp-slot array of one 24-byte value, as threadhist's
	unsigned shards = (unsigned)nsm * 64;
	unsigned long long *data;
	CK(cudaMalloc(&data, (size_t)shards * 24));
	CK(cudaMemset(data, 0, (size_t)shards * 24));
	Blk h = {};
	h.magic = 0x56445847u;
	h.version = 1;
	h.nr_maps = 1;
	h.maps[0] = { 0x1001, 4, 24, 1, 24, shards, 0, 0, (unsigned long long)data, (unsigned long long)shards * 24 };
	Blk *dblk;
	CK(cudaMalloc(&dblk, sizeof(Blk)));
	CK(cudaMemcpy(dblk, &h, sizeof(h), cudaMemcpyHostToDevice));
	unsigned long long p = (unsigned long long)dblk;
	CK(cudaMemcpyToSymbol(g_ptr, &p, sizeof(p)));
	CK(cudaMemcpyToSymbol(c_ptr, &p, sizeof(p)));
	CK(cudaMemcpyToSymbol(g_blk, &h, sizeof(h)));
	CK(cudaMemcpyToSymbol(c_blk, &h, sizeof(h)));

	const int sizes[2] = { 1 << 20, 1 << 24 };
	cudaEvent_t e0, e1;
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	printf("| floats | variant | µs per launch (median) | vs none |\n|---|---|---|---|\n");
	for (int si = 0; si < 2; si++) {
		int n = sizes[si];
		float *x, *y;
		CK(cudaMalloc(&x, (size_t)n * 4));
		CK(cudaMalloc(&y, (size_t)n * 4));
		CK(cudaMemset(x, 0, (size_t)n * 4));
		CK(cudaMemset(y, 0, (size_t)n * 4));
		unsigned blocks = (unsigned)((n + 255) / 256);
		std::vector<float> us[NV];
		for (int r = -1; r < rounds; r++) // round -1: warm-up
			for (int v = 0; v < NV; v++) {
				CK(cudaEventRecord(e0));
				for (int k = 0; k < 50; k++)
					kern[v]<<<blocks, 256>>>(1.0001f, x, y, n, (unsigned long long)data);
				CK(cudaEventRecord(e1));
				CK(cudaEventSynchronize(e1));
				float ms;
				CK(cudaEventElapsedTime(&ms, e0, e1));
				if (r >= 0)
					us[v].push_back(ms * 1000 / 50);
			}
		CK(cudaGetLastError());
		float base = 0;
		for (int v = 0; v < NV; v++) {
			std::sort(us[v].begin(), us[v].end());
			float med = us[v][us[v].size() / 2];
			if (!v)
				base = med;
			printf("| %d | %s | %.3f | %+.1f %% |\n", n, vname[v], med, 100.0 * (med / base - 1));
			printf("bench: devrt_place %d %s %.3f us %+.1f %%\n", n, vname[v], med, 100.0 * (med / base - 1));
		}
		CK(cudaFree(x));
		CK(cudaFree(y));
	}
	// the counters saw every block of every probed launch (a probe compiled
	// away would measure nothing)
	unsigned long long *hc = (unsigned long long *)malloc((size_t)shards * 24), blocks_seen = 0;
	CK(cudaMemcpy(hc, data, (size_t)shards * 24, cudaMemcpyDeviceToHost));
	for (unsigned s = 0; s < shards; s++)
		blocks_seen += hc[s * 3];
	unsigned long long want = 0;
	for (int si = 0; si < 2; si++)
		want += (unsigned long long)((sizes[si] + 255) / 256) * 50 * (rounds + 1) * 7; /* 7 variants count */
	printf("%s - devrt_place: the probes counted %llu blocks (want %llu)\n", blocks_seen == want ? "ok" : "not ok",
	       blocks_seen, want);
	return blocks_seen == want ? 0 : 1;
}
