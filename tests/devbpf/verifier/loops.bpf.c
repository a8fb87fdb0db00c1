/* Loops and calls: a loop is accepted when its trip count follows from the
 * values (the verifier unrolls it within the hook budget) or when it is a
 * bpf_loop with a uniform bound; bpf-to-bpf calls, no recursion. */
#include "gx_test_bpf.h"

struct {
	__uint(type, GDEV_MAP_ARRAY);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u64);
} acc SEC(".maps");

__u64 out;

SEC("gdev/probe/k") __description("loop bounded by the context (no provable trip count)") __failure __msg("loop not provably bounded")
int loop_ctx_bound(struct gdev_ctx *ctx)
{
	__u64 s = 0;
#pragma clang loop unroll(disable)
	for (__u32 i = 0; i < ctx->size; i++)
		s += i * i;
	out = s;
	return 0;
}

SEC("gdev/probe/k") __description("while on a context value") __failure __msg("infinite loop detected")
__naked int loop_while_ctx(void)
{
	asm volatile("r2 = *(u64 *)(r1 + 16);"
		     "1: if r2 != 0 goto 1b;"
		     "r0 = 0; exit;" ::: __clobber_all);
}

SEC("gdev/probe/k") __description("endless loop") __failure __msg("infinite loop detected")
__naked int loop_endless(void)
{
	asm volatile("r0 = 0; 1: goto 1b;" ::: __clobber_all);
}

SEC("gdev/probe/k") __description("loop whose counter runs away") __failure __msg("loop not provably bounded")
__naked int loop_runaway(void)
{
	asm volatile("r0 = 0; r2 = 0;"
		     "1: r2 += 1;"
		     "if r2 != 0 goto 1b;"
		     "exit;" ::: __clobber_all);
}

SEC("gdev/probe/k") __description("constant-bound loop") __success
int loop_const(struct gdev_ctx *ctx)
{
	__u64 s = 0;
#pragma clang loop unroll(disable)
	for (__u32 i = 0; i < 16; i++)
		s += i ^ ctx->smid;
	out = s;
	return 0;
}

SEC("gdev/probe/k") __description("loop bounded by min(context, 8)") __success
int loop_min(struct gdev_ctx *ctx)
{
	__u32 n = ctx->nr_active;
	if (n > 8)
		n = 8;
	__u64 s = 0;
#pragma clang loop unroll(disable)
	for (__u32 i = 0; i < n; i++) {
		__u32 k = i;
		__u64 *v = bpf_map_lookup_elem(&acc, &k);
		if (v)
			s += *v;
	}
	out = s;
	return 0;
}

static long sum_cb(__u32 i, void *c)
{
	*(__u64 *)c += i;
	return 0;
}

SEC("gdev/probe/k") __description("bpf_loop with a uniform bound") __success
int loop_bpf_loop(struct gdev_ctx *ctx)
{
	__u64 s = 0;
	bpf_loop(ctx->nr_active & 31, sum_cb, &s, 0);
	out = s;
	return 0;
}

static long bad_cb(__u32 i, void *c)
{
	return 2;
}

SEC("gdev/probe/k") __description("bpf_loop callback returning 2") __failure __msg("bpf_loop callback must return 0 or 1")
int loop_bad_cb(struct gdev_ctx *ctx)
{
	bpf_loop(4, bad_cb, 0, 0);
	return 0;
}

SEC("gdev/probe/k") __description("bpf_loop whose total cost exceeds the budget") __failure __msg("hook budget") __max_insns(200)
int loop_bpf_loop_budget(struct gdev_ctx *ctx)
{
	__u64 s = 0;
	bpf_loop(1000, sum_cb, &s, 0);
	out = s;
	return 0;
}

SEC("gdev/probe/k") __description("bpf_loop with flags") __failure __msg("must be 0")
int loop_bpf_loop_flags(struct gdev_ctx *ctx)
{
	__u64 s = 0;
	bpf_loop(4, sum_cb, &s, 1);
	out = s;
	return 0;
}

static __noinline __u64 mix(__u64 a, __u64 b)
{
	return (a * 31) ^ b;
}

SEC("gdev/probe/k") __description("bpf-to-bpf call") __success
int loop_subprog(struct gdev_ctx *ctx)
{
	out = mix(ctx->kernel_id, ctx->launch_id);
	return 0;
}

