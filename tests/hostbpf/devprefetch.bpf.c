/* devprefetch — a device policy that asks the host to prefetch ahead.
 *
 * What: on a global load whose warp leader starts a 2 MiB region, call
 * gdev_mem_prefetch(addr + ahead, 2 MiB): the request travels through the
 * runtime ring to the shim, whose host memory policy (gx_seq, ...) decides
 * what to bring (docs/hostpolicy.md, "Device requests"). One request per
 * region and pass, so the ring is never flooded.
 * When it wins: streaming kernels over managed memory when the launch
 * arguments do not tell the footprint (GPUEXT_HOSTPOLICY_LAUNCH_ARGS=0, or
 * pointers hidden in device-side structures).
 * Trade-offs: every global load is instrumented (the hook runs once per
 * warp and load); the request reaches the host a drain tick (20 ms) later,
 * so AHEAD must cover that much of the stream. Mainly the end-to-end
 * check of device → host requests (tests/gpu/hostpolicy.sh). */
#include "gpuext/gdev_ctx.h"
#include "gpuext/gdev_helpers.h"

#define REGION (2ull << 20)
#define AHEAD (4 * REGION)

SEC("gdev/mem/access")
int devprefetch(struct gdev_ctx *ctx)
{
	if (ctx->op == GDEV_MEM_LOAD && (ctx->addr & (REGION - 1)) < 128)
		gdev_mem_prefetch((ctx->addr & ~(REGION - 1)) + AHEAD, REGION);
	return 0;
}

GDEV_LICENSE("Dual BSD/GPL");
