/* gx_mapimpl.h — map and ring algorithms, written once for device and host.
 *
 * Included by gx_helpers.c, which clang-19 compiles to NVPTX bitcode (the
 * device helpers the JIT inlines into policies) and gcc compiles for the host
 * (native JIT, interpreter, shim, tools). Both sides operate on the layouts of
 * gx_devrt.h through a `struct gx_devrt_map` whose `data` is an address valid
 * where the code runs, so the bytes a kernel leaves in device memory are the
 * bytes the host decodes after a flush.
 *
 * The including file defines, before including this header:
 *   GX_FENCE_SYS()   a system-scope memory fence
 *   gx_shard_index(m, type) the shard of the calling warp (sharded arrays)
 * Everything here is static inline and allocation-free. */
#ifndef GX_MAPIMPL_H
#define GX_MAPIMPL_H

#include "devbpf/gx_devrt.h"

typedef unsigned char gx_u8;
typedef gdev_u32 gx_u32;
typedef gdev_u64 gx_u64;

#define GX_EINVAL 22
#define GX_ENOENT 2
#define GX_EEXIST 17
#define GX_E2BIG 7
#define GX_EBUSY 16
#define GX_ENOSPC 28

#define GX_BPF_ANY 0
#define GX_BPF_NOEXIST 1
#define GX_BPF_EXIST 2

/* Spins on a BUSY bucket before giving up (another warp's leader is
 * between its claim and its publish: a handful of stores). */
#define GX_HASH_SPIN 100000

static inline void gx_copy(void *dst, const void *src, gx_u32 n)
{
	gx_u8 *d = (gx_u8 *)dst;
	const gx_u8 *s = (const gx_u8 *)src;
	if ((((unsigned long)d | (unsigned long)s | n) & 7) == 0) {
		for (gx_u32 i = 0; i < n; i += 8)
			*(gx_u64 *)(d + i) = *(const gx_u64 *)(s + i);
		return;
	}
	for (gx_u32 i = 0; i < n; i++)
		d[i] = s[i];
}

static inline int gx_equal(const void *a, const void *b, gx_u32 n)
{
	const gx_u8 *x = (const gx_u8 *)a, *y = (const gx_u8 *)b;
	for (gx_u32 i = 0; i < n; i++)
		if (x[i] != y[i])
			return 0;
	return 1;
}

