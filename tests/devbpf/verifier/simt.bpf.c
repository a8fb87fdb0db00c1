/* Warp-uniformity: lane-varying values (gdev_laneid, gdev_thread_idx and
 * whatever derives from them) must not steer branches, loop bounds, map
 * update keys or atomics; uniform sources (context, smid, block index,
 * constants, values read with uniform keys) may. */
#include "gx_test_bpf.h"

struct {
	__uint(type, GDEV_MAP_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} h SEC(".maps");

struct {
	__uint(type, GDEV_MAP_ARRAY);
	__uint(max_entries, 32);
	__type(key, __u32);
	__type(value, __u64);
} arr SEC(".maps");

SEC("gdev/probe/k") __description("branch on gdev_laneid") __failure __msg("branch on lane-varying value")
int simt_branch_laneid(struct gdev_ctx *ctx)
{
	__u64 *v;
	__u32 k = 0;
	if (gdev_laneid() == 3) {
		v = bpf_map_lookup_elem(&arr, &k);
		if (v)
			*v += 1;
	}
	return 0;
}

SEC("gdev/probe/k") __description("branch on gdev_thread_idx") __failure __msg("branch on lane-varying value")
int simt_branch_tid(struct gdev_ctx *ctx)
{
	__u32 k = 1;
	__u64 one = 1;
	if (gdev_thread_idx(0) > 16)
		bpf_map_update_elem(&h, &k, &one, GDEV_ANY);
	return 0;
}

SEC("gdev/probe/k") __description("map update key from the lane id") __failure __msg("map update key is lane-varying")
int simt_update_key(struct gdev_ctx *ctx)
{
	__u32 k = gdev_laneid();
	__u64 one = 1;
	bpf_map_update_elem(&h, &k, &one, GDEV_ANY);
	return 0;
}

SEC("gdev/probe/k") __description("map delete key from the thread index") __failure __msg("map delete key is lane-varying")
int simt_delete_key(struct gdev_ctx *ctx)
{
	__u32 k = gdev_thread_idx(1);
	bpf_map_delete_elem(&h, &k);
	return 0;
}

SEC("gdev/probe/k") __description("lookup with a varying key, then null check") __failure __msg("branch on lane-varying value")
int simt_lookup_varying(struct gdev_ctx *ctx)
{
	__u32 k = gdev_laneid();
	__u64 *v = bpf_map_lookup_elem(&arr, &k);
	if (v)
		*v = 1;
	return 0;
}

SEC("gdev/probe/k") __description("loop bound from the lane id") __failure __msg("lane-varying")
int simt_loop_bound(struct gdev_ctx *ctx)
{
	__u32 n = gdev_laneid();
	__u64 s = 0;
#pragma clang loop unroll(disable)
	for (__u32 i = 0; i < n; i++)
		s += i;
	__u32 k = 0;
	bpf_map_update_elem(&arr, &k, &s, GDEV_ANY);
	return 0;
}

SEC("gdev/probe/k") __description("varying value through stack spill, then branch") __failure __msg("branch on lane-varying value")
__naked int simt_spill(void)
{
	asm volatile("call %[gdev_laneid];"
		     "*(u64 *)(r10 - 8) = r0;"
		     "r0 = 0;"
		     "r1 = *(u64 *)(r10 - 8);"
		     "if r1 > 4 goto 1f;"
		     "r0 = 0;"
		     "1: exit;"
		     :
		     : __imm(gdev_laneid)
		     : __clobber_all);
}

SEC("gdev/probe/k") __description("atomic add at a lane-varying address") __failure __msg("atomic operation on lane-varying address")
__naked int simt_atomic_addr(void)
{
	asm volatile("r1 = 0;"
		     "*(u32 *)(r10 - 4) = r1;"
		     "r2 = r10;"
		     "r2 += -4;"
		     "r1 = %[arr] ll;"
		     "call %[bpf_map_lookup_elem];"
		     "if r0 == 0 goto 1f;"
		     "r6 = r0;"
		     "call %[gdev_laneid];"
		     "r0 &= 1;"
		     "r0 <<= 2;"
		     "r6 += r0;"
		     "r1 = 1;"
		     "lock *(u32 *)(r6 + 0) += r1;"
		     "1: r0 = 0;"
		     "exit;"
		     :
		     : __imm_addr(arr), __imm(bpf_map_lookup_elem), __imm(gdev_laneid)
		     : __clobber_all);
}

SEC("gdev/probe/k") __description("store through a lane-varying map value pointer") __failure __msg("map value write through lane-varying pointer")
__naked int simt_store_varying_ptr(void)
{
	asm volatile("r1 = 0;"
		     "*(u32 *)(r10 - 4) = r1;"
		     "r2 = r10;"
		     "r2 += -4;"
		     "r1 = %[arr] ll;"
		     "call %[bpf_map_lookup_elem];"
		     "if r0 == 0 goto 1f;"
		     "r6 = r0;"
		     "call %[gdev_laneid];"
		     "r0 &= 1;"
		     "r0 <<= 2;"
		     "r6 += r0;"
		     "r1 = 7;"
		     "*(u32 *)(r6 + 0) = r1;"
		     "1: r0 = 0;"
		     "exit;"
		     :
		     : __imm_addr(arr), __imm(bpf_map_lookup_elem), __imm(gdev_laneid)
		     : __clobber_all);
}

SEC("gdev/probe/k") __description("ALU chain keeps the varying mark") __failure __msg("branch on lane-varying value")
int simt_alu_chain(struct gdev_ctx *ctx)
{
	__u64 x = gdev_laneid();
	x = x * 4 + ctx->smid;
	if (x & 8)
		return 0;
	__u32 k = 2;
	bpf_map_update_elem(&arr, &k, &x, GDEV_ANY);
	return 0;
}

static long cb_sum(__u32 i, void *c)
{
	*(__u64 *)c += i;
	return 0;
}

SEC("gdev/probe/k") __description("bpf_loop with a lane-varying count") __failure __msg("loop bound is lane-varying")
int simt_bpf_loop_varying(struct gdev_ctx *ctx)
{
	__u64 s = 0;
	bpf_loop(gdev_laneid(), cb_sum, &s, 0);
	__u32 k = 0;
	bpf_map_update_elem(&arr, &k, &s, GDEV_ANY);
	return 0;
}

SEC("gdev/probe/k") __description("lane id as map value data, uniform key") __success
int simt_varying_data_ok(struct gdev_ctx *ctx)
{
	__u32 k = ctx->smid & 31;
	__u64 lane = gdev_laneid();
	bpf_map_update_elem(&arr, &k, &lane, GDEV_ANY);
	return 0;
}

SEC("gdev/probe/k") __description("branches on context fields and smid") __success
int simt_uniform_branches(struct gdev_ctx *ctx)
{
	__u32 k = gdev_smid();
	__u64 one = 1;
	if (ctx->nr_active == 32 && gdev_block_idx(0) < 4)
		bpf_map_update_elem(&h, &k, &one, GDEV_ANY);
	return 0;
}

SEC("gdev/probe/k") __description("value read with a uniform key steers a branch") __success
int simt_uniform_lookup(struct gdev_ctx *ctx)
{
	__u32 k = ctx->warpid;
	__u64 *v = bpf_map_lookup_elem(&h, &k);
	if (v && *v > 10) {
		__u64 z = 0;
		bpf_map_update_elem(&h, &k, &z, GDEV_EXIST);
	}
	return 0;
}

SEC("gdev/probe/k") __description("lane-varying branch accepted without SIMT rules") __success __no_simt
int simt_off_ok(struct gdev_ctx *ctx)
{
	__u32 k = gdev_laneid();
	__u64 one = 1;
	if (k < 16)
		bpf_map_update_elem(&h, &k, &one, GDEV_ANY);
	return 0;
}
