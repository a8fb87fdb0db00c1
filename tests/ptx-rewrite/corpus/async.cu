// Asynchronous copies: cp.async (sm_80, via cuda_pipeline), mbarriers, and on
// sm_90 cp.async.bulk and TMA (cp.async.bulk.tensor) through inline asm.
#include <cuda_pipeline.h>
#include <cuda.h>
#include <cstdint>

__global__ void cp_async_pipeline(const float4 *in, float4 *out)
{
	__shared__ float4 buf[2][128];
	int t = threadIdx.x;
	__pipeline_memcpy_async(&buf[0][t], &in[blockIdx.x * 256 + t], sizeof(float4));
	__pipeline_commit();
	__pipeline_memcpy_async(&buf[1][t], &in[blockIdx.x * 256 + 128 + t], sizeof(float4));
	__pipeline_commit();
	__pipeline_wait_prior(1);
	__syncthreads();
	float4 a = buf[0][127 - t];
	__pipeline_wait_prior(0);
	__syncthreads();
	float4 b = buf[1][127 - t];
	out[blockIdx.x * 128 + t] = make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}

__global__ void cp_async_asm(const int *in, int *out)
{
	__shared__ __align__(16) int s[512];
	unsigned dst = (unsigned)__cvta_generic_to_shared(&s[threadIdx.x * 4]);
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst),
		     "l"(in + threadIdx.x * 4));
	asm volatile("cp.async.ca.shared.global [%0], [%1], 4, 2;" ::"r"(dst),
		     "l"(in + threadIdx.x * 4));
	asm volatile("cp.async.commit_group;");
	asm volatile("cp.async.wait_group 0;" ::: "memory");
	asm volatile("cp.async.wait_all;" ::: "memory");
	__syncthreads();
	out[threadIdx.x] = s[(threadIdx.x * 7) % 512];
}

#if __CUDA_ARCH__ >= 900
__global__ void bulk_copy_mbarrier(const int4 *in, int4 *out)
{
	__shared__ __align__(128) int4 s[256];
	__shared__ __align__(8) uint64_t bar;
	unsigned sb = (unsigned)__cvta_generic_to_shared(&bar);
	unsigned ss = (unsigned)__cvta_generic_to_shared(s);
	if (threadIdx.x == 0) {
		asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(sb));
		asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
	}
	__syncthreads();
	if (threadIdx.x == 0) {
		asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 4096;" ::"r"(sb));
		asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
			     "[%0], [%1], 4096, [%2];" ::"r"(ss),
			     "l"(in + blockIdx.x * 256), "r"(sb)
			     : "memory");
	}
	asm volatile("{\n"
		     ".reg .pred P1;\n"
		     "WAIT_%=:\n"
		     "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], 0;\n"
		     "@!P1 bra WAIT_%=;\n"
		     "}\n" ::"r"(sb)
		     : "memory");
	out[blockIdx.x * 256 + threadIdx.x] = s[255 - threadIdx.x];
	__syncthreads();
	if (threadIdx.x == 0) {
		asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
		asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], 4096;" ::"l"(
				     out + blockIdx.x * 256),
			     "r"(ss)
			     : "memory");
		asm volatile("cp.async.bulk.commit_group;");
		asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
	}
}

__global__ void tma_2d(const __grid_constant__ CUtensorMap map, float *out)
{
	__shared__ __align__(128) float tile[32 * 32];
	__shared__ __align__(8) uint64_t bar;
	unsigned sb = (unsigned)__cvta_generic_to_shared(&bar);
	unsigned st = (unsigned)__cvta_generic_to_shared(tile);
	if (threadIdx.x == 0) {
		asm volatile("prefetch.tensormap [%0];" ::"l"(&map) : "memory");
		asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(sb));
		asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
		asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 4096;" ::"r"(sb));
		asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
			     " [%0], [%1, {%2, %3}], [%4];" ::"r"(st),
			     "l"(&map), "r"((int)blockIdx.x * 32), "r"((int)blockIdx.y * 32), "r"(sb)
			     : "memory");
	}
	__syncthreads();
	asm volatile("{\n"
		     ".reg .pred P1;\n"
		     "TMA_WAIT_%=:\n"
		     "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], 0;\n"
		     "@!P1 bra TMA_WAIT_%=;\n"
		     "}\n" ::"r"(sb)
		     : "memory");
	out[(blockIdx.y * gridDim.x + blockIdx.x) * 1024 + threadIdx.x] = tile[threadIdx.x];
	if (threadIdx.x == 0) {
		asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
			     ::"l"(&map), "r"(0), "r"(0), "r"(st) : "memory");
		asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group"
			     " [%0, {%1, %2}], [%3];" ::"l"(&map), "r"(0), "r"(0), "r"(st) : "memory");
		asm volatile("cp.async.bulk.commit_group;");
		asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
	}
}
#endif
