/* Hooks: each section has its own return range and budget. */
#include "gx_test_bpf.h"

__u64 last_unit;

SEC("gdev/sched/should_try_steal") __description("steal hook may return NO_STEAL") __success
int hook_steal(struct gdev_ctx *ctx)
{
	return ctx->unit > 100 ? GDEV_SCHED_NO_STEAL : GDEV_DEFAULT;
}

SEC("gdev/sched/should_try_steal") __description("steal hook returning 2") __failure __msg("return value out of range [0, 1]")
__naked int hook_steal_bad(void)
{
	asm volatile("r0 = 2; exit;" ::: __clobber_all);
}

SEC("gdev/mem/access") __description("memory hook returning 1") __failure __msg("return value out of range [0, 0]")
__naked int hook_mem_ret(void)
{
	asm volatile("r0 = 1; exit;" ::: __clobber_all);
}

SEC("gdev/sched/enter") __description("scheduler enter hook") __success
int hook_enter(struct gdev_ctx *ctx)
{
	last_unit = ctx->unit;
	return 0;
}

SEC("gdev/sched/exit") __description("scheduler exit hook") __success
int hook_exit(struct gdev_ctx *ctx)
{
	last_unit = 0;
	return 0;
}

SEC("gdev/mem/fence") __description("fence hook") __success
int hook_fence(struct gdev_ctx *ctx)
{
	last_unit = ctx->launch_id;
	return 0;
}

SEC("gdev/retprobe/gemm*") __description("kernel exit probe") __success
int hook_retprobe(struct gdev_ctx *ctx)
{
	last_unit = gdev_globaltimer();
	return 0;
}
