/* gx_devrt.h — the device runtime block and the memory layouts of maps.
 *
 * Why one header: the same bytes are written by three parties and read by a
 * fourth. The shim allocates map storage on the device and fills a
 * `struct gx_devrt`, which it copies whole into each instrumented module's
 * constant-bank variable `__gx_devrt` (GDEV_DEVRT_SYMBOL; `__gx_devrt__p<k>`
 * for the k-th of several policies); the device helpers (compiled from C to
 * NVPTX bitcode, devbpf/helpers/) find every map there; the host map
 * runtime (devbpf/maps*.c) keeps the canonical copy in shared memory with the
 * *same* storage layout, so a flush is a plain device-to-host copy; and
 * `gpuext map dump` decodes it from outside the process.
 *
 * Plain C types only (included by nvptx C, BPF-free host C and the shim;
 * gx_devrt_symbol for host C only). */
#ifndef GX_DEVRT_H
#define GX_DEVRT_H

#include "gpuext/gdev_ctx.h"

#define GX_DEVRT_MAGIC 0x56445847u /* "GXDV" */
#define GX_DEVRT_VERSION 2 /* 2: the block lives in each module (.const), no next[] */
#define GX_DEVRT_MAX_MAPS 64

/* Map types: values of GDEV_MAP_* in gdev_helpers.h (kernel numbers where
 * they exist). Repeated here so runtime code needs no policy-author header. */
#define GX_MAP_HASH 1
#define GX_MAP_ARRAY 2
#define GX_MAP_PERSM_ARRAY 6       /* BPF_MAP_TYPE_PERCPU_ARRAY: one shard per SM */
#define GX_MAP_RINGBUF 27
#define GX_MAP_PERWARP_ARRAY 0x1001 /* one shard per hardware warp slot */

/* Hardware warp slots per SM used to index per-warp shards: %smid * 64 +
 * %warpid. 64 is the most resident warps of any sm_70..sm_100 SM. */
#define GX_WARP_SLOTS_PER_SM 64

/* ---- Layouts (all offsets 8-byte aligned) ----
 * ARRAY:        max_entries x value_stride bytes.
 * PERSM/PERWARP: nr_shards x max_entries x value_stride; shard s, key k at
 *                (s * max_entries + k) * value_stride.
 * HASH:         nr_buckets (power of two >= 2 * max_entries) buckets of
 *               bucket_size = 8 + round8(key_size) + value_stride bytes:
 *               { u32 state; u32 hash; key; value }. Open addressing, linear
 *               probing. state: EMPTY, BUSY (being written), FULL, TOMB.
 *               Insert claims a bucket with one CAS on its state word (the
 *               only atomic), writes key+value, then publishes FULL.
 * RINGBUF:      a struct gx_ring header followed by `size` bytes of data
 *               (size = max_entries, a power of two). */
#define GX_HB_EMPTY 0u
#define GX_HB_BUSY 1u
#define GX_HB_FULL 2u
#define GX_HB_TOMB 3u

#define GX_ROUND8(x) (((x) + 7u) & ~7u)

struct gx_devrt_map {
	gdev_u32 type;         /* GX_MAP_* */
	gdev_u32 key_size;
	gdev_u32 value_size;
	gdev_u32 max_entries;
	gdev_u32 value_stride; /* GX_ROUND8(value_size) */
	gdev_u32 nr_shards;    /* sharded arrays; 1 otherwise */
	gdev_u32 nr_buckets;   /* hash */
	gdev_u32 bucket_size;  /* hash */
	gdev_u64 data;         /* device address of the storage above */
	gdev_u64 data_size;    /* bytes */
};

/* Device -> host ring (ringbuf maps and the runtime ring).
 * Where it lives: in device memory (the shim), so reservations are L2
 * atomics; the host keeps a mirror with the same layout (the map's storage,
 * the shim's rt ring) whose `tail` is the consumer's. Tests and harnesses
 * without async ops map host memory for the device instead and drain in
 * place (maps_dev.c); such rings carry GX_RING_F_SYS.
 * Protocol (multi-producer, one consumer; mapimpl_internal.h has the why):
 *  - reserve: one snapshot load of {head, tail}; refused at once (no
 *    atomic on head) when head + len - tail > size; else one fetch-add of
 *    len on `head`. The rare reservation that overflows anyway (the
 *    snapshot was stale) settles in a slow path: it succeeds once a fresh
 *    tail shows room, or rolls head back with a CAS when it is the last
 *    reservation (overflowing reservations unwind last-in first-out, so a
 *    reserved byte range is never left without a header). A record never
 *    wraps: a reservation that would cross the end becomes PAD records
 *    (its piece at the end and its piece at the start) and is retried.
 *  - drops: refused records are counted in drop_sh[smid % 256], one counter
 *    per SM (a full ring refuses up to ~10^9 records/s: one shared counter,
 *    or a few in one L2 line, would serialise them in one L2 slice); the
 *    consumer sums them into `drops`.
 *  - full hint: a producer that finds the ring full sets its SM's
 *    full_until[smid % 256] to now + GX_RING_FULL_NS (%globaltimer); until
 *    then that SM refuses at once, reading only its own hint (an L1 hit)
 *    instead of the shared head. The consumer clears the hints after each
 *    drain (an SM may still refuse for up to GX_RING_FULL_NS after a drain:
 *    those refusals are counted drops like any other).
 *  - roomy hint (GX_DEVRT_F_RING_ROOMY, rings of 2 MiB or more): a producer
 *    whose snapshot finds the ring at most half full sets its SM's hint to
 *    (now + GX_RING_FULL_NS) | 1; until then that SM's producers load the
 *    tail and fetch-add head together, without the snapshot first.
 *  - commit: write the payload, then the 8-byte header { len, type |
 *    GX_REC_COMMITTED } as one store with release semantics at GPU scope
 *    (system scope for GX_RING_F_SYS rings, read live by the CPU).
 *  - consume (gx_devmaps__drain, on the consumer's private stream): read
 *    the header block; copy [tail, head) to the mirror; find the committed
 *    prefix [tail, end) (an uncommitted header stops it); copy that prefix
 *    again (its payloads were complete before the first copy ended — the
 *    copy engine may read a payload before the header); parse it on the
 *    mirror; zero the consumed bytes on the device, then write the new tail
 *    (same stream, in that order), so a producer's reservation always starts
 *    on a zero header. */