/* FNV-1a 32 over the key bytes: cheap, no tables, identical on both sides. */
static inline gx_u32 gx_hash_key(const void *key, gx_u32 n)
{
	const gx_u8 *p = (const gx_u8 *)key;
	gx_u32 h = 2166136261u;
	for (gx_u32 i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

static inline gx_u8 *gx_bucket(const struct gx_devrt_map *m, gx_u32 i)
{
	return (gx_u8 *)(unsigned long)m->data + (gx_u64)i * m->bucket_size;
}

/* Acquire loads / release stores. LLVM 19's NVPTX back end cannot select
 * atomic loads and stores with ordering, so the device uses volatile accesses
 * (ld/st.volatile) with fences around them. */
#ifdef __NVPTX__
#define GX_FENCE_ACQREL() __asm__ volatile("fence.acq_rel.gpu;" ::: "memory")
#define GX_LOAD_ACQ(p)                                                   \
	({                                                               \
		__typeof__(*(p)) v_ = *(volatile __typeof__(*(p)) *)(p); \
		GX_FENCE_ACQREL();                                       \
		v_;                                                      \
	})
#define GX_STORE_REL(p, v)                                           \
	do {                                                         \
		GX_FENCE_ACQREL();                                   \
		*(volatile __typeof__(*(p)) *)(p) = (v);             \
	} while (0)
/* Compare-and-swap with acquire-release effect: relaxed atom.cas + fences. */
#define GX_CAS(p, expp, v)                                                              \
	({                                                                              \
		GX_FENCE_ACQREL();                                                      \
		int ok_ = __atomic_compare_exchange_n((p), (expp), (v), 0, __ATOMIC_RELAXED, \
						      __ATOMIC_RELAXED);                \
		GX_FENCE_ACQREL();                                                      \
		ok_;                                                                    \
	})
#else
#define GX_LOAD_ACQ(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define GX_STORE_REL(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define GX_CAS(p, expp, v) \
	__atomic_compare_exchange_n((p), (expp), (v), 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)
#endif

static inline gx_u32 gx_load32(const gx_u32 *p)
{
	return GX_LOAD_ACQ(p);
}

/* ---- array / sharded arrays ---- */
/* The descriptor's words are read before any test: on the device they are
 * then one batch of independent loads (one round trip), not a load, a
 * branch and three more loads behind it; a select, not a branch, keeps the
 * compiler from sinking the loads behind the test. */
static inline void *gx_array_elem(const struct gx_devrt_map *m, gx_u32 shard, gx_u32 idx)
{
	gx_u32 max = m->max_entries, nr = m->nr_shards, stride = m->value_stride;
	gx_u64 data = m->data;
	gx_u64 p = data + ((gx_u64)shard * max + idx) * stride;
	return ((idx < max) & (shard < nr)) ? (void *)(unsigned long)p : 0;
}

/* ---- hash ----
 * Not inlined on the device: the probe loops are large, and one copy per
 * policy module keeps the JIT fast (ptxas may still inline them). */
#ifdef __NVPTX__
#define GX_HASH_FN __attribute__((noinline)) static
#else
#define GX_HASH_FN static inline
#endif
/* Find the bucket holding key; NULL if absent. */
GX_HASH_FN gx_u8 *gx_hash_find(const struct gx_devrt_map *m, const void *key)
{
	gx_u32 h = gx_hash_key(key, m->key_size), mask = m->nr_buckets - 1;
	for (gx_u32 n = 0; n < m->nr_buckets; n++) {
		gx_u8 *b = gx_bucket(m, (h + n) & mask);
		gx_u32 st = gx_load32((gx_u32 *)b);
		for (int spin = 0; st == GX_HB_BUSY && spin < GX_HASH_SPIN; spin++)
			st = gx_load32((gx_u32 *)b);
		if (st == GX_HB_EMPTY)
			return 0;
		if (st == GX_HB_FULL && ((gx_u32 *)b)[1] == h && gx_equal(b + 8, key, m->key_size))
			return b;
	}
	return 0;
}

static inline void *gx_hash_lookup(const struct gx_devrt_map *m, const void *key)
{
	gx_u8 *b = gx_hash_find(m, key);
	return b ? b + 8 + GX_ROUND8(m->key_size) : 0;
}

GX_HASH_FN int gx_hash_update(const struct gx_devrt_map *m, const void *key, const void *val,
				 gx_u64 flags)
{
	gx_u32 h = gx_hash_key(key, m->key_size), mask = m->nr_buckets - 1;
	gx_u32 koff = 8, voff = 8 + GX_ROUND8(m->key_size);
	if (flags > GX_BPF_EXIST)
		return -GX_EINVAL;
	for (int attempt = 0; attempt < 8; attempt++) {
		gx_u8 *claim = 0;
		gx_u32 claim_state = 0;
		for (gx_u32 n = 0; n < m->nr_buckets; n++) {
			gx_u8 *b = gx_bucket(m, (h + n) & mask);
			gx_u32 st = gx_load32((gx_u32 *)b);
			for (int spin = 0; st == GX_HB_BUSY && spin < GX_HASH_SPIN; spin++)
				st = gx_load32((gx_u32 *)b);
			if (st == GX_HB_BUSY)
				return -GX_EBUSY;
			if (st == GX_HB_FULL && ((gx_u32 *)b)[1] == h &&
			    gx_equal(b + koff, key, m->key_size)) {
				if (flags == GX_BPF_NOEXIST)
					return -GX_EEXIST;
				gx_copy(b + voff, val, m->value_size);
				return 0;
			}
			if (st == GX_HB_TOMB && !claim) {
				claim = b;
				claim_state = GX_HB_TOMB;
			}
			if (st == GX_HB_EMPTY) {
				if (!claim) {
					claim = b;
					claim_state = GX_HB_EMPTY;
				}
				break;
			}
		}
		if (flags == GX_BPF_EXIST)
			return -GX_ENOENT;
		if (!claim)
			return -GX_E2BIG;
		gx_u32 expect = claim_state;
		/* The one atomic of an insert: claim the bucket's state word. */
		if (!GX_CAS((gx_u32 *)claim, &expect, GX_HB_BUSY))
			continue; /* lost the race: search again (it may be our key now) */
		((gx_u32 *)claim)[1] = h;
		gx_copy(claim + koff, key, m->key_size);
		gx_copy(claim + voff, val, m->value_size);
		GX_STORE_REL((gx_u32 *)claim, GX_HB_FULL);
		return 0;
	}
	return -GX_EBUSY;
}

static inline int gx_hash_delete(const struct gx_devrt_map *m, const void *key)
{
	gx_u8 *b = gx_hash_find(m, key);
	if (!b)
		return -GX_ENOENT;
	gx_u32 expect = GX_HB_FULL;
	if (!GX_CAS((gx_u32 *)b, &expect, GX_HB_TOMB))
		return -GX_ENOENT;
	return 0;
}

/* ---- generic map operations (what the helpers call) ----
 * `type` is the map's type; the JIT calls type-specialized helpers (a
 * constant type folds the switch away) when it knows which map a call uses. */
static inline void *gx_map_lookup_t(const struct gx_devrt_map *m, const void *key, gx_u32 type)
{
	switch (type) {
	case GX_MAP_ARRAY:
		return gx_array_elem(m, 0, *(const gx_u32 *)key);
	case GX_MAP_PERSM_ARRAY:
	case GX_MAP_PERWARP_ARRAY:
		return gx_array_elem(m, gx_shard_index(m, type), *(const gx_u32 *)key);
	case GX_MAP_HASH:
		return gx_hash_lookup(m, key);
	default:
		return 0;
	}
}

static inline long gx_map_update_t(const struct gx_devrt_map *m, const void *key,
				   const void *val, gx_u64 flags, gx_u32 type)
{
	void *slot;
	switch (type) {
	case GX_MAP_ARRAY:
	case GX_MAP_PERSM_ARRAY:
	case GX_MAP_PERWARP_ARRAY:
		if (flags > GX_BPF_EXIST)
			return -GX_EINVAL;
		if (flags == GX_BPF_NOEXIST)
			return -GX_EEXIST; /* array elements always exist */
		slot = gx_map_lookup_t(m, key, type);
		if (!slot)
			return -GX_E2BIG;
		gx_copy(slot, val, m->value_size);
		return 0;
	case GX_MAP_HASH:
		return gx_hash_update(m, key, val, flags);
	default:
		return -GX_EINVAL;
	}
}

static inline void *gx_map_lookup(const struct gx_devrt_map *m, const void *key)
{
	return gx_map_lookup_t(m, key, m->type);
}

static inline long gx_map_update(const struct gx_devrt_map *m, const void *key, const void *val,
				 gx_u64 flags)
{
	return gx_map_update_t(m, key, val, flags, m->type);
}

static inline long gx_map_delete(const struct gx_devrt_map *m, const void *key)
{
	if (m->type == GX_MAP_HASH)
		return gx_hash_delete(m, key);
	return -GX_EINVAL;
}

/* ---- ring (producer side; gx_ring.c has the consumer) ---- */
static inline gx_u8 *gx_ring_data(struct gx_ring *r)
{
	return (gx_u8 *)(r + 1);
}

/* Reserve len bytes (header included, multiple of 8); returns the record or
 * NULL (drops counted). The header is left zero until gx_ring_commit. */
static inline struct gx_rec_hdr *gx_ring_reserve(struct gx_ring *r, gx_u32 len)
{
	if (!r)
		return 0;
	gx_u64 size = r->size;
	if (len == 0 || len > size || (len & 7))
		return 0;
	/* Retry while there is room: a failed CAS means another producer got
	 * its record in (lock-free progress). The old bound of 64 attempts
	 * turned contention into drops (2842 of 3589 one-per-block records on
	 * the H200 with room to spare); the bound left only guards against a
	 * corrupt header. A failed CAS reloads head. */
	gx_u64 head = GX_LOAD_ACQ(&r->head);
	for (int attempt = 0; attempt < (1 << 20); attempt++) {
		gx_u64 tail = GX_LOAD_ACQ(&r->tail);
		gx_u64 off = head & (size - 1);
		gx_u64 pad = off + len > size ? size - off : 0;
		if (head + pad + len - tail > size)
			break;
		if (GX_CAS(&r->head, &head, head + pad + len)) {
			gx_u8 *d = gx_ring_data(r);
			if (pad) {
				struct gx_rec_hdr *p = (struct gx_rec_hdr *)(d + off);
				p->len = (gx_u32)pad;
				GX_STORE_REL(&p->type, GX_REC_PAD | GX_REC_COMMITTED);
				off = 0;
			}
			return (struct gx_rec_hdr *)(d + off);
		}
	}
	__atomic_fetch_add(&r->drops, 1, __ATOMIC_RELAXED);
	return 0;
}

/* len: the record's exact length (header included); the consumer rounds it
 * up to 8 to find the next record. */
static inline void gx_ring_commit(struct gx_rec_hdr *h, gx_u32 len, gx_u32 type)
{
	h->len = len;
	GX_FENCE_SYS();
	GX_STORE_REL(&h->type, type | GX_REC_COMMITTED);
}

static inline long gx_ring_output(struct gx_ring *r, const void *data, gx_u64 size)
{
	if (!r || size > 0xffff0000u)
		return -GX_EINVAL;
	gx_u32 len = GX_ROUND8((gx_u32)size + (gx_u32)sizeof(struct gx_rec_hdr));
	struct gx_rec_hdr *h = gx_ring_reserve(r, len);
	if (!h)
		return -GX_ENOSPC;
	/* Records are 8-aligned (the data area is, lengths are multiples of 8):
	 * said so, gx_copy of an aligned source of constant size folds to its
	 * 8-byte loop, and the JIT's unrolling leaves no byte path (whose
	 * registers were the kernel's peak: 36 instead of 32 on sm_90, one
	 * block less per SM). */
	h = (struct gx_rec_hdr *)__builtin_assume_aligned(h, 8);
	gx_copy(h + 1, data, (gx_u32)size);
	gx_ring_commit(h, (gx_u32)size + (gx_u32)sizeof(struct gx_rec_hdr), GX_REC_DATA);
	return 0;
}

#endif