SEC("gdev/probe/k") __description("recursion") __failure __msg("recursive call")
__naked int loop_recursion(void)
{
	asm volatile("call 1f; r0 = 0; exit;"
		     "1: call 1b; r0 = 0; exit;" ::: __clobber_all);
}

SEC("gdev/mem/access") __description("straight line longer than the memory hook budget") __failure __msg("path longer than 256 insns")
__naked int loop_long_path(void)
{
	asm volatile("r0 = 0; .rept 300; r0 += 1; .endr; r0 = 0; exit;" ::: __clobber_all);
}

SEC("gdev/probe/k") __description("nested constant loops") __success
int loop_nested(struct gdev_ctx *ctx)
{
	__u64 s = 0;
#pragma clang loop unroll(disable)
	for (__u32 i = 0; i < 6; i++)
#pragma clang loop unroll(disable)
		for (__u32 j = 0; j < 5; j++)
			s += i * j + ctx->smid;
	out = s;
	return 0;
}

SEC("gdev/probe/k") __description("many independent branches (pruning)") __success
int loop_branches(struct gdev_ctx *ctx)
{
	__u64 s = 0;
	if (ctx->size & 1) s += 1;
	if (ctx->size & 2) s += 2;
	if (ctx->size & 4) s += 3;
	if (ctx->size & 8) s += 4;
	if (ctx->size & 16) s += 5;
	if (ctx->size & 32) s += 6;
	if (ctx->size & 64) s += 7;
	if (ctx->size & 128) s += 8;
	if (ctx->op & 1) s += 9;
	if (ctx->op & 2) s += 10;
	if (ctx->op & 4) s += 11;
	if (ctx->op & 8) s += 12;
	if (ctx->op & 16) s += 13;
	if (ctx->op & 32) s += 14;
	if (ctx->op & 64) s += 15;
	if (ctx->op & 128) s += 16;
	out = s;
	return 0;
}

SEC("gdev/probe/k") __description("pointer into a returned frame") __failure __msg("invalid memory access through scalar")
__naked int loop_dangling(void)
{
	asm volatile("r1 = r10; r1 += -8;"
		     "call 1f;"
		     "r2 = *(u64 *)(r10 - 8);"
		     "r0 = *(u64 *)(r2 + 0);"
		     "r0 = 0; exit;"
		     "1: r2 = r10; r2 += -8;"
		     "r3 = 5; *(u64 *)(r10 - 8) = r3;"
		     "*(u64 *)(r1 + 0) = r2;"
		     "r0 = 0; exit;" ::: __clobber_all);
}

SEC("gdev/probe/k") __description("callee writes the caller's stack through a pointer") __success
__naked int loop_callee_writes(void)
{
	asm volatile("r1 = r10; r1 += -8;"
		     "call 1f;"
		     "r0 = *(u64 *)(r10 - 8);"
		     "r0 = 0; exit;"
		     "1: r2 = 7; *(u64 *)(r1 + 0) = r2;"
		     "r0 = 0; exit;" ::: __clobber_all);
}

SEC("gdev/mem/access") __description("24 independent data-only branches (liveness + pruning)") __success
int loop_many_branches(struct gdev_ctx *ctx)
{
	__u64 s = 0;
	if (ctx->size & 1)
		s += 1;
	if (ctx->op & 1)
		s += 2;
	if (ctx->space & 1)
		s += 3;
	if (ctx->nr_active & 1)
		s += 4;
	if (ctx->size & 2)
		s += 5;
	if (ctx->op & 2)
		s += 6;
	if (ctx->space & 2)
		s += 7;
	if (ctx->nr_active & 2)
		s += 8;
	if (ctx->size & 4)
		s += 9;
	if (ctx->op & 4)
		s += 10;
	if (ctx->space & 4)
		s += 11;
	if (ctx->nr_active & 4)
		s += 12;
	if (ctx->size & 8)
		s += 13;
	if (ctx->op & 8)
		s += 14;
	if (ctx->space & 8)
		s += 15;
	if (ctx->nr_active & 8)
		s += 16;
	if (ctx->size & 16)
		s += 17;
	if (ctx->op & 16)
		s += 18;
	if (ctx->space & 16)
		s += 19;
	if (ctx->nr_active & 16)
		s += 20;
	if (ctx->size & 32)
		s += 21;
	if (ctx->op & 32)
		s += 22;
	if (ctx->space & 32)
		s += 23;
	if (ctx->nr_active & 32)
		s += 24;
	out = s;
	return 0;
}
