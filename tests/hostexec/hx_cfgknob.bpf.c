/* hx_cfgknob — a memory policy for tests whose knob lives in `.rodata.cfg`
 * and indexes its counters. The verifiers fold every .rodata* section, so
 * `hits[slot]` is proved in bounds for the knob's value at load, and only
 * for it: a knob changed afterwards would make native code write outside
 * the array (issue 20: `gpuext map update` accepted it, and the next call
 * crashed the application). Each fault counts in hits[slot]. */
#include "gx_common.bpf.h"

const volatile __u32 slot SEC(".rodata.cfg") = 3;

__u64 hits[4];

SEC("struct_ops/cfgknob_prefetch")
int BPF_PROG(cfgknob_prefetch, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	hits[slot]++;
	return GPU_DEFAULT;
}

SEC(".struct_ops.link")
struct gpu_mem_ops cfgknob_ops = {
	.gpu_prefetch = (void *)cfgknob_prefetch,
	.name = "cfgknob",
};
