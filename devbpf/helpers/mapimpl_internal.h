/* mapimpl_internal.h — map and ring algorithms, written once for device and host.
 *
 * Included by gx_helpers.c, which clang-19 compiles to NVPTX bitcode (the
 * device helpers the JIT inlines into policies) and gcc compiles for the host
 * (native JIT, interpreter, shim, tools). Both sides operate on the layouts of
 * gx_devrt.h through a `struct gx_devrt_map` whose `data` is an address valid
 * where the code runs, so the bytes a kernel leaves in device memory are the
 * bytes the host decodes after a flush.
 *
 * The including file defines, before including this header:
 *   gx_shard_index(m, type) the shard of the calling warp (sharded arrays)
 *   GX_RING_SHARD()  optional: the caller's SM (ring drop counter shards)
 * Everything here is static inline and allocation-free. */
#ifndef GX_MAPIMPL_H
#define GX_MAPIMPL_H

#include "gpuext/gx_devrt.h"
#ifndef __NVPTX__
#include <sched.h>
#endif

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
static inline void *gx_array_elem_k(const struct gx_devrt_map *m, gx_u32 shard, gx_u32 idx, gx_u32 max,
				    gx_u32 stride)
{
	gx_u32 nr = m->nr_shards;
	gx_u64 data = m->data;
	gx_u64 p = data + ((gx_u64)shard * max + idx) * stride;
	return ((idx < max) & (shard < nr)) ? (void *)(unsigned long)p : 0;
}
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

/* ---- ring (producer side; ring.c and maps_dev.c have the consumer) ----
 * Protocol summary in gx_devrt.h. Why it is built this way:
 *  - One fetch-add per record on the hot path. The old CAS loop on `head`
 *    (load, CAS, retry) serialised producers to one record per L2 round
 *    trip each; when 1056 blocks of a grid-stride kernel exit together that
 *    is O(n^2) CAS traffic (+1.2 ms per launch on the H200). A fetch-add
 *    never fails, so n producers cost n L2 atomics, pipelined.
 *  - A fetch-add cannot refuse, so the refusal happens before it: one
 *    16-byte snapshot load of {head, tail}. A full ring then refuses with
 *    that load and one fire-and-forget reduction on a drop shard: no atomic
 *    on head (the old full path did a CAS storm plus a hot drop counter:
 *    2.5 s per 262k-block launch). The same snapshot's tail decides success
 *    after the fetch-add (a stale tail only under-estimates the room).
 *  - The rare overflow (another producer took the room between snapshot and
 *    fetch-add) settles exactly, never by guessing: a fresh tail with room
 *    means success; otherwise the reservation must leave no hole, so it
 *    waits to be the last one (head == its end) and rolls head back with a
 *    CAS. Every overflowing reservation does the same, so they unwind last
 *    in first out; each one's waiters are running producers, so it ends.
 *  - Sub-rings per SM were the alternative (no shared counter at all), but
 *    they split the capacity (one busy SM fills its slice while others sit
 *    empty: more drops for the same memory), lose the global order the
 *    formatters rely on, and need n copies per drain. One fetch-add per
 *    record on one address is far below the L2's atomic throughput for
 *    one-record-per-block tools.
 *  - Fences: the ring is in device memory and read by the copy engine after
 *    an async copy, so the commit needs the payload to reach L2 before the
 *    header: a release store at GPU scope (one MEMBAR.GPU, which waits for
 *    this thread's payload stores). System scope (fence.sc.sys) only for
 *    rings in mapped host memory read live by the CPU (GX_RING_F_SYS).
 *    Reservation needs no fence: the consumer clears consumed bytes before
 *    it publishes the tail that lets producers write there (same stream,
 *    in order), and a store that depends on the loaded tail cannot be
 *    performed before that load.
 *  - Full hints: while the ring is full every producer would still load the
 *    shared {head, tail} (one L2 slice serving every SM: ~10^9 loads/s when
 *    a 262k-block launch finishes its blocks against a full ring). A
 *    producer that finds it full marks its SM's hint instead (now + 5 us);
 *    the SM's next producers read only that word — their own SM's, so an
 *    L1 hit — and refuse. The price: up to 5 us of refusals after a drain
 *    made room (counted drops, bounded).
 * The includer may define GX_RING_SHARD() (the caller's SM) for the drop
 * shards and hints, 0 otherwise, and GX_RING_NOW() (ns) to enable the full
 * hints. */
#ifndef GX_RING_SHARD
#define GX_RING_SHARD() 0u
#endif
/* Bound on the reserve/pad retries of one record (crossing the end twice in
 * one call needs a whole lap by others in between). */
