/* gx_quota — per-process device-memory quota, enforced through eviction
 * order.
 *
 * What: each address space may keep `quota` regions resident at the normal
 * place in the eviction list (tail). Regions it activates or touches while
 * over its quota go to the head, so under pressure the process over its
 * quota pays the evictions and processes within theirs keep their memory.
 * When it wins: several tenants share a GPU with oversubscribed managed
 * memory and one of them streams through much more than its share.
 * Trade-offs: a soft quota — with free memory nobody is limited (no
 * eviction happens until the device is full); the kernel's space_resident
 * count is per address space, so a process with several spaces gets one
 * quota per space. Attach it globally (or per cgroup) to compare tenants. */
#include "gx_common.bpf.h"

const volatile __u32 quota = 16; /* regions (2 MiB each) */

__u64 nr_within, nr_over;

static int place(struct gpu_mem_ctx *gctx, struct gpu_region *r)
{
	if (r->space_resident > quota) {
		GX_STAT(nr_over);
		bpf_gpu_move_head(gctx, r);
		return GPU_BYPASS;
	}
	GX_STAT(nr_within);
	return GPU_DEFAULT;
}

SEC("struct_ops/quota_activate")
int BPF_PROG(quota_activate, struct gpu_mem_ctx *gctx, struct gpu_region *r)
{
	return place(gctx, r);
}

SEC("struct_ops/quota_access")
int BPF_PROG(quota_access, struct gpu_mem_ctx *gctx, struct gpu_region *r)
{
	return place(gctx, r);
}

SEC(".struct_ops.link")
struct gpu_mem_ops quota_ops = {
	.gpu_activate = (void *)quota_activate,
	.gpu_access = (void *)quota_access,
	.name = "quota",
};
