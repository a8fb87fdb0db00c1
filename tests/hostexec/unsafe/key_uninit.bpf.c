/* Looks up a map with a key it never wrote. */
#include "hx_expect.h"
GX_EXPECT("read of uninitialized stack");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u64);
	__type(value, __u64);
} seen SEC(".maps");

SEC("struct_ops/key_uninit")
int BPF_PROG(key_uninit, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	__u64 *v;

	asm volatile("r1 = %[m] ll\n\tr2 = r10\n\tr2 += -48\n\tcall 1\n\t%[v] = r0"
		     : [v] "=r"(v) : [m] "i"(&seen) : "r0", "r1", "r2", "r3", "r4", "r5");
	return v ? GPU_BYPASS : GPU_DEFAULT;
}
GX_MEM_PREFETCH(key_uninit);
