/* gx_helpers.c — the policy helpers, written once for device and host.
 *
 * Built twice: clang-19 -target nvptx64-nvidia-cuda -emit-llvm compiles it to
 * the bitcode the JIT links into every PTX policy module and inlines (device
 * path: special registers, %globaltimer, prefetch instructions, maps through
 * the module's constant-bank block __gx_devrt); gcc compiles it into the
 * host library (native JIT, interpreter, tests: the warp's identity comes from a thread-local
 * struct gx_host_env, the runtime ring from gx_host_ring). Map and ring logic
 * is shared through mapimpl_internal.h, so both sides agree byte for byte.
 *
 * Every helper has the eBPF calling shape: five u64 in, one u64 out (unused
 * arguments vanish once inlined). A map handle is the address of the map's
 * struct gx_devrt_map (in __gx_devrt on the device; the head of struct gx_map
 * on the host). */
#ifdef __NVPTX__
static inline unsigned gx_sreg_smid(void)
{
	unsigned r;
	__asm__ volatile("mov.u32 %0, %%smid;" : "=r"(r));
	return r;
}
static inline unsigned gx_sreg_hwwarpid(void)
{
	unsigned r;
	__asm__ volatile("mov.u32 %0, %%warpid;" : "=r"(r));
	return r;
}
/* The slot is below nr_shards whenever the runtime sized the map for this
 * GPU (SMs x 64 warp slots): a compare, and the division (~20 instructions
 * for a runtime divisor) only on a smaller map. */
static inline unsigned gx_shard_fold(unsigned x, unsigned n)
{
	return x < n ? x : n ? x % n : 0;
}
#define gx_shard_index(m, type)                                                          \
	gx_shard_fold((type) == GX_MAP_PERWARP_ARRAY                                     \
			      ? gx_sreg_smid() * GX_WARP_SLOTS_PER_SM + gx_sreg_hwwarpid()       \
			      : gx_sreg_smid(),                                                  \
		      (m)->nr_shards)
#define GX_RING_SHARD() gx_sreg_smid()
static inline unsigned long long gx_ring_now(void)
{
	unsigned long long t;
	__asm__ volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}
#define GX_RING_NOW() gx_ring_now()
#else
#include "devbpf/hosthelpers_internal.h"
#define gx_shard_index(m, type)                                                          \
	((type) == GX_MAP_PERWARP_ARRAY                                                  \
		 ? (gx_host_env.smid * GX_WARP_SLOTS_PER_SM + gx_host_env.warpid) % (m)->nr_shards \
		 : gx_host_env.smid % (m)->nr_shards)
#define GX_RING_SHARD() gx_host_env.smid
#include <time.h>
static inline unsigned long long gx_ring_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}
#define GX_RING_NOW() gx_ring_now()
#endif

/* the runtime block's flags (below): whether rings take roomy hints */
static inline unsigned gx_rt_flags(void);
#define GX_RING_ROOMY() (gx_rt_flags() & GX_DEVRT_F_RING_ROOMY)
#include "devbpf/helpers/mapimpl_internal.h"

#define GX_HELPER(name) gx_u64 gx_h_##name(gx_u64 r1, gx_u64 r2, gx_u64 r3, gx_u64 r4, gx_u64 r5)
#define GX_UNUSED5 (void)r1, (void)r2, (void)r3, (void)r4, (void)r5
#define GX_MAP(r) ((const struct gx_devrt_map *)(unsigned long)(r))
#define GX_PTR(r) ((void *)(unsigned long)(r))

/* ---- where the warp is ---- */
#ifdef __NVPTX__
/* The runtime block itself, in the module's constant bank: the shim writes
 * it whole (cuModuleGetGlobal + a copy) before the module's first launch in
 * a context. Every map reference folds to `ld.const [__gx_devrt+off]` with
 * the offset an immediate — no pointer to chase first (a module global
 * holding the block's address cost warp 0 two dependent loads per block:
 * +13.5 % on a 4.6 us saxpy under threadhist, +6.2 % with the block in
 * __constant__; bench/devrt_place.cu, bench/results/2026-12-04-gpu-run54.md). Zero until written: no maps,
 * no ring — every helper then finds nothing. */
