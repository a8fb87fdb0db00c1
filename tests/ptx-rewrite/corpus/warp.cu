// Warp-level primitives: shuffles, votes, match, redux, activemask.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

__global__ void warp_reduce_shfl(const float *in, float *out)
{
	float v = in[blockIdx.x * blockDim.x + threadIdx.x];
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_down_sync(0xffffffffu, v, o);
	if ((threadIdx.x & 31) == 0)
		out[(blockIdx.x * blockDim.x + threadIdx.x) / 32] = v;
}

__global__ void warp_scan_shfl_up(int *data)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	int v = data[i], lane = threadIdx.x & 31;
	for (int o = 1; o < 32; o <<= 1) {
		int n = __shfl_up_sync(0xffffffffu, v, o);
		if (lane >= o)
			v += n;
	}
	data[i] = v + __shfl_xor_sync(0xffffffffu, v, 1) + __shfl_sync(0xffffffffu, v, 0);
}

__global__ void warp_votes(const int *in, unsigned *out)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	int p = in[i] > 0;
	unsigned any = __any_sync(0xffffffffu, p), all = __all_sync(0xffffffffu, p);
	unsigned ballot = __ballot_sync(0xffffffffu, p);
	unsigned act = __activemask();
	if (in[i] & 1) {
		unsigned m = __activemask();
		ballot ^= __ballot_sync(m, in[i] > 10);
	}
	out[i] = any + 2 * all + ballot + act;
}

__global__ void warp_match_redux(const unsigned *in, unsigned *out)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	unsigned v = in[i];
	unsigned m = __match_any_sync(0xffffffffu, v);
	int pred;
	unsigned a = __match_all_sync(0xffffffffu, v, &pred);
	unsigned s = __reduce_add_sync(0xffffffffu, v);
	unsigned mn = __reduce_min_sync(0xffffffffu, v);
	unsigned x = __reduce_xor_sync(0xffffffffu, v);
	out[i] = m + a + pred + s + mn + x;
}

__global__ void tile_groups(const int *in, int *out)
{
	cg::thread_block blk = cg::this_thread_block();
	cg::thread_block_tile<16> t16 = cg::tiled_partition<16>(blk);
	int v = in[blk.thread_rank()];
	for (int o = t16.size() / 2; o > 0; o /= 2)
		v += t16.shfl_down(v, o);
	cg::coalesced_group active = cg::coalesced_threads();
	if (v & 1)
		v += cg::coalesced_threads().thread_rank();
	blk.sync();
	out[blk.thread_rank()] = v + active.size() + t16.meta_group_rank();
}
