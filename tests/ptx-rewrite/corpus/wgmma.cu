// Hopper warpgroup MMA (sm_90a): wgmma.fence / mma_async / commit / wait,
// descriptors built from shared memory addresses, setmaxnreg.
#include <cstdint>

__device__ inline uint64_t desc(const void *smem)
{
	uint64_t a = (uint64_t)__cvta_generic_to_shared(smem);
	return ((a & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}

__global__ void __launch_bounds__(128) wgmma_f16(const uint4 *g, float *out)
{
	__shared__ __align__(128) uint4 sa[64 * 16 / 8];
	__shared__ __align__(128) uint4 sb[8 * 16 / 8];
	int t = threadIdx.x;
	sa[t] = g[t];
	if (t < 16)
		sb[t] = g[128 + t];
	__syncthreads();
	float d[4] = {0, 0, 0, 0};
	uint64_t da = desc(sa), db = desc(sb);
	asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
	asm volatile("{\n"
		     ".reg .pred p;\n"
		     "setp.ne.b32 p, %6, 0;\n"
		     "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 "
		     "{%0, %1, %2, %3}, %4, %5, p, 1, 1, 0, 0;\n"
		     "}\n"
		     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
		     : "l"(da), "l"(db), "r"(1));
	asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
	asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
	for (int i = 0; i < 4; i++)
		out[t * 4 + i] = d[i];
}

__global__ void __launch_bounds__(256) wgmma_regs(float *out)
{
	if (threadIdx.x < 128)
		asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
	else
		asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
	out[threadIdx.x] = threadIdx.x;
}
