/* A loop bounded only by a value the policy does not control. */
#include "hx_expect.h"
GX_EXPECT("loop not provably bounded within 65536 insns");

__u64 sum;

SEC("struct_ops/loop_unbounded")
int BPF_PROG(loop_unbounded, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	__u64 i, n = f->va;

	for (i = 0; i < n; i++)
		__sync_fetch_and_add(&sum, 1);
	return GPU_DEFAULT;
}
GX_MEM_PREFETCH(loop_unbounded);
