/* A lookup factored into a static __noinline helper (issue 42): the map
 * value pointer, or null, it returns reaches the handler typed; one exit
 * returns null, two return values of different maps. The handler checks
 * it and writes inside the value (the smaller of the two). */
#include "hx_expect.h"

struct fstat_rec {
	__u64 faults;
	__u64 last_page;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, struct fstat_rec);
} per_flag SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} per_hi SEC(".maps");

static __noinline struct fstat_rec *rec_of(__u32 k)
{
	return bpf_map_lookup_elem(&per_flag, &k);
}

static __noinline __u64 *count_of(__u32 k)
{
	if (k > 7)
		return 0;
	if (k > 3) {
		__u32 h = k - 4;
		return bpf_map_lookup_elem(&per_hi, &h);
	}
	return bpf_map_lookup_elem(&per_flag, &k);
}

SEC("struct_ops/ord_ret_lookup")
int BPF_PROG(ord_ret_lookup, struct gpu_mem_ctx *gctx, struct gpu_region *r, struct gpu_fault *f)
{
	struct fstat_rec *s = rec_of(f->flags & 3);
	__u64 *c = count_of(f->page & 15);

	if (s) {
		s->faults += 1;
		s->last_page = f->page;
	}
	if (c)
		*c += 1;
	return GPU_DEFAULT;
}
GX_MEM_PREFETCH(ord_ret_lookup);