__attribute__((address_space(4))) struct gx_devrt __gx_devrt;

static inline const struct gx_devrt *gx_devrt(void)
{
	return (const struct gx_devrt *)&__gx_devrt;
}
static inline struct gx_ring *gx_rt_ring(void)
{
	return (struct gx_ring *)(unsigned long)gx_devrt()->ring;
}
static inline unsigned gx_rt_flags(void)
{
	return gx_devrt()->flags;
}
static inline gx_u64 gx_now(void)
{
	gx_u64 t;
	__asm__ volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}
static inline gx_u32 gx_dim3(gx_u64 dim, gx_u32 x, gx_u32 y, gx_u32 z)
{
	return dim == 0 ? x : dim == 1 ? y : dim == 2 ? z : 0;
}
static inline gx_u32 gx_laneid(void)
{
	unsigned r;
	__asm__ volatile("mov.u32 %0, %%laneid;" : "=r"(r));
	return r;
}
static inline gx_u32 gx_warp_in_block(void)
{
	gx_u32 lin = __nvvm_read_ptx_sreg_tid_x() +
		     __nvvm_read_ptx_sreg_ntid_x() *
			     (__nvvm_read_ptx_sreg_tid_y() +
			      __nvvm_read_ptx_sreg_ntid_y() * __nvvm_read_ptx_sreg_tid_z());
	return lin / 32;
}

/* Internal, called by the JIT for ld_imm64 map references. */
GX_HELPER(_map)
{
	(void)r2, (void)r3, (void)r4, (void)r5;
	return (gx_u64)(unsigned long)&gx_devrt()->maps[r1];
}
GX_HELPER(_map_value)
{
	(void)r3, (void)r4, (void)r5;
	return gx_devrt()->maps[r1].data + r2;
}

GX_HELPER(smid)
{
	GX_UNUSED5;
	return gx_sreg_smid();
}
GX_HELPER(warpid)
{
	GX_UNUSED5;
	return gx_warp_in_block();
}
GX_HELPER(laneid)
{
	GX_UNUSED5;
	return gx_laneid();
}
GX_HELPER(block_idx)
{
	(void)r2, (void)r3, (void)r4, (void)r5;
	return gx_dim3(r1, __nvvm_read_ptx_sreg_ctaid_x(), __nvvm_read_ptx_sreg_ctaid_y(),
		       __nvvm_read_ptx_sreg_ctaid_z());
}
GX_HELPER(thread_idx)
{
	(void)r2, (void)r3, (void)r4, (void)r5;
	return gx_dim3(r1, __nvvm_read_ptx_sreg_tid_x(), __nvvm_read_ptx_sreg_tid_y(),
		       __nvvm_read_ptx_sreg_tid_z());
}
GX_HELPER(block_dim)
{
	(void)r2, (void)r3, (void)r4, (void)r5;
	return gx_dim3(r1, __nvvm_read_ptx_sreg_ntid_x(), __nvvm_read_ptx_sreg_ntid_y(),
		       __nvvm_read_ptx_sreg_ntid_z());
}
GX_HELPER(grid_dim)
{
	(void)r2, (void)r3, (void)r4, (void)r5;
	return gx_dim3(r1, __nvvm_read_ptx_sreg_nctaid_x(), __nvvm_read_ptx_sreg_nctaid_y(),
		       __nvvm_read_ptx_sreg_nctaid_z());
}
GX_HELPER(l2_prefetch)
{
	(void)r2, (void)r3, (void)r4, (void)r5;
	__asm__ volatile("prefetch.global.L2 [%0];" ::"l"(r1));
	return 0;
}
#else /* host */
_Thread_local struct gx_host_env gx_host_env;
struct gx_ring *gx_host_ring;
unsigned gx_host_flags = GX_DEVRT_F_PRINTK | GX_DEVRT_F_PREFETCH;