#define GX_RING_DROP_SHARDS 256 /* drop counters, one per SM (smid % 256) */
#define GX_RING_HINTS 256     /* full hints, one per SM (smid % 256) */
#define GX_RING_FULL_NS 5000u /* how long a full ring is not looked at again */
#define GX_RING_F_SYS 1u      /* host memory the CPU reads while kernels run */
struct gx_ring {
	gdev_u64 head;  /* producers: bytes reserved (monotonic but for overflow rollbacks) */
	gdev_u64 tail;  /* consumer: bytes consumed (monotonic) */
	gdev_u64 size;  /* data bytes, power of two */
	gdev_u64 drops; /* consumer: records refused, the sum of drop_sh at its last look */
	gdev_u32 flags; /* GX_RING_F_* (set before producers start) */
	gdev_u32 pad0;
	gdev_u64 pad[3];
	gdev_u64 drop_sh[GX_RING_DROP_SHARDS]; /* producers: records refused, by SM */
	/* separate lines from drop_sh: an SM's reductions there must not evict
	 * the hint line its producers read from L1 */
	/* producers: ring seen full, refuse until (ns; even), or seen at most
	 * half full, reserve without a snapshot until (ns; odd) */
	gdev_u64 full_until[GX_RING_HINTS];
	/* data follows (64-byte aligned header) */
};

struct gx_rec_hdr {
	gdev_u32 len;  /* exact bytes including this header; next record at GX_ROUND8(len) */
	gdev_u32 type; /* GX_REC_* | GX_REC_COMMITTED */
};
#define GX_REC_COMMITTED 0x80000000u
#define GX_REC_PAD 0u
#define GX_REC_DATA 1u     /* bpf_ringbuf_output payload */
#define GX_REC_PRINTK 2u   /* struct gx_rec_printk */
#define GX_REC_PREFETCH 3u /* struct gx_rec_prefetch */

#define GX_PRINTK_FMT_MAX 96
struct gx_rec_printk {
	struct gx_rec_hdr hdr;
	gdev_u64 ts;       /* globaltimer ns */
	gdev_u32 smid, warpid;
	gdev_u64 args[3];
	char fmt[GX_PRINTK_FMT_MAX]; /* NUL-terminated (truncated) */
};

struct gx_rec_prefetch {
	struct gx_rec_hdr hdr;
	gdev_u64 addr;
	gdev_u64 len;
	gdev_u64 ts;
	gdev_u32 smid, pad;
};

#define GX_DEVRT_F_PRINTK 1u   /* printk records enabled */
#define GX_DEVRT_F_PREFETCH 2u /* mem_prefetch records enabled */
#define GX_DEVRT_F_RING_ROOMY 4u /* ring producers skip the snapshot while their SM's hint says roomy */

struct gx_devrt {
	gdev_u32 magic;   /* GX_DEVRT_MAGIC */
	gdev_u32 version; /* GX_DEVRT_VERSION */
	gdev_u32 nr_maps;
	gdev_u32 flags;   /* GX_DEVRT_F_* */
	gdev_u64 ring;    /* device address of the runtime ring (printk, prefetch); 0 = none */
	gdev_u64 launch_id;
	gdev_u64 pad[5];
	struct gx_devrt_map maps[GX_DEVRT_MAX_MAPS];
};

#if !defined(__NVPTX__) && !defined(__bpf__)
#include <stdio.h>
/* The name of policy p's block in a module: __gx_devrt, __gx_devrt__p1 .. */
static inline void gx_devrt_symbol(char *buf, size_t n, unsigned p)
{
	if (p)
		snprintf(buf, n, GDEV_DEVRT_SYMBOL GDEV_DEVRT_SUFFIX "%u", p);
	else
		snprintf(buf, n, "%s", GDEV_DEVRT_SYMBOL);
}
#endif

#endif
