/* Writes a knob (.rodata is read-only; the verifier folds it into code). */
#include "hx_expect.h"
GX_EXPECT("write into read-only map '.rodata'");

const volatile __u32 knob = 4;

SEC("struct_ops/rodata_write")
int BPF_PROG(rodata_write, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	*(volatile __u32 *)&knob = f->page;
	return GPU_DEFAULT;
}
GX_MEM_PREFETCH(rodata_write);
