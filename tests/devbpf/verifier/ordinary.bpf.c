/* Ordinary C the verifier must accept, and the edges it must still refuse:
 * a `static __noinline void` helper (it sets no r0, or leaves a pointer
 * there; only a caller that uses r0 after the call is wrong), and a bitmap
 * indexed by a bounded bit
 * number, `bm[bit >> 6]`, which clang turns into `(bit >> 3) & 0x1ffffff8`:
 * the known bits say the offset is a multiple of 8 up to 504 (here up to
 * 56), which an interval alone cannot. */
#include "gx_test_bpf.h"

struct bits {
	__u64 bm[8]; /* 512 bits, 64 bytes */
};

struct half {
	__u64 bm[4]; /* 256 bits, 32 bytes */
};

struct {
	__uint(type, GDEV_MAP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bits);
} bitmap SEC(".maps");

struct {
	__uint(type, GDEV_MAP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct half);
} small SEC(".maps");

struct {
	__uint(type, GDEV_MAP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32[16]);
} words SEC(".maps");

__u64 out;

SEC("gdev/probe/k") __description("set bm[bit >> 6] after bit < 512 (64-byte value)") __success
int ord_bitmap_set(struct gdev_ctx *ctx)
{
	__u32 k = 0, bit = ctx->ctaid_x;
	struct bits *b = bpf_map_lookup_elem(&bitmap, &k);
	if (!b || bit >= 512)
		return 0;
	b->bm[bit >> 6] |= 1ull << (bit & 63);
	return 0;
}

SEC("gdev/probe/k") __description("test a bit of a 64-bit bit number < 512") __success
int ord_bitmap_test(struct gdev_ctx *ctx)
{
	__u32 k = 0;
	__u64 bit = ctx->kernel_id;
	struct bits *b = bpf_map_lookup_elem(&bitmap, &k);
	if (!b || bit >= 512)
		return 0;
	if (b->bm[bit >> 6] & (1ull << (bit & 63)))
		out++;
	return 0;
}

SEC("gdev/probe/k") __description("u32 words: w[bit >> 5] after bit < 512") __success
int ord_bitmap_u32(struct gdev_ctx *ctx)
{
	__u32 k = 0, bit = ctx->ctaid_y;
	__u32 *w = bpf_map_lookup_elem(&words, &k);
	if (!w || bit >= 512)
		return 0;
	w[bit >> 5] |= 1u << (bit & 31);
	return 0;
}

SEC("gdev/probe/k") __description("bit < 513: one word past the value") __failure
__msg("map value access out of bounds (offset 0..64, size 8, value_size 64)")
int ord_bitmap_oob(struct gdev_ctx *ctx)
{
	__u32 k = 0, bit = ctx->ctaid_x;
	struct bits *b = bpf_map_lookup_elem(&bitmap, &k);
	if (!b || bit >= 513)
		return 0;
	b->bm[bit >> 6] |= 1ull << (bit & 63);
	return 0;
}

SEC("gdev/probe/k") __description("bit < 512 into a 32-byte value") __failure
__msg("map value access out of bounds (offset 0..56, size 8, value_size 32)")
int ord_bitmap_small(struct gdev_ctx *ctx)
{
	__u32 k = 0, bit = ctx->ctaid_x;
	struct half *b = bpf_map_lookup_elem(&small, &k);
	if (!b || bit >= 512)
		return 0;
	b->bm[bit >> 6] |= 1ull << (bit & 63);
	return 0;
}

static __noinline void bump(__u64 *p, __u64 by)
{
	*p += by;
}

SEC("gdev/probe/k") __description("static __noinline void helper") __success
int ord_void_helper(struct gdev_ctx *ctx)
{
	__u64 s = ctx->smid;
	bump(&s, ctx->nr_active);
	bump(&s, 3);
	out = s;
	return 0;
}

struct {
	__uint(type, GDEV_MAP_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} cnt SEC(".maps");

/* clang leaves the lookup's result in r0 at the exit of this void function */
static __noinline void bump_slot(__u32 k)
{
	__u64 *v = bpf_map_lookup_elem(&cnt, &k);
	if (v)
		*v += 1;
}

SEC("gdev/probe/k") __description("void helper whose last act is a map lookup") __success
int ord_void_lookup(struct gdev_ctx *ctx)
{
	bump_slot(ctx->smid & 3);
	bump_slot(1);
	return 0;
}

SEC("gdev/probe/k") __description("a subprogram's pointer in r0, dereferenced by the caller") __failure
__msg("r0 holds a pointer returned by a subprogram")
__naked int ord_ptr_ret_deref(void)
{
	asm volatile("call 1f;"
		     "r1 = *(u64 *)(r0 + 0);"
		     "r0 = 0; exit;"
		     "1: r0 = r1; exit;" ::: __clobber_all);
}

SEC("gdev/probe/k") __description("a subprogram's pointer in r0, stored by the caller") __failure
__msg("r0 holds a pointer returned by a subprogram")
__naked int ord_ptr_ret_store(void)
{
	asm volatile("call 1f;"
		     "*(u64 *)(r10 - 8) = r0;"
		     "r0 = 0; exit;"
		     "1: r0 = r10; exit;" ::: __clobber_all);
}

SEC("gdev/probe/k") __description("r0 read after a call of a subprogram that set none") __failure
__msg("read of uninitialized register r0")
__naked int ord_void_r0_read(void)
{
	asm volatile("call 1f;"
		     "r0 += 1;"
		     "r0 = 0; exit;"
		     "1: r1 = 1; exit;" ::: __clobber_all);
}

SEC("gdev/probe/k") __description("the program returns what a void subprogram left in r0") __failure
__msg("R0 not set before exit")
__naked int ord_void_r0_returned(void)
{
	asm volatile("call 1f;"
		     "exit;"
		     "1: r1 = 1; exit;" ::: __clobber_all);
}

SEC("gdev/probe/k") __description("a bpf_loop callback must set r0") __failure __msg("R0 not set before exit")
__naked int ord_void_callback(void)
{
	asm volatile("r1 = 4;"
		     "r2 = 1f ll;"
		     "r3 = 0; r4 = 0;"
		     "call %[bpf_loop];"
		     "r0 = 0; exit;"
		     "1: r1 = 1; exit;"
		     :
		     : __imm(bpf_loop)
		     : __clobber_all);
}
