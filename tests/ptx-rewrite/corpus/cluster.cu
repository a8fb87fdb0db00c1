// Thread-block clusters (sm_90+): __cluster_dims__, cluster barriers,
// distributed shared memory (mapa / ld.shared::cluster), cluster registers.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

__global__ void __cluster_dims__(2, 1, 1) cluster_dsmem(int *out)
{
	__shared__ int s[128];
	cg::cluster_group cl = cg::this_cluster();
	unsigned rank = cl.block_rank();
	s[threadIdx.x] = threadIdx.x + rank * 1000;
	cl.sync();
	int *peer = cl.map_shared_rank(s, rank ^ 1);
	int v = peer[threadIdx.x];
	cl.sync();
	out[blockIdx.x * 128 + threadIdx.x] = v + cl.num_blocks() + cl.dim_blocks().x;
}

__global__ void cluster_regs(unsigned *out)
{
	unsigned cid, nc, crank;
	asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(cid));
	asm volatile("mov.u32 %0, %%nclusterid.x;" : "=r"(nc));
	asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(crank));
	asm volatile("barrier.cluster.arrive.relaxed;\n\tbarrier.cluster.wait;" ::: "memory");
	out[blockIdx.x * blockDim.x + threadIdx.x] = cid + nc + crank;
}
