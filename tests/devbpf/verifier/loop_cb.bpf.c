/* bpf_loop callbacks run any number of times from 0 to the bound: each
 * call must be safe in the state every earlier one left, and after the
 * loop nothing the callback wrote may be trusted (it may not have run).
 * The __exploit refusals were accepted when the callback was verified for
 * one iteration: run unverified, the interpreter writes past a 64-byte
 * value, or a forged map handle reaches bpf_map_update_elem (on the GPU,
 * an arbitrary write). */
#include "gx_test_bpf.h"

struct words {
	__u64 w[8]; /* 64 bytes */
};

struct {
	__uint(type, GDEV_MAP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct words);
} vals SEC(".maps");

struct {
	__uint(type, GDEV_MAP_HASH);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u64);
} counts SEC(".maps");

__u64 out;

struct off_ctx {
	__u64 off;
};

/* writes word `off` of the value, then moves on by one word */
static long advance_cb(__u32 i, void *data)
{
	struct off_ctx *c = data;
	__u32 k = 0;
	struct words *v = bpf_map_lookup_elem(&vals, &k);
	if (!v)
		return 1;
	*(__u64 *)((char *)v + c->off) = i;
	c->off += 8;
	return 0;
}

static long advance_checked_cb(__u32 i, void *data)
{
	struct off_ctx *c = data;
	__u64 off = c->off;
	__u32 k = 0;
	struct words *v;
	if (off > 56)
		return 1;
	v = bpf_map_lookup_elem(&vals, &k);
	if (!v)
		return 1;
	*(__u64 *)((char *)v + off) = i;
	c->off = off + 8;
	return 0;
}

SEC("gdev/probe/k") __description("callback advances an offset kept in the caller's stack") __failure __exploit
__msg("map value access out of bounds (offset 0..64, size 8, value_size 64)")
int loop_cb_advance(struct gdev_ctx *ctx)
{
	struct off_ctx c = { 0 };
	bpf_loop(60, advance_cb, &c, 0);
	return 0;
}

SEC("gdev/probe/k") __description("the same offset, checked in the callback (widened after 16 rounds)") __success
int loop_cb_checked(struct gdev_ctx *ctx)
{
	struct off_ctx c = { 0 };
	bpf_loop(50, advance_checked_cb, &c, 0);
	return 0;
}

SEC("gdev/probe/k") __description("the same offset, 8 iterations over a 64-byte value") __success
int loop_cb_exact(struct gdev_ctx *ctx)
{
	struct off_ctx c = { 0 };
	bpf_loop(8, advance_cb, &c, 0);
	return 0;
}

SEC("gdev/probe/k") __description("9 iterations over a 64-byte value") __failure __exploit
__msg("map value access out of bounds (offset 0..64, size 8, value_size 64)")
int loop_cb_exact_plus_one(struct gdev_ctx *ctx)
{
	struct off_ctx c = { 0 };
	bpf_loop(9, advance_cb, &c, 0);
	return 0;
}

struct ptr_ctx {
	__u64 *p;
};

static long ptr_advance_cb(__u32 i, void *data)
{
	struct ptr_ctx *c = data;
	*c->p = i;
	c->p++;
	return 0;
}

static long ptr_fixed_cb(__u32 i, void *data)
{
	struct ptr_ctx *c = data;
	*c->p += i;
	return 0;
}

SEC("gdev/probe/k") __description("callback advances a map value pointer kept in the caller's stack") __failure
__exploit __msg("map value access out of bounds")
int loop_cb_ptr_advance(struct gdev_ctx *ctx)
{
	__u32 k = 0;
	struct words *v = bpf_map_lookup_elem(&vals, &k);
	struct ptr_ctx c;
	if (!v)
		return 0;
	c.p = &v->w[0];
	bpf_loop(ctx->nr_active & 63, ptr_advance_cb, &c, 0);
	return 0;
}

