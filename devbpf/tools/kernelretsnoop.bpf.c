/* kernelretsnoop — when did each block of each kernel finish, and where.
 *
 * A retprobe on every kernel: at each `ret`/`exit` the trampoline calls us
 * once per warp; the leader of warp 0 of the block emits one ring record
 * {kernel, block index, SM, %globaltimer}. The formatter groups records by
 * launch (the shim's launch log says how many blocks each launch of a kernel
 * had) and shows, per launch, the finish spread and per-SM block counts; the
 * trace puts one slice per block on the track of its SM.
 *
 * Trade-offs: one record per block (24 M blocks fill a 4 MiB ring quickly:
 * records beyond it are counted as drops, never block the kernel). Warp 0's
 * exit stands for the block's: other warps may finish a little later. A warp
 * whose lanes leave through several `ret` sites calls the hook once per site:
 * the formatter keeps the last record of a (launch, block). */
#include "devbpf/gdev_helpers.h"
#include "devbpf/tools/gx_tools.h"

struct {
	__uint(type, GDEV_MAP_RINGBUF);
	__uint(max_entries, 1 << 22);
} krs_ring SEC(".maps");

SEC("gdev/retprobe/*")
int kernelretsnoop(struct gdev_ctx *ctx)
{
	/* special registers, not the context: warps 1.. touch no memory */
	if (gdev_warpid() != 0)
		return GDEV_DEFAULT;
	struct gx_krs_rec r = {
		.kernel_id = ctx->kernel_id,
		.ts = gdev_globaltimer(),
		.ctaid = { ctx->ctaid_x, ctx->ctaid_y, ctx->ctaid_z },
		.smid = ctx->smid,
		.nctaid = { ctx->nctaid_x, ctx->nctaid_y, ctx->nctaid_z },
		.ntid = ctx->ntid_x * ctx->ntid_y * ctx->ntid_z,
		.launch_id = ctx->launch_id,
	};
	bpf_ringbuf_output(&krs_ring, &r, sizeof(r), 0);
	return GDEV_DEFAULT;
}

GDEV_LICENSE("Dual BSD/GPL");
