/* gx_mru — most recently used eviction.
 *
 * What: every activation or access moves the region to the head of the
 * eviction list, so the region touched last is the next victim.
 * When it wins: cyclic scans over a working set larger than device memory
 * (LRU and FIFO then evict exactly what the next pass needs; MRU keeps a
 * stable part resident and serves it from memory on every pass).
 * Trade-offs: terrible for workloads with temporal locality — a region in
 * active use is the first to go. Scope it to the scanning process. */
#include "gx_common.bpf.h"

__u64 nr_moved;

SEC("struct_ops/mru_activate")
int BPF_PROG(mru_activate, struct gpu_mem_ctx *gctx, struct gpu_region *r)
{
	GX_STAT(nr_moved);
	bpf_gpu_move_head(gctx, r);
	return GPU_BYPASS;
}

SEC("struct_ops/mru_access")
int BPF_PROG(mru_access, struct gpu_mem_ctx *gctx, struct gpu_region *r)
{
	GX_STAT(nr_moved);
	bpf_gpu_move_head(gctx, r);
	return GPU_BYPASS;
}

SEC(".struct_ops.link")
struct gpu_mem_ops mru_ops = {
	.gpu_activate = (void *)mru_activate,
	.gpu_access = (void *)mru_access,
	.name = "mru",
};