static inline struct gx_ring *gx_rt_ring(void)
{
	return gx_host_ring;
}
static inline unsigned gx_rt_flags(void)
{
	return gx_host_flags;
}
static inline gx_u64 gx_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (gx_u64)ts.tv_sec * 1000000000ull + (gx_u64)ts.tv_nsec;
}
static inline gx_u32 gx_dim3(gx_u64 dim, const gx_u32 v[3])
{
	return dim < 3 ? v[dim] : 0;
}
static inline gx_u32 gx_sreg_smid(void)
{
	return gx_host_env.smid;
}
static inline gx_u32 gx_warp_in_block(void)
{
	return gx_host_env.warpid;
}

GX_HELPER(smid)
{
	GX_UNUSED5;
	return gx_host_env.smid;
}
GX_HELPER(warpid)
{
	GX_UNUSED5;
	return gx_host_env.warpid;
}
GX_HELPER(laneid)
{
	GX_UNUSED5;
	return gx_host_env.laneid;
}
GX_HELPER(block_idx)
{
	(void)r2, (void)r3, (void)r4, (void)r5;
	return gx_dim3(r1, gx_host_env.block_idx);
}
GX_HELPER(thread_idx)
{
	(void)r2, (void)r3, (void)r4, (void)r5;
	return gx_dim3(r1, gx_host_env.thread_idx);
}
GX_HELPER(block_dim)
{
	(void)r2, (void)r3, (void)r4, (void)r5;
	return gx_dim3(r1, gx_host_env.block_dim);
}
GX_HELPER(grid_dim)
{
	(void)r2, (void)r3, (void)r4, (void)r5;
	return gx_dim3(r1, gx_host_env.grid_dim);
}
GX_HELPER(l2_prefetch)
{
	(void)r2, (void)r3, (void)r4, (void)r5;
	__builtin_prefetch(GX_PTR(r1));
	return 0;
}
#endif

/* ---- shared helpers ---- */
GX_HELPER(map_lookup_elem)
{
	(void)r3, (void)r4, (void)r5;
	if (!r1 || !r2)
		return 0;
	return (gx_u64)(unsigned long)gx_map_lookup(GX_MAP(r1), GX_PTR(r2));
}
GX_HELPER(map_update_elem)
{
	(void)r5;
	if (!r1 || !r2 || !r3)
		return (gx_u64)-GX_EINVAL;
	return (gx_u64)gx_map_update(GX_MAP(r1), GX_PTR(r2), GX_PTR(r3), r4);
}
/* Type-specialized forms, called by the JIT when it knows the map of a call
 * (the usual `r1 = map; call`): no type dispatch, no unused algorithms. */
