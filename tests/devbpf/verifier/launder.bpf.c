/* Uniformity survives no exchange and no callback: the old value an atomic
 * returns from a lane-varying stack slot is lane-varying, and so are a
 * bpf_loop's return when its callback returns a lane-varying value, the
 * values the callback leaves in the caller's stack, and everything it
 * wrote when how often it ran depends on the lane. Each refusal but
 * launder_loop_effect used to be accepted: the lane id came back uniform
 * and steered a branch. */
#include "gx_test_bpf.h"

struct {
	__uint(type, GDEV_MAP_ARRAY);
	__uint(max_entries, 32);
	__type(key, __u32);
	__type(value, __u64);
} arr SEC(".maps");

SEC("gdev/probe/k") __description("xchg the lane id out of a stack slot, then branch") __failure
__msg("branch on lane-varying value")
__naked int launder_xchg(void)
{
	asm volatile("call %[gdev_laneid];"
		     "*(u64 *)(r10 - 8) = r0;"
		     "r1 = 0;"
		     "r1 = xchg_64(r10 - 8, r1);"
		     "if r1 == 3 goto 1f;"
		     "1: r0 = 0; exit;"
		     :
		     : __imm(gdev_laneid)
		     : __clobber_all);
}

SEC("gdev/probe/k") __description("32-bit xchg of a lane-varying slot") __failure __msg("branch on lane-varying value")
__naked int launder_xchg32(void)
{
	asm volatile("call %[gdev_laneid];"
		     "*(u32 *)(r10 - 8) = r0;"
		     "w1 = 0;"
		     "w1 = xchg32_32(r10 - 8, w1);"
		     "if w1 > 7 goto 1f;"
		     "1: r0 = 0; exit;"
		     :
		     : __imm(gdev_laneid)
		     : __clobber_all);
}

SEC("gdev/probe/k") __description("fetch-add returns the old, lane-varying value") __failure
__msg("branch on lane-varying value")
__naked int launder_fetch_add(void)
{
	asm volatile("call %[gdev_laneid];"
		     "*(u64 *)(r10 - 8) = r0;"
		     "r1 = 1;"
		     "r1 = atomic_fetch_add((u64 *)(r10 - 8), r1);"
		     "if r1 == 3 goto 1f;"
		     "1: r0 = 0; exit;"
		     :
		     : __imm(gdev_laneid)
		     : __clobber_all);
}

SEC("gdev/probe/k") __description("cmpxchg against the lane id decides what the slot holds") __failure
__msg("branch on lane-varying value")
__naked int launder_cmpxchg(void)
{
	asm volatile("r1 = 5; *(u64 *)(r10 - 8) = r1;"
		     "call %[gdev_laneid];"
		     "r1 = 9;"
		     "r0 = cmpxchg_64(r10 - 8, r0, r1);"
		     "r2 = *(u64 *)(r10 - 8);"
		     "if r2 == 9 goto 1f;"
		     "1: r0 = 0; exit;"
		     :
		     : __imm(gdev_laneid)
		     : __clobber_all);
}

SEC("gdev/probe/k") __description("xchg on a uniform slot may steer a branch") __success
__naked int launder_xchg_uniform(void)
{
	asm volatile("call %[gdev_smid];"
		     "*(u64 *)(r10 - 8) = r0;"
		     "r1 = 0;"
		     "r1 = xchg_64(r10 - 8, r1);"
		     "if r1 == 3 goto 1f;"
		     "1: r0 = 0; exit;"
		     :
		     : __imm(gdev_smid)
		     : __clobber_all);
}

static long lane_stop_cb(__u32 i, void *data)
{
	return gdev_laneid() & 1;
}

SEC("gdev/probe/k") __description("bpf_loop's count when the callback stops on the lane id") __failure
__msg("branch on lane-varying value")
int launder_loop_ret(struct gdev_ctx *ctx)
{
	long n = bpf_loop(8, lane_stop_cb, 0, 0);
	__u32 k = 0;
	__u64 *v;
	if (n > 4) {
		v = bpf_map_lookup_elem(&arr, &k);
		if (v)
			*v += 1;
	}
	return 0;
}

struct lane_ctx {
	__u64 lane;
	__u64 n;
};

static long keep_lane_cb(__u32 i, void *data)
{
	struct lane_ctx *c = data;
	c->lane = gdev_laneid();
	return 0;
}

SEC("gdev/probe/k") __description("a lane id the callback leaves in the caller's stack") __failure
__msg("branch on lane-varying value")
int launder_loop_effect(struct gdev_ctx *ctx)
{
	struct lane_ctx c = { 0, 0 };
	__u32 k = 0;
	__u64 *v;
	bpf_loop(4, keep_lane_cb, &c, 0);
	if (c.lane == 2) {
		v = bpf_map_lookup_elem(&arr, &k);
		if (v)
			*v += 1;
	}
	return 0;
}

static long count_until_lane_cb(__u32 i, void *data)
{
	struct lane_ctx *c = data;
	c->n += 1;
	return gdev_laneid() & 1;
}

SEC("gdev/probe/k") __description("a uniform count the callback bumps as often as the lane id says") __failure
__msg("branch on lane-varying value")
int launder_loop_count(struct gdev_ctx *ctx)
{
	struct lane_ctx c = { 0, 0 };
	__u32 k = 0;
	__u64 *v;
	bpf_loop(8, count_until_lane_cb, &c, 0);
	if (c.n > 4) {
		v = bpf_map_lookup_elem(&arr, &k);
		if (v)
			*v += 1;
	}
	return 0;
}

static long count_cb(__u32 i, void *data)
{
	struct lane_ctx *c = data;
	c->n += 1;
	return c->n >= 6;
}

SEC("gdev/probe/k") __description("a count and a return that depend on uniform values only") __success
int launder_loop_uniform(struct gdev_ctx *ctx)
{
	struct lane_ctx c = { 0, 0 };
	__u32 k = 0;
	__u64 *v;
	long n = bpf_loop(8, count_cb, &c, 0);
	if (c.n > 4 && n > 2) {
		v = bpf_map_lookup_elem(&arr, &k);
		if (v)
			*v += c.n;
	}
	return 0;
}