#define GX_RING_TRIES 8
/* Roomy hints (issue 40; the includer defines GX_RING_ROOMY() true to use
 * them, with GX_RING_NOW): a producer whose snapshot finds the ring at most
 * half full marks its SM's hint word "roomy" (odd: now + GX_RING_ROOMY_NS,
 * bit 0 set; a full hint is even) and the SM's producers then skip the
 * snapshot: the tail's load and the fetch-add are in flight together, one
 * L2 round trip before the payload instead of two in a row (a block's exit
 * under kernelretsnoop waits for them). Only rings of GX_RING_ROOMY_MIN
 * bytes or more: in GX_RING_ROOMY_NS producers cannot write half of that
 * (~64 bytes per ns at the L2's atomic rate: 0.3 MB), so the overflow
 * path stays as rare as it is; and when it is taken it settles exactly as
 * before. */
#ifndef GX_RING_ROOMY
#define GX_RING_ROOMY() 0
#endif
#ifndef GX_RING_ROOMY_MIN
#define GX_RING_ROOMY_MIN (2ull << 20)
#endif
#define GX_RING_ROOMY_NS GX_RING_FULL_NS
#ifndef GX_RING_FAST_TRACE
#define GX_RING_FAST_TRACE() /* tests count the snapshot-free reservations */
#endif

#ifdef __NVPTX__
/* head/tail loads at system scope: a host-mapped ring's tail is written by
 * the CPU (on device memory they cost the same: both are served by L2) */
