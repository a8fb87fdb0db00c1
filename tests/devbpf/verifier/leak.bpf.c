/* No address leaves the program: a pointer never reaches a map (as a
 * stored value, a helper's key or value bytes), a ring record, printk's
 * arguments or a narrower register, in whole or in part. A spilled pointer
 * comes back from the stack whole or not at all: a narrower load, the old
 * value of an atomic, or the rest of it after a partial store would be its
 * address as a number. The __exploit refusals were accepted before: run
 * unverified, each puts (a part of) the context's or a map value's address
 * where the host reads it. */
#include "gx_test_bpf.h"

struct {
	__uint(type, GDEV_MAP_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} slots SEC(".maps");

struct {
	__uint(type, GDEV_MAP_HASH);
	__uint(max_entries, 16);
	__type(key, __u64);
	__type(value, __u64);
} byptr SEC(".maps");

struct {
	__uint(type, GDEV_MAP_RINGBUF);
	__uint(max_entries, 4096);
} events SEC(".maps");

SEC("gdev/probe/k") __description("spilled context pointer as bpf_map_update_elem's value") __failure __exploit
__msg("bpf_map_update_elem: r3 leaks addr into map 'slots' (pointer at stack offset -16)")
__naked int leak_update_value(void)
{
	asm volatile("*(u64 *)(r10 - 16) = r1;"
		     "r2 = 0; *(u32 *)(r10 - 4) = r2;"
		     "r1 = %[slots] ll;"
		     "r2 = r10; r2 += -4;"
		     "r3 = r10; r3 += -16;"
		     "r4 = 0;"
		     "call %[bpf_map_update_elem];"
		     "r0 = 0; exit;"
		     :
		     : __imm_addr(slots), __imm(bpf_map_update_elem)
		     : __clobber_all);
}

SEC("gdev/probe/k") __description("spilled context pointer as a hash key") __failure __exploit
__msg("bpf_map_update_elem: r2 leaks addr into map 'byptr' (pointer at stack offset -8)")
__naked int leak_update_key(void)
{
	asm volatile("*(u64 *)(r10 - 8) = r1;"
		     "r2 = 1; *(u64 *)(r10 - 16) = r2;"
		     "r1 = %[byptr] ll;"
		     "r2 = r10; r2 += -8;"
		     "r3 = r10; r3 += -16;"
		     "r4 = 0;"
		     "call %[bpf_map_update_elem];"
		     "r0 = 0; exit;"
		     :
		     : __imm_addr(byptr), __imm(bpf_map_update_elem)
		     : __clobber_all);
}

struct rec {
	__u64 kind;
	void *where;
};

SEC("gdev/probe/k") __description("a record with a map value pointer sent with bpf_ringbuf_output") __failure
__exploit __msg("bpf_ringbuf_output: r2 leaks addr into ringbuf 'events' (pointer at stack offset")
int leak_ringbuf(struct gdev_ctx *ctx)
{
	__u32 k = 0;
	struct rec r = { .kind = 1 };
	__u64 *v = bpf_map_lookup_elem(&slots, &k);
	if (!v)
		return 0;
	r.where = v;
	bpf_ringbuf_output(&events, &r, sizeof(r), 0);
	return 0;
}

SEC("gdev/probe/k") __description("a pointer as a printk argument") __failure __exploit
__msg("gdev_printk: r3 leaks addr into printk")
int leak_printk(struct gdev_ctx *ctx)
{
	gdev_printk("ctx at %llx\n", (__u64)ctx);
	return 0;
}

SEC("gdev/probe/k") __description("32-bit move of the context pointer, stored into a map") __failure __exploit
__msg("partial copy of pointer r6")
__naked int leak_mov32(void)
{
	asm volatile("r6 = r1;"
		     "r2 = 0; *(u32 *)(r10 - 4) = r2;"
		     "r1 = %[slots] ll;"
		     "r2 = r10; r2 += -4;"
		     "call %[bpf_map_lookup_elem];"
		     "if r0 == 0 goto 1f;"
		     "w1 = w6;"
		     "*(u64 *)(r0 + 0) = r1;"
		     "1: r0 = 0; exit;"
		     :
		     : __imm_addr(slots), __imm(bpf_map_lookup_elem)
		     : __clobber_all);
}

SEC("gdev/probe/k") __description("sign-extending move of the low half of a pointer") __failure
__msg("partial copy of pointer r1")
__naked int leak_movsx(void)
{
	asm volatile("r2 = (s32)r1; r0 = 0; exit;" ::: __clobber_all);
}

SEC("gdev/probe/k") __description("narrower load of a spilled pointer, stored into a map") __failure __exploit
__msg("partial read of a spilled pointer (stack offset -16, size 4)")
__naked int leak_narrow_load(void)
{
	asm volatile("*(u64 *)(r10 - 16) = r1;"
		     "r2 = 0; *(u32 *)(r10 - 4) = r2;"
		     "r1 = %[slots] ll;"
		     "r2 = r10; r2 += -4;"
		     "call %[bpf_map_lookup_elem];"
		     "if r0 == 0 goto 1f;"
		     "r1 = *(u32 *)(r10 - 16);"
		     "*(u64 *)(r0 + 0) = r1;"
		     "1: r0 = 0; exit;"
		     :
		     : __imm_addr(slots), __imm(bpf_map_lookup_elem)
		     : __clobber_all);
}

SEC("gdev/probe/k") __description("low half of a spilled pointer overwritten, then the slot reloaded") __failure
__exploit __msg("read of a partially overwritten spilled pointer (stack offset -16)")
__naked int leak_partial_low(void)
{
	asm volatile("*(u64 *)(r10 - 16) = r1;"
		     "r2 = 0; *(u32 *)(r10 - 4) = r2;"
		     "*(u32 *)(r10 - 16) = r2;"
		     "r1 = %[slots] ll;"
		     "r2 = r10; r2 += -4;"
		     "call %[bpf_map_lookup_elem];"
		     "if r0 == 0 goto 1f;"
		     "r1 = *(u64 *)(r10 - 16);"
		     "*(u64 *)(r0 + 0) = r1;"
		     "1: r0 = 0; exit;"
		     :
		     : __imm_addr(slots), __imm(bpf_map_lookup_elem)
		     : __clobber_all);
}

SEC("gdev/probe/k") __description("high half of a spilled pointer overwritten, the low half read") __failure
__exploit __msg("read of a partially overwritten spilled pointer (stack offset -16)")
__naked int leak_partial_high(void)
{
	asm volatile("*(u64 *)(r10 - 16) = r1;"
		     "r2 = 0; *(u32 *)(r10 - 4) = r2;"
		     "*(u32 *)(r10 - 12) = r2;"
		     "r1 = %[slots] ll;"
		     "r2 = r10; r2 += -4;"
		     "call %[bpf_map_lookup_elem];"
		     "if r0 == 0 goto 1f;"
		     "r1 = *(u32 *)(r10 - 16);"
		     "*(u64 *)(r0 + 0) = r1;"
		     "1: r0 = 0; exit;"
		     :
		     : __imm_addr(slots), __imm(bpf_map_lookup_elem)
		     : __clobber_all);
}

SEC("gdev/probe/k") __description("the overwritten half of a spilled pointer may be read back") __success
__naked int leak_partial_own_bytes(void)
{
	asm volatile("*(u64 *)(r10 - 16) = r1;"
		     "r2 = 7; *(u32 *)(r10 - 16) = r2;"
		     "r0 = *(u32 *)(r10 - 16);"
		     "r0 = 0; exit;" ::: __clobber_all);
}

SEC("gdev/probe/k") __description("xchg on a slot holding a pointer, the old value stored into a map") __failure
__exploit __msg("atomic operation on a spilled pointer (stack offset -16)")
__naked int leak_xchg(void)
{
	asm volatile("*(u64 *)(r10 - 16) = r1;"
		     "r2 = 0; *(u32 *)(r10 - 4) = r2;"
		     "r1 = %[slots] ll;"
		     "r2 = r10; r2 += -4;"
		     "call %[bpf_map_lookup_elem];"
		     "if r0 == 0 goto 1f;"
		     "r1 = 0;"
		     "r1 = xchg_64(r10 - 16, r1);"
		     "*(u64 *)(r0 + 0) = r1;"
		     "1: r0 = 0; exit;"
		     :
		     : __imm_addr(slots), __imm(bpf_map_lookup_elem)
		     : __clobber_all);
}

SEC("gdev/probe/k") __description("atomic add into a spilled pointer") __failure
__msg("atomic operation on a spilled pointer (stack offset -8)")
__naked int leak_atomic_add(void)
{
	asm volatile("*(u64 *)(r10 - 8) = r1;"
		     "r2 = 1;"
		     "lock *(u64 *)(r10 - 8) += r2;"
		     "r0 = 0; exit;" ::: __clobber_all);
}

SEC("gdev/probe/k") __description("a callee's stack address left in the caller's stack, stored into a map") __failure
__msg("r1 holds the address of a returned frame")
__naked int leak_dangling(void)
{
	asm volatile("r1 = r10; r1 += -8;"
		     "call 2f;"
		     "r2 = 0; *(u32 *)(r10 - 12) = r2;"
		     "r1 = %[slots] ll;"
		     "r2 = r10; r2 += -12;"
		     "call %[bpf_map_lookup_elem];"
		     "if r0 == 0 goto 1f;"
		     "r1 = *(u64 *)(r10 - 8);"
		     "*(u64 *)(r0 + 0) = r1;"
		     "1: r0 = 0; exit;"
		     "2: r2 = r10; r2 += -8;"
		     "*(u64 *)(r1 + 0) = r2;"
		     "r0 = 0; exit;"
		     :
		     : __imm_addr(slots), __imm(bpf_map_lookup_elem)
		     : __clobber_all);
}

SEC("gdev/probe/k") __description("pointers spilled and filled whole, slots reused for numbers") __success
int leak_ok_spills(struct gdev_ctx *ctx)
{
	__u32 k = 1;
	__u64 *v = bpf_map_lookup_elem(&slots, &k);
	struct rec r = { .kind = 2 };
	if (!v)
		return 0;
	*v += ctx->smid;
	r.where = (void *)ctx->launch_id; /* a number where a pointer could go */
	bpf_ringbuf_output(&events, &r, sizeof(r), 0);
	return 0;
}
