/* blockcount — a device policy as a user writes one outside the project:
 * counts the blocks each kernel entry ran (warp 0's leader of every block adds
 * one) in an array map. tests/gpu/install.sh builds it on the build machine,
 * prepares its JIT cache there (`gpuext tools prepare`), and attaches it on
 * the GPU host from an install that has no LLVM; `gpuext map dump` then
 * shows the count. */
#include "gpuext/gdev_helpers.h"

struct {
	__uint(type, GDEV_MAP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} bc_blocks SEC(".maps");

SEC("gdev/probe/*")
int blockcount(struct gdev_ctx *ctx)
{
	if (ctx->warpid != 0)
		return GDEV_DEFAULT;
	__u32 key = 0;
	__u64 *v = bpf_map_lookup_elem(&bc_blocks, &key);
	if (v)
		__sync_fetch_and_add(v, 1);
	return GDEV_DEFAULT;
}

GDEV_LICENSE("Dual BSD/GPL");