static inline void gx_ring_snap(const struct gx_ring *r, gx_u64 *head, gx_u64 *tail)
{
	__asm__ volatile("ld.relaxed.sys.global.v2.u64 {%0, %1}, [%2];"
			 : "=l"(*head), "=l"(*tail)
			 : "l"(r)
			 : "memory");
}
static inline gx_u64 gx_ring_load_tail(const struct gx_ring *r)
{
	gx_u64 t;
	__asm__ volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(t) : "l"(&r->tail) : "memory");
	return t;
}
/* weak (L1-cached) on purpose: the SM's own hint word */
static inline gx_u64 gx_ring_load_hint(const gx_u64 *p)
{
	gx_u64 v;
	__asm__ volatile("ld.global.u64 %0, [%1];" : "=l"(v) : "l"(p));
	return v;
}
static inline gx_u64 gx_ring_fadd(struct gx_ring *r, gx_u64 len)
{
	gx_u64 old;
	__asm__ volatile("atom.relaxed.gpu.global.add.u64 %0, [%1], %2;"
			 : "=l"(old)
			 : "l"(&r->head), "l"(len)
			 : "memory");
	return old;
}
static inline int gx_ring_rollback(struct gx_ring *r, gx_u64 end, gx_u64 old)
{
	gx_u64 got;
	__asm__ volatile("atom.relaxed.gpu.global.cas.b64 %0, [%1], %2, %3;"
			 : "=l"(got)
			 : "l"(&r->head), "l"(end), "l"(old)
			 : "memory");
	return got == end;
}
static inline void gx_ring_count_drop(struct gx_ring *r)
{
	__asm__ volatile("red.relaxed.gpu.global.add.u64 [%0], 1;" ::"l"(
				 &r->drop_sh[GX_RING_SHARD() % GX_RING_DROP_SHARDS])
			 : "memory");
}
static inline void gx_ring_backoff(int spin)
{
	__asm__ volatile("nanosleep.u32 %0;" ::"r"(spin < 8 ? 32u : 512u));
}
/* The commit store: {len, type} as one 8-byte word, released. */
static inline void gx_ring_publish(const struct gx_ring *r, struct gx_rec_hdr *h, gx_u64 word)
{
	if (r->flags & GX_RING_F_SYS)
		__asm__ volatile("fence.sc.sys;\n\tst.relaxed.sys.global.u64 [%0], %1;" ::"l"(h), "l"(word)
				 : "memory");
	else
		__asm__ volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(h), "l"(word) : "memory");
}
#else
static inline void gx_ring_snap(const struct gx_ring *r, gx_u64 *head, gx_u64 *tail)
{
	*head = __atomic_load_n(&r->head, __ATOMIC_RELAXED);
	*tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
}
static inline gx_u64 gx_ring_load_tail(const struct gx_ring *r)
{
	return __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
}
static inline gx_u64 gx_ring_load_hint(const gx_u64 *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}
static inline gx_u64 gx_ring_fadd(struct gx_ring *r, gx_u64 len)
{
	return __atomic_fetch_add(&r->head, len, __ATOMIC_RELAXED);
}
static inline int gx_ring_rollback(struct gx_ring *r, gx_u64 end, gx_u64 old)
{
	return __atomic_compare_exchange_n(&r->head, &end, old, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}
static inline void gx_ring_count_drop(struct gx_ring *r)
{
	__atomic_fetch_add(&r->drop_sh[GX_RING_SHARD() % GX_RING_DROP_SHARDS], 1, __ATOMIC_RELAXED);
}
static inline void gx_ring_backoff(int spin)
{
	if (spin > 64)
		sched_yield();
}
static inline void gx_ring_publish(const struct gx_ring *r, struct gx_rec_hdr *h, gx_u64 word)
{
	(void)r;
	__atomic_store_n((gx_u64 *)(void *)h, word, __ATOMIC_RELEASE);
}
#endif

static inline gx_u8 *gx_ring_data(struct gx_ring *r)
{
	return (gx_u8 *)(r + 1);
}

static inline gx_u64 gx_rec_word(gx_u32 len, gx_u32 type)
{
	struct gx_rec_hdr h = { len, type | GX_REC_COMMITTED };
	gx_u64 w;
	__builtin_memcpy(&w, &h, sizeof(w));
	return w;
}

/* Slow path of a reservation [old, old + len) that the snapshot's tail did
 * not cover: 1 = it fits after all (fresh tail), 0 = rolled back (nothing
 * reserved). See the top comment for why this ends. */
#ifndef GX_RING_SETTLE_TRACE
#define GX_RING_SETTLE_TRACE() /* tests count the slow paths */
#endif
static inline int gx_ring_settle(struct gx_ring *r, gx_u64 old, gx_u64 len, gx_u64 size)
{
	GX_RING_SETTLE_TRACE();
	for (int spin = 0;; spin++) {
		if (old + len - gx_ring_load_tail(r) <= size)
			return 1;
		if (gx_ring_rollback(r, old + len, old))
			return 0;
		gx_ring_backoff(spin);
	}
}

/* One try of a reservation: 1 with *rec, 0 full (nothing reserved), 2 the
 * space crossed the ring's end (both pieces published as PAD records: try
 * again). roomy: this try skips the snapshot; roomy_hint: the SM's hint
 * word when the ring takes roomy hints (GX_RING_ROOMY), else NULL. */
static inline int gx_ring_try(struct gx_ring *r, gx_u64 size, gx_u32 len, int roomy, gx_u64 *roomy_hint, gx_u64 now,
			      struct gx_rec_hdr **rec)
{
	gx_u64 old, tail;
	if (roomy) {
		GX_RING_FAST_TRACE();
		tail = gx_ring_load_tail(r);
		old = gx_ring_fadd(r, len);
	} else {
		gx_u64 head;
		gx_ring_snap(r, &head, &tail);
		/* a snapshot may pair an older head with a newer tail */
		gx_u64 used = head > tail ? head - tail : 0;
		if (used + len > size)
			return 0; /* full: refused without touching head */
		if (roomy_hint && 2 * (used + len) <= size)
			__atomic_store_n(roomy_hint, (now + GX_RING_ROOMY_NS) | 1u, __ATOMIC_RELAXED);
		old = gx_ring_fadd(r, len);
	}
	if (old + len - tail > size && !gx_ring_settle(r, old, len, size))
		return 0;
	gx_u8 *d = gx_ring_data(r);
	gx_u64 off = old & (size - 1);
	if (off + len <= size) {
		*rec = (struct gx_rec_hdr *)(d + off);
		return 1;
	}
	/* Crosses the end: both pieces become PAD records, try again. */
	gx_u32 first = (gx_u32)(size - off);
	gx_ring_publish(r, (struct gx_rec_hdr *)(d + off), gx_rec_word(first, GX_REC_PAD));
	gx_ring_publish(r, (struct gx_rec_hdr *)d, gx_rec_word(len - first, GX_REC_PAD));
	return 2;
}

/* Reserve len bytes (header included, multiple of 8) in a ring of `size`
 * data bytes (r->size; the map descriptor's copy saves a dependent load);
 * returns the record or NULL (a drop, counted). The header stays zero until
 * gx_ring_commit.
 *
 * The first try is straight-line code and the retries a loop after it:
 * on the GPU ptxas puts a YIELD at a loop's head, and a reservation that
 * neither crosses the ring's end nor overflows — all but one in a lap —
 * runs no loop at all. (This was session 25's explanation of memtrace's
 * 1 + 31 split, a leader yielding inside its site's handler; GPU run 97
 * refuted it: the split remained with this code. docs/devbpf-perf.md.) */
static inline struct gx_rec_hdr *gx_ring_reserve_n(struct gx_ring *r, gx_u64 size, gx_u32 len)
{
	if (!r)
		return 0;
	gx_u64 *roomy_hint = 0, now = 0;
	int roomy = 0;
#ifdef GX_RING_NOW
	/* first, before anything that branches (it depends on r only): a
	 * plain load of this SM's own word, cached near it. A record refused
	 * here is a drop even if its length was bad (checked just below). */
	gx_u64 *hint = &r->full_until[GX_RING_SHARD() % GX_RING_HINTS];
	now = GX_RING_NOW();
	gx_u64 hv = gx_ring_load_hint(hint);
	if (GX_RING_ROOMY() && size >= GX_RING_ROOMY_MIN)
		roomy_hint = hint;
	if (hv > now) {
		if (!(hv & 1)) { /* full */
			gx_ring_count_drop(r);
			return 0;
		}
		roomy = roomy_hint != 0;
	}
#endif
	if (len == 0 || len > size || (len & 7))
		return 0; /* a bad length is an error, not a drop */
	struct gx_rec_hdr *rec = 0;
	/* roomy on the first try only: a pad's retry looks first */
	int st = gx_ring_try(r, size, len, roomy, roomy_hint, now, &rec);
	for (int tries = 1; st == 2 && tries < GX_RING_TRIES; tries++)
		st = gx_ring_try(r, size, len, 0, roomy_hint, now, &rec);
	if (st == 1)
		return rec;
#ifdef GX_RING_NOW
	__atomic_store_n(hint, (now + GX_RING_FULL_NS) & ~1ull, __ATOMIC_RELAXED); /* even: full */
#endif
	gx_ring_count_drop(r);
	return 0;
}

static inline struct gx_rec_hdr *gx_ring_reserve(struct gx_ring *r, gx_u32 len)
{
	return r ? gx_ring_reserve_n(r, r->size, len) : 0;
}

/* len: the record's exact length (header included); the consumer rounds it
 * up to 8 to find the next record. */
static inline void gx_ring_commit(struct gx_ring *r, struct gx_rec_hdr *h, gx_u32 len, gx_u32 type)
{
	gx_ring_publish(r, h, gx_rec_word(len, type));
}

/* bpf_ringbuf_output. Payloads up to 64 aligned bytes are read into
 * registers before the reservation, in straight-line code: with the size
 * a constant (every call site) the branches fold, the loads read the
 * policy's stack at constant offsets right after the policy's own stores,
 * so the JIT forwards them (the reservation's atomics are opaque asm that
 * would otherwise force the values back through local memory). */
static inline long gx_ring_output_n(struct gx_ring *r, gx_u64 rsize, const void *data, gx_u64 size)
{
	if (!r || size > 0xffff0000u)
		return -GX_EINVAL;
	gx_u32 n = (gx_u32)size;
	gx_u32 len = GX_ROUND8(n + (gx_u32)sizeof(struct gx_rec_hdr));
	if (n <= 64 && (n & 7) == 0 && ((unsigned long)data & 7) == 0) {
		const gx_u64 *s8 = (const gx_u64 *)data;
		gx_u64 w[8];
		gx_u32 nw = n / 8;
#define GX_LD(i) w[i] = nw > i ? s8[i] : 0;
		GX_LD(0) GX_LD(1) GX_LD(2) GX_LD(3) GX_LD(4) GX_LD(5) GX_LD(6) GX_LD(7)
#undef GX_LD
		struct gx_rec_hdr *h = gx_ring_reserve_n(r, rsize, len);
		if (!h)
			return -GX_ENOSPC;
		gx_u64 *d8 = (gx_u64 *)(h + 1);
#define GX_ST(i)               \
	if (nw > i)            \
		d8[i] = w[i];
		GX_ST(0) GX_ST(1) GX_ST(2) GX_ST(3) GX_ST(4) GX_ST(5) GX_ST(6) GX_ST(7)
#undef GX_ST
		gx_ring_commit(r, h, n + (gx_u32)sizeof(struct gx_rec_hdr), GX_REC_DATA);
		return 0;
	}
	struct gx_rec_hdr *h = gx_ring_reserve_n(r, rsize, len);
	if (!h)
		return -GX_ENOSPC;
	gx_copy(h + 1, data, n);
	gx_ring_commit(r, h, n + (gx_u32)sizeof(struct gx_rec_hdr), GX_REC_DATA);
	return 0;
}

static inline long gx_ring_output(struct gx_ring *r, const void *data, gx_u64 size)
{
	return r ? gx_ring_output_n(r, r->size, data, size) : -GX_EINVAL;
}

#endif