SEC("gdev/probe/k") __description("callback writes through a pointer it leaves in place") __success
int loop_cb_ptr_fixed(struct gdev_ctx *ctx)
{
	__u32 k = 0;
	struct words *v = bpf_map_lookup_elem(&vals, &k);
	struct ptr_ctx c;
	if (!v)
		return 0;
	c.p = &v->w[3];
	bpf_loop(100, ptr_fixed_cb, &c, 0);
	return 0;
}

struct map_ctx {
	void *map;
	__u64 other;
};

/* uses the handle, then swaps it with the other word */
static long swap_cb(__u32 i, void *data)
{
	struct map_ctx *c = data;
	void *m = c->map;
	__u32 k = i;
	__u64 one = 1;
	bpf_map_update_elem(m, &k, &one, GDEV_ANY);
	c->map = (void *)c->other;
	c->other = (__u64)m;
	return 0;
}

SEC("gdev/probe/k") __description("callback swaps a map handle with a number in the caller's stack") __failure
__exploit __msg("holds different types after different numbers of bpf_loop iterations")
int loop_cb_swap(struct gdev_ctx *ctx)
{
	struct map_ctx c;
	c.map = &counts;
	c.other = ctx->launch_id + 0xdead0000; /* a forged handle */
	bpf_loop(4, swap_cb, &c, 0);
	return 0;
}

static long set_map_cb(__u32 i, void *data)
{
	struct map_ctx *c = data;
	c->map = &counts;
	return 1;
}

SEC("gdev/probe/k") __description("zero iterations leave a forged handle where the callback puts the map") __failure
__exploit __msg("holds different types after different numbers of bpf_loop iterations")
int loop_cb_zero(struct gdev_ctx *ctx)
{
	struct map_ctx c = { .map = (void *)(ctx->launch_id + 0xdead0000) };
	__u32 k = 0;
	__u64 one = 1;
	bpf_loop(ctx->nr_active & 7, set_map_cb, &c, 0);
	bpf_map_update_elem(c.map, &k, &one, GDEV_ANY);
	return 0;
}

SEC("gdev/probe/k") __description("a constant bound does not make the callback's writes certain") __failure
__msg("holds different types after different numbers of bpf_loop iterations")
int loop_cb_const_one(struct gdev_ctx *ctx)
{
	struct map_ctx c = { .map = (void *)(ctx->launch_id + 0xdead0000) };
	__u32 k = 0;
	__u64 one = 1;
	bpf_loop(1, set_map_cb, &c, 0);
	bpf_map_update_elem(c.map, &k, &one, GDEV_ANY);
	return 0;
}

struct val_ctx {
	__u64 v;
};

static long fill_cb(__u32 i, void *data)
{
	struct val_ctx *c = data;
	c->v = i;
	return 0;
}

SEC("gdev/probe/k") __description("a slot only the callback initialises, read after the loop") __failure
__msg("read of uninitialized stack")
int loop_cb_uninit(struct gdev_ctx *ctx)
{
	struct val_ctx c;
	bpf_loop(ctx->nr_active & 7, fill_cb, &c, 0);
	out = c.v;
	return 0;
}

SEC("gdev/probe/k") __description("the same slot initialised before the loop") __success
int loop_cb_init(struct gdev_ctx *ctx)
{
	struct val_ctx c = { 0 };
	bpf_loop(ctx->nr_active & 7, fill_cb, &c, 0);
	out = c.v;
	return 0;
}

static long outer4_cb(__u32 i, void *data)
{
	bpf_loop(4, advance_cb, data, 0);
	return 0;
}

SEC("gdev/probe/k") __description("nested bpf_loop: 4 x 4 advances over a 64-byte value") __failure __exploit
__msg("map value access out of bounds")
int loop_cb_nested(struct gdev_ctx *ctx)
{
	struct off_ctx c = { 0 };
	bpf_loop(4, outer4_cb, &c, 0);
	return 0;
}

SEC("gdev/probe/k") __description("nested bpf_loop: 2 x 4 advances over a 64-byte value") __success
int loop_cb_nested_fits(struct gdev_ctx *ctx)
{
	struct off_ctx c = { 0 };
	bpf_loop(2, outer4_cb, &c, 0);
	return 0;
}
