/* gx_fifo — eviction in activation order (first in, first out).
 *
 * What: a region goes to the tail of the eviction list when it becomes
 * resident and never moves again; the head (oldest) is evicted first.
 * When it wins: streaming or phase-structured workloads where a region's
 * age predicts its death, and as a predictable baseline (it is also what
 * the kernel falls back to). It costs nothing per access.
 * Trade-offs: hot regions that were activated early are evicted anyway;
 * LFU or LRU-like policies keep them. */
#include "gx_common.bpf.h"

__u64 nr_activate, nr_access, nr_evict;

SEC("struct_ops/fifo_activate")
int BPF_PROG(fifo_activate, struct gpu_mem_ctx *gctx, struct gpu_region *r)
{
	GX_STAT(nr_activate);
	bpf_gpu_move_tail(gctx, r);
	return GPU_BYPASS;
}

SEC("struct_ops/fifo_access")
int BPF_PROG(fifo_access, struct gpu_mem_ctx *gctx, struct gpu_region *r)
{
	GX_STAT(nr_access);
	return GPU_BYPASS; /* an access does not change the order */
}

SEC("struct_ops/fifo_evict_prepare")
int BPF_PROG(fifo_evict_prepare, struct gpu_mem_ctx *gctx, struct gpu_region *victim)
{
	GX_STAT(nr_evict);
	return GPU_DEFAULT; /* the head goes */
}

SEC(".struct_ops.link")
struct gpu_mem_ops fifo_ops = {
	.gpu_activate = (void *)fifo_activate,
	.gpu_access = (void *)fifo_access,
	.gpu_evict_prepare = (void *)fifo_evict_prepare,
	.name = "fifo",
};
