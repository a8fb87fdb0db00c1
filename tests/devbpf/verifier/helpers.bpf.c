/* Helpers: only known ids (no barriers, locks, tail calls or unknown
 * helpers), argument types and sizes from each prototype, map kinds that fit
 * the helper, and the per-hook helper-call budget. */
#include "gx_test_bpf.h"

struct {
	__uint(type, GDEV_MAP_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} h SEC(".maps");

struct {
	__uint(type, GDEV_MAP_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u64);
} a SEC(".maps");

struct {
	__uint(type, GDEV_MAP_PERSM_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} per_sm SEC(".maps");

struct {
	__uint(type, GDEV_MAP_PERWARP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} per_warp SEC(".maps");

struct {
	__uint(type, GDEV_MAP_RINGBUF);
	__uint(max_entries, 4096);
} rb SEC(".maps");

struct event {
	__u64 ts;
	__u32 smid, warp;
};

SEC("gdev/probe/k") __description("unknown helper id (e.g. a barrier)") __failure __msg("unknown helper 8191")
__naked int help_unknown(void)
{
	asm volatile("call 8191; r0 = 0; exit;" ::: __clobber_all);
}

SEC("gdev/probe/k") __description("grid sync is no helper") __failure __msg("unknown helper 4200")
__naked int help_grid_sync(void)
{
	asm volatile("call 4200; r0 = 0; exit;" ::: __clobber_all);
}

SEC("gdev/probe/k") __description("bpf_spin_lock") __failure __msg("bpf_spin_lock is not allowed")
__naked int help_spin_lock(void)
{
	asm volatile("call 93; r0 = 0; exit;" ::: __clobber_all);
}

SEC("gdev/probe/k") __description("tail call") __failure __msg("tail calls are not supported")
__naked int help_tail_call(void)
{
	asm volatile("call 12; r0 = 0; exit;" ::: __clobber_all);
}

SEC("gdev/probe/k") __description("bpf_trace_printk") __failure __msg("use gdev_printk")
__naked int help_trace_printk(void)
{
	asm volatile("call 6; r0 = 0; exit;" ::: __clobber_all);
}

SEC("gdev/probe/k") __description("scalar passed as the map") __failure __msg("must be a map")
__naked int help_bad_map(void)
{
	asm volatile("r1 = 0; *(u32 *)(r10 - 4) = r1; r2 = r10; r2 += -4; r1 = 5;"
		     "call %[bpf_map_lookup_elem]; r0 = 0; exit;"
		     :
		     : __imm(bpf_map_lookup_elem)
		     : __clobber_all);
}

SEC("gdev/probe/k") __description("key shorter than key_size") __failure __msg("stack access out of bounds")
__naked int help_short_key(void)
{
	asm volatile("r1 = 0; *(u16 *)(r10 - 2) = r1; r2 = r10; r2 += -2;"
		     "r1 = %[h] ll; call %[bpf_map_lookup_elem]; r0 = 0; exit;"
		     :
		     : __imm_addr(h), __imm(bpf_map_lookup_elem)
		     : __clobber_all);
}

SEC("gdev/probe/k") __description("uninitialised value for map update") __failure __msg("read of uninitialized stack")
__naked int help_uninit_value(void)
{
	asm volatile("r1 = 0; *(u32 *)(r10 - 4) = r1; r2 = r10; r2 += -4; r3 = r10; r3 += -16; r4 = 0;"
		     "r1 = %[h] ll; call %[bpf_map_update_elem]; r0 = 0; exit;"
		     :
		     : __imm_addr(h), __imm(bpf_map_update_elem)
		     : __clobber_all);
}

SEC("gdev/probe/k") __description("ringbuf_output into a hash map") __failure __msg("is not a ringbuf")
int help_ringbuf_wrong_map(struct gdev_ctx *ctx)
{
	struct event e = { ctx->launch_id, ctx->smid, ctx->warpid };
	bpf_ringbuf_output(&h, &e, sizeof(e), 0);
	return 0;
}

SEC("gdev/probe/k") __description("lookup in a ringbuf") __failure __msg("is a ringbuf")
__naked int help_lookup_ringbuf(void)
{
	asm volatile("r1 = 0; *(u32 *)(r10 - 4) = r1; r2 = r10; r2 += -4;"
		     "r1 = %[rb] ll; call %[bpf_map_lookup_elem]; r0 = 0; exit;"
		     :
		     : __imm_addr(rb), __imm(bpf_map_lookup_elem)
		     : __clobber_all);
}

SEC("gdev/probe/k") __description("delete from an array") __failure __msg("is not a hash")
int help_delete_array(struct gdev_ctx *ctx)
{
	__u32 k = 1;
	bpf_map_delete_elem(&a, &k);
	return 0;
}

SEC("gdev/probe/k") __description("dimension not a constant") __failure __msg("dimension must be a constant")
int help_dim(struct gdev_ctx *ctx)
{
	__u32 k = gdev_block_idx(ctx->size & 1);
	__u64 one = 1;
	bpf_map_update_elem(&h, &k, &one, GDEV_ANY);
	return 0;
}

SEC("gdev/probe/k") __description("printk format on the stack") __failure __msg("constant string in .rodata")
__naked int help_printk_stack(void)
{
	asm volatile("r1 = 0x0a6968; *(u64 *)(r10 - 8) = r1; r1 = r10; r1 += -8; r2 = 4; r3 = 0; r4 = 0; r5 = 0;"
		     "call %[gdev_printk_]; r0 = 0; exit;"
		     :
		     : __imm(gdev_printk_)
		     : __clobber_all);
}

SEC("gdev/probe/k") __description("ringbuf_output with a size past the data") __failure __msg("stack access out of bounds")
__naked int help_ringbuf_size(void)
{
	asm volatile("r1 = 0; *(u64 *)(r10 - 8) = r1; r2 = r10; r2 += -8; r3 = 16; r4 = 0;"
		     "r1 = %[rb] ll; call %[bpf_ringbuf_output]; r0 = 0; exit;"
		     :
		     : __imm_addr(rb), __imm(bpf_ringbuf_output)
		     : __clobber_all);
}

SEC("gdev/mem/access") __description("more helper calls than the memory hook allows") __failure __msg("helper calls on one path")
int help_too_many_calls(struct gdev_ctx *ctx)
{
	__u64 t = 0;
#pragma clang loop unroll(full)
	for (int i = 0; i < 10; i++)
		t += gdev_globaltimer();
	return t == 0 ? 0 : 0;
}

SEC("gdev/probe/k") __description("ringbuf_output of zero bytes") __failure __msg("may be zero")
__naked int help_zero_size(void)
{
	asm volatile("r1 = 0; *(u64 *)(r10 - 8) = r1; r2 = r10; r2 += -8; r3 = 0; r4 = 0;"
		     "r1 = %[rb] ll; call %[bpf_ringbuf_output]; r0 = 0; exit;"
		     :
		     : __imm_addr(rb), __imm(bpf_ringbuf_output)
		     : __clobber_all);
}

SEC("gdev/probe/k") __description("ringbuf event from the leader") __success
int help_ringbuf(struct gdev_ctx *ctx)
{
	struct event e = { gdev_globaltimer(), gdev_smid(), gdev_warpid() };
	bpf_ringbuf_output(&rb, &e, sizeof(e), 0);
	return 0;
}

SEC("gdev/probe/k") __description("printk with arguments") __success
int help_printk(struct gdev_ctx *ctx)
{
	gdev_printk("kernel %llx block %u\n", ctx->kernel_id, ctx->ctaid_x);
	return 0;
}

SEC("gdev/mem/access") __description("prefetch helpers") __success
int help_prefetch(struct gdev_ctx *ctx)
{
	gdev_mem_prefetch(ctx->addr + 4096, 65536);
	gdev_l2_prefetch(ctx->addr + 128);
	return 0;
}

SEC("gdev/probe/k") __description("per-SM and per-warp sharded arrays") __success
int help_sharded(struct gdev_ctx *ctx)
{
	__u32 k = 0;
	__u64 *s = bpf_map_lookup_elem(&per_sm, &k);
	if (s)
		*s += 1;
	__u64 *w = bpf_map_lookup_elem(&per_warp, &k);
	if (w)
		*w += ctx->nr_active;
	return 0;
}

SEC("gdev/probe/k") __description("index helpers and ktime") __success
int help_indices(struct gdev_ctx *ctx)
{
	__u32 k = (gdev_block_idx(0) + gdev_block_dim(1) + gdev_grid_dim(2)) & 7;
	__u64 t = bpf_ktime_get_ns();
	bpf_map_update_elem(&a, &k, &t, GDEV_ANY);
	return 0;
}
