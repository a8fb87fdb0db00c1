/* A well-formed object for the loader tests: every map kind, global data
 * (.rodata knob, .data, .bss, a string), a subprogram shared by two
 * programs, and every hook section. */
#include "gpuext/gdev_helpers.h"

struct val {
	__u64 cnt;
	__u32 last;
	__u32 pad;
};

struct {
	__uint(type, GDEV_MAP_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, struct val);
	__uint(map_flags, 0);
} counts SEC(".maps");

struct {
	__uint(type, GDEV_MAP_ARRAY);
	__uint(max_entries, 16);
	__uint(key_size, 4);
	__uint(value_size, 8);
	__uint(map_flags, GDEV_F_RECORDS); /* a record table */
} arr SEC(".maps");

struct {
	__uint(type, GDEV_MAP_PERSM_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} per_sm SEC(".maps");

struct {
	__uint(type, GDEV_MAP_PERWARP_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} per_warp SEC(".maps");

struct {
	__uint(type, GDEV_MAP_RINGBUF);
	__uint(max_entries, 1 << 16);
} events SEC(".maps");

const volatile __u32 knob = 3;
__u64 total;
__u64 seeded = 42;

static __noinline __u64 scale(__u64 x)
{
	return x * knob + seeded;
}

SEC("gdev/mem/access")
int on_access(struct gdev_ctx *ctx)
{
	__u64 k = ctx->kernel_id;
	struct val *v = bpf_map_lookup_elem(&counts, &k);
	if (v) {
		v->cnt++;
		v->last = ctx->size;
	}
	total = scale(total);
	return 0;
}

SEC("gdev/probe/vec_add*")
int on_entry(struct gdev_ctx *ctx)
{
	total = scale(ctx->smid);
	gdev_printk("entry %u\n", ctx->smid);
	return 0;
}

SEC("gdev/retprobe/*")
int on_exit_(struct gdev_ctx *ctx)
{
	__u64 t = gdev_globaltimer();
	bpf_ringbuf_output(&events, &t, sizeof(t), 0);
	return 0;
}

SEC("gdev/sched/should_try_steal")
int steal(struct gdev_ctx *ctx)
{
	return ctx->unit & 1;
}

GDEV_LICENSE("GPL");
