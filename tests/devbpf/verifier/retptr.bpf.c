/* A map lookup factored into a `static __noinline` subprogram (issue 42,
 * point 3): the map value pointer, or null, it returns reaches its caller
 * typed, with its map and offset range, on every return path of its own
 * (one path may return a value of one map, another of a second map, a third
 * null). The caller checks it for null and then reads and writes inside the
 * value as if it had looked it up itself. What stays refused: a dereference
 * without the null check, an access past the value (of the smallest map a
 * path may return), the pointer stored into a map, a branch on a pointer
 * looked up with a lane-varying key, and any other pointer a subprogram returns (its own
 * stack above all) used by the caller. */
#include "gx_test_bpf.h"

struct pair {
	__u64 hits;
	__u64 last;
};

struct {
	__uint(type, GDEV_MAP_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, struct pair);
} pairs SEC(".maps");

struct {
	__uint(type, GDEV_MAP_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} words SEC(".maps");

static __noinline struct pair *pair_of(__u32 k)
{
	return bpf_map_lookup_elem(&pairs, &k);
}

/* three exits: null (key out of range), a 16-byte `pairs` value, an 8-byte
 * `words` value */
static __noinline __u64 *slot_of(__u32 k)
{
	if (k > 7)
		return 0;
	if (k > 3) {
		__u32 w = k - 4;
		return bpf_map_lookup_elem(&words, &w);
	}
	return bpf_map_lookup_elem(&pairs, &k);
}

SEC("gdev/probe/k") __description("subprogram returns a lookup; checked, written inside the value") __success
int retptr_checked(struct gdev_ctx *ctx)
{
	struct pair *p = pair_of(ctx->smid & 3);

	if (!p)
		return 0;
	p->hits += 1;
	p->last = ctx->kernel_id;
	return 0;
}

SEC("gdev/probe/k") __description("subprogram with three exits (null, two maps); first word written") __success
int retptr_paths(struct gdev_ctx *ctx)
{
	__u64 *v = slot_of(ctx->smid & 15);

	if (!v)
		return 0;
	*v += 1;
	return 0;
}

SEC("gdev/probe/k") __description("subprogram's lookup dereferenced without the null check") __failure
__msg("map value pointer may be null (missing null check)")
int retptr_no_check(struct gdev_ctx *ctx)
{
	struct pair *p = pair_of(ctx->smid & 3);

	p->hits += 1;
	return 0;
}

SEC("gdev/probe/k") __description("checked, then a write one word past the 16-byte value") __failure
__msg("map value access out of bounds (offset 16..16, size 8, value_size 16)")
int retptr_oob(struct gdev_ctx *ctx)
{
	__u64 *p = (__u64 *)pair_of(ctx->smid & 3);

	if (!p)
		return 0;
	*(volatile __u64 *)(p + 2) = 1;
	return 0;
}

SEC("gdev/probe/k") __description("three exits: the second word exists in `pairs`, not in `words`") __failure
__msg("map value access out of bounds (offset 8..8, size 8, value_size 8)")
int retptr_paths_oob(struct gdev_ctx *ctx)
{
	__u64 *v = slot_of(ctx->smid & 15);

	if (!v)
		return 0;
	*(volatile __u64 *)(v + 1) = 1;
	return 0;
}

SEC("gdev/probe/k") __description("subprogram's map value pointer stored into another map value") __failure __exploit
__msg("storing a pointer into a map is not allowed")
int retptr_store(struct gdev_ctx *ctx)
{
	struct pair *p = pair_of(0);
	__u32 k = 0;
	__u64 *w;

	if (!p)
		return 0;
	w = bpf_map_lookup_elem(&words, &k);
	if (!w)
		return 0;
	*w = (__u64)p;
	return 0;
}

SEC("gdev/probe/k") __description("subprogram's lookup with a lane-varying key: the caller's null check varies")
__failure __msg("branch on lane-varying value")
int retptr_varying(struct gdev_ctx *ctx)
{
	struct pair *p = pair_of(gdev_laneid() & 3);

	if (!p)
		return 0;
	p->hits = 1;
	return 0;
}

SEC("gdev/probe/k") __description("the program returns the pointer a subprogram looked up") __failure
__msg("returning a pointer is not allowed")
__naked int retptr_returned(void)
{
	asm volatile("call 1f;"
		     "exit;"
		     "1: r1 = 0; *(u32 *)(r10 - 4) = r1;"
		     "r2 = r10; r2 += -4;"
		     "r1 = %[words] ll;"
		     "call %[bpf_map_lookup_elem];"
		     "if r0 == 0 goto 2f;"
		     "exit;"
		     "2: r0 = 0; exit;"
		     :
		     : __imm_addr(words), __imm(bpf_map_lookup_elem)
		     : __clobber_all);
}

SEC("gdev/probe/k") __description("subprogram returns a pointer to its own stack; the caller reads it") __failure
__msg("r0 holds a pointer returned by a subprogram")
__naked int retptr_own_stack(void)
{
	asm volatile("call 1f;"
		     "r0 = *(u64 *)(r0 + 0);"
		     "r0 = 0; exit;"
		     "1: r1 = 7; *(u64 *)(r10 - 8) = r1;"
		     "r0 = r10; r0 += -8;"
		     "exit;" ::: __clobber_all);
}
