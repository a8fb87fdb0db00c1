/* hx_ordinary — a memory policy for tests, written as ordinary C is: a
 * `static __noinline void` helper, a bitmap indexed by a bounded number
 * (bm[bit >> 6] after bit < 512, which clang turns into
 * (bit >> 3) & 0x1ffffff8) and a bpf_loop callback. The verifier must accept
 * it, and it must decide the same way interpreted and as native code.
 *
 * The first fault on a region (one bit per 2 MiB region, the region number
 * taken modulo 1024, the upper half not tracked) prefetches the rest of the
 * region; a later fault on a region seen before prefetches nothing. After
 * each new region the callback counts the bits set (nr_bits). */
#include "gx_common.bpf.h"

struct seen_bits {
	__u64 bm[8]; /* 512 bits */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct seen_bits);
} seen SEC(".maps");

__u64 nr_prefetch, nr_first, nr_again, nr_untracked, nr_bits;

static __noinline void count(__u64 *c, __u64 by)
{
	*c += by;
}

struct pop_ctx {
	struct seen_bits *s;
	__u64 n;
};

/* adds the bits of word i */
static long pop_cb(__u32 i, void *data)
{
	struct pop_ctx *c = data;
	__u64 w;
	__u32 b;

	if (i >= 8)
		return 1;
	w = c->s->bm[i];
	for (b = 0; b < 64; b++)
		c->n += (w >> b) & 1;
	return 0;
}

SEC("struct_ops/ord_prefetch")
int BPF_PROG(ord_prefetch, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	__u64 bit = (r->va_start / GPU_REGION_SIZE) % 1024;
	__u32 k = 0, first = f->page;
	struct seen_bits *s = bpf_map_lookup_elem(&seen, &k);
	struct pop_ctx c;

	if (!s)
		return GPU_DEFAULT;
	if (bit >= 512) {
		count(&nr_untracked, 1);
		return GPU_DEFAULT;
	}
	if (s->bm[bit >> 6] & (1ull << (bit & 63))) {
		count(&nr_again, 1);
		return GPU_BYPASS;
	}
	s->bm[bit >> 6] |= 1ull << (bit & 63);
	count(&nr_first, 1);
	c.s = s;
	c.n = 0;
	bpf_loop(8, pop_cb, &c, 0);
	nr_bits = c.n;
	if (first < f->max_first)
		first = f->max_first;
	if (first < f->max_outer && bpf_gpu_set_prefetch_region(gctx, first, f->max_outer) == 0)
		count(&nr_prefetch, 1);
	return GPU_BYPASS;
}

SEC(".struct_ops.link")
struct gpu_mem_ops ord_ops = {
	.gpu_prefetch = (void *)ord_prefetch,
	.name = "ordinary",
};
