// devbpf_kernels.cu — kernels of the devbpf GPU test, compiled to relocatable
// PTX (nvcc -rdc -ptx) and linked by the CUDA driver with the JIT's policy
// PTX. They call the policies the way ptx-rewrite's trampolines do: the warp
// leader (ffs(activemask)) builds a struct gdev_ctx and calls the .func.
//  -DGX_KERNELS_CHECK: gx_check, the differential test's event stream
//  -DGX_KERNELS_BENCH: gx_bench, map update cost: aggregated vs per-thread
#include "gpuext/gdev_ctx.h"
#include "tests/devbpf/gpu/gpu_common.h"

static __device__ __forceinline__ unsigned sreg_smid()
{
	unsigned r;
	asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
	return r;
}

static __device__ __forceinline__ void fill(struct gdev_ctx *c, unsigned long long kid,
					    unsigned mask, unsigned nr, unsigned hook)
{
	c->kernel_id = kid;
	c->launch_id = 0;
	c->addr = 0;
	c->size = 4;
	c->op = GDEV_MEM_LOAD;
	c->space = GDEV_SPACE_GLOBAL;
	c->active_mask = mask;
	c->nr_active = nr;
	c->hook = hook;
	c->ctaid_x = blockIdx.x, c->ctaid_y = blockIdx.y, c->ctaid_z = blockIdx.z;
	c->nctaid_x = gridDim.x, c->nctaid_y = gridDim.y, c->nctaid_z = gridDim.z;
	c->tid_x = threadIdx.x, c->tid_y = threadIdx.y, c->tid_z = threadIdx.z;
	c->ntid_x = blockDim.x, c->ntid_y = blockDim.y, c->ntid_z = blockDim.z;
	c->smid = sreg_smid();
	c->warpid = threadIdx.x / 32;
	c->leader_lane = threadIdx.x & 31;
	c->unit = 0;
	c->pad0 = 0;
}

#ifdef GX_KERNELS_CHECK
extern "C" __device__ int gxp_gpu_entry(struct gdev_ctx *ctx);
extern "C" __device__ int gxp_gpu_access(struct gdev_ctx *ctx);

extern "C" __global__ void gx_check(unsigned long long kid)
{
	unsigned mask = __activemask();
	if ((int)(threadIdx.x & 31) == __ffs(mask) - 1) {
		struct gdev_ctx c;
		fill(&c, kid, mask, __popc(mask), GDEV_HOOK_ENTRY);
		gxp_gpu_entry(&c);
		c.hook = GDEV_HOOK_MEM;
		for (int i = 0; i < GX_T_ITERS; i++) {
			c.addr = GX_T_ADDR(blockIdx.x, threadIdx.x / 32, i);
			gxp_gpu_access(&c);
		}
	}
	__syncwarp(mask);
}
#endif

#ifdef GX_KERNELS_BENCH
extern "C" __device__ int gxb_count_access(struct gdev_ctx *ctx);

// Each iteration is one "memory access" site with a hook, as the rewriter
// would instrument it. mode 0: no hook; 1: warp-leader aggregated (one policy
// call per warp with nr_active lanes); 2: naive, every thread runs the policy.
extern "C" __global__ void gx_bench(float *data, int iters, int mode)
{
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	float acc = data[i];
	for (int k = 0; k < iters; k++) {
		acc = acc * 1.0001f + 0.5f;
		if (mode == 1) {
			unsigned mask = __activemask();
			if ((int)(threadIdx.x & 31) == __ffs(mask) - 1) {
				struct gdev_ctx c;
				fill(&c, 1, mask, __popc(mask), GDEV_HOOK_MEM);
				c.addr = (unsigned long long)(data + i);
				gxb_count_access(&c);
			}
			__syncwarp(mask);
		} else if (mode == 2) {
			struct gdev_ctx c;
			fill(&c, 1, 1u << (threadIdx.x & 31), 1, GDEV_HOOK_MEM);
			c.addr = (unsigned long long)(data + i);
			gxb_count_access(&c);
		}
	}
	data[i] = acc;
}
#endif