#define GX_TYPED(T, TYPE)                                                                  \
	GX_HELPER(map_lookup_elem__##T)                                                    \
	{                                                                                  \
		(void)r3, (void)r4, (void)r5;                                              \
		if (!r2)                                                                   \
			return 0;                                                          \
		return (gx_u64)(unsigned long)gx_map_lookup_t(GX_MAP(r1), GX_PTR(r2), TYPE); \
	}                                                                                  \
	GX_HELPER(map_update_elem__##T)                                                    \
	{                                                                                  \
		(void)r5;                                                                  \
		if (!r2 || !r3)                                                            \
			return (gx_u64)-GX_EINVAL;                                         \
		return (gx_u64)gx_map_update_t(GX_MAP(r1), GX_PTR(r2), GX_PTR(r3), r4, TYPE); \
	}
/* Array lookups with the geometry the JIT knows as immediates (r3 =
 * max_entries, r4 = value stride; GX_JIT_FOLD): the shard and index
 * arithmetic folds into the address, only data and nr_shards are read. */
#define GX_TYPED_K(T, SHARD)                                                                        \
	GX_HELPER(map_lookup_elem__##T##_k)                                                         \
	{                                                                                           \
		(void)r5;                                                                           \
		if (!r2)                                                                            \
			return 0;                                                                   \
		const struct gx_devrt_map *m = GX_MAP(r1);                                          \
		(void)m;                                                                            \
		return (gx_u64)(unsigned long)gx_array_elem_k(m, SHARD, *(const gx_u32 *)GX_PTR(r2), \
							       (gx_u32)r3, (gx_u32)r4);             \
	}
GX_TYPED_K(array, 0)
GX_TYPED_K(persm, gx_shard_index(m, GX_MAP_PERSM_ARRAY))
GX_TYPED_K(perwarp, gx_shard_index(m, GX_MAP_PERWARP_ARRAY))
GX_TYPED(array, GX_MAP_ARRAY)
GX_TYPED(hash, GX_MAP_HASH)
GX_TYPED(persm, GX_MAP_PERSM_ARRAY)
GX_TYPED(perwarp, GX_MAP_PERWARP_ARRAY)

GX_HELPER(map_delete_elem)
{
	(void)r3, (void)r4, (void)r5;
	if (!r1 || !r2)
		return (gx_u64)-GX_EINVAL;
	return (gx_u64)gx_map_delete(GX_MAP(r1), GX_PTR(r2));
}
GX_HELPER(ktime_get_ns)
{
	GX_UNUSED5;
	return gx_now();
}
GX_HELPER(globaltimer)
{
	GX_UNUSED5;
	return gx_now();
}
GX_HELPER(ringbuf_output)
{
	(void)r4, (void)r5;
	const struct gx_devrt_map *m = GX_MAP(r1);
	if (!m)
		return (gx_u64)-GX_EINVAL;
	/* type, size (max_entries) and ring read together (one line) and the
	 * type folded into the pointer: the ring's own loads need not wait
	 * for a compare-and-branch on the type (a block's exit waits on this
	 * chain of dependent loads under kernelretsnoop) */
	gx_u32 type = m->type, size = m->max_entries;
	gx_u64 data = m->data;
	struct gx_ring *ring = (struct gx_ring *)(unsigned long)(type == GX_MAP_RINGBUF ? data : 0);
	return (gx_u64)gx_ring_output_n(ring, size, GX_PTR(r2), r3);
}
GX_HELPER(mem_prefetch)
{
	(void)r3, (void)r4, (void)r5;
	struct gx_ring *ring = gx_rt_ring();
	if (!ring || !(gx_rt_flags() & GX_DEVRT_F_PREFETCH))
		return (gx_u64)-GX_ENOENT;
	struct gx_rec_prefetch *rec = (struct gx_rec_prefetch *)gx_ring_reserve(
		ring, (gx_u32)sizeof(struct gx_rec_prefetch));
	if (!rec)
		return (gx_u64)-GX_ENOSPC;
	rec->addr = r1;
	rec->len = r2;
	rec->ts = gx_now();
	rec->smid = gx_sreg_smid();
	rec->pad = 0;
	gx_ring_commit(ring, &rec->hdr, (gx_u32)sizeof(*rec), GX_REC_PREFETCH);
	return 0;
}
/* printk(fmt, fmt_size, a1, a2, a3): the format is copied into the record
 * (truncated to GX_PRINTK_FMT_MAX - 1), the host formats it when draining. */
GX_HELPER(printk)
{
	struct gx_ring *ring = gx_rt_ring();
	if (!ring || !(gx_rt_flags() & GX_DEVRT_F_PRINTK))
		return (gx_u64)-GX_ENOENT;
	if (!r1)
		return (gx_u64)-GX_EINVAL;
	struct gx_rec_printk *rec = (struct gx_rec_printk *)gx_ring_reserve(
		ring, (gx_u32)sizeof(struct gx_rec_printk));
	if (!rec)
		return (gx_u64)-GX_ENOSPC;
	const char *fmt = (const char *)GX_PTR(r1);
	gx_u32 n = 0;
	for (; n < GX_PRINTK_FMT_MAX - 1 && n < r2 && fmt[n]; n++)
		rec->fmt[n] = fmt[n];
	for (gx_u32 i = n; i < GX_PRINTK_FMT_MAX; i++)
		rec->fmt[i] = 0;
	rec->ts = gx_now();
	rec->smid = gx_sreg_smid();
	rec->warpid = gx_warp_in_block();
	rec->args[0] = r3;
	rec->args[1] = r4;
	rec->args[2] = r5;
	gx_ring_commit(ring, &rec->hdr, (gx_u32)sizeof(*rec), GX_REC_PRINTK);
	return n;
}
