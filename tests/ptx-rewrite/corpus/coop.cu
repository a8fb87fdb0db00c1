// Cooperative groups: grid-wide sync (cudaLaunchCooperativeKernel), block
// and tile groups, cg::reduce, memcpy_async through cg.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cooperative_groups/memcpy_async.h>
namespace cg = cooperative_groups;

__global__ void grid_sync_two_phase(float *data, float *partial, int n)
{
	cg::grid_group g = cg::this_grid();
	float s = 0;
	for (int i = g.thread_rank(); i < n; i += g.size())
		s += data[i];
	partial[g.thread_rank()] = s;
	g.sync();
	if (g.thread_rank() == 0) {
		float t = 0;
		for (unsigned i = 0; i < g.size(); i++)
			t += partial[i];
		data[0] = t;
	}
}

__global__ void cg_reduce_tiles(const int *in, int *out)
{
	cg::thread_block b = cg::this_thread_block();
	auto tile = cg::tiled_partition<32>(b);
	int v = in[b.group_index().x * b.size() + b.thread_rank()];
	int s = cg::reduce(tile, v, cg::plus<int>());
	int m = cg::reduce(tile, v, cg::greater<int>());
	if (tile.thread_rank() == 0) {
		atomicAdd(out, s);
		atomicMax(out + 1, m);
	}
}

__global__ void cg_memcpy_async(const float *in, float *out)
{
	__shared__ float s[256];
	cg::thread_block b = cg::this_thread_block();
	cg::memcpy_async(b, s, in + blockIdx.x * 256, sizeof(float) * 256);
	cg::wait(b);
	out[blockIdx.x * 256 + threadIdx.x] = s[255 - threadIdx.x] * 2;
}
