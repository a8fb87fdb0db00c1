/* gx_map.h — maps runtime: one logical map for GPU, shim, tools and host
 * policies.
 *
 * The canonical copy of a map lives on the host, by default in shared memory
 * (`/dev/shm/gpuext-$UID/<pid>-<name>`, folder 0700, file 0600; GPUEXT_SHM_DIR
 * overrides the folder) so `gpuext map list|dump` can read it from outside the
 * process. The file is a page-sized header (struct gx_shm_hdr) followed by the
 * storage in the layout of gx_devrt.h. Device storage is a copy of that
 * storage made per CUDA context (gx_devmaps, below); flushing copies device
 * bytes back, so host and device never translate between formats.
 *
 * Semantics per type after a flush (relaxed, snapshot consistency: a flush
 * while kernels run sees each 8-byte word old or new):
 *  - ARRAY, HASH: the host copy equals the device copy at flush time. Host
 *    writes reach the device with gx_devmaps__push (before launches).
 *  - PERSM_ARRAY / PERWARP_ARRAY: every shard stays visible
 *    (gx_map__shard_elem); gx_map__merged_u64 gives the merged view: the sum
 *    over shards of each 64-bit word (counters). Values whose size is not a
 *    multiple of 8 have no merged view (-EINVAL).
 *  - RINGBUF: not copied; the ring itself is host memory the device writes
 *    (mapped with ops->host_map), drained by the host (gx_ring__drain).
 *
 * A struct gx_map starts with its struct gx_devrt_map whose `data` is the host
 * storage: that is the handle the host helpers (and native JIT code) take. */
#ifndef GX_MAP_H
#define GX_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "devbpf/gx_devrt.h"

#define GX_SHM_MAGIC 0x504d5847u /* "GXMP" */
#define GX_SHM_VERSION 1
#define GX_SHM_DATA_OFF 4096 /* storage starts page-aligned (host_map needs it) */
#define GX_MAP_NAME_MAX 64

struct gx_shm_hdr {
	uint32_t magic;   /* GX_SHM_MAGIC */
	uint32_t version; /* GX_SHM_VERSION */
	uint32_t hdr_size; /* sizeof(struct gx_shm_hdr) */
	uint32_t pid;     /* creating process */
	char name[GX_MAP_NAME_MAX];
	struct gx_devrt_map layout; /* .data = GX_SHM_DATA_OFF (offset in the file) */
	uint64_t gen;      /* bumped by every flush from the device */
	uint64_t flush_ns; /* CLOCK_REALTIME of the last flush */
	uint32_t dev;      /* device copy of this context: CUDA ordinal + 1 (0: none/unknown) */
	uint32_t ctx;      /* that context's index in the process (the "@N" of the name) */
	uint32_t flags;    /* GX_SHM_F_* */
	uint32_t reserved32;
	uint64_t reserved[4];
};

/* The verifier folded the map's bytes into its programs' code (.rodata*,
 * gx_bpf_section_is_rodata): nothing may write them after load. Set by
 * gx_map__seal, which also makes the file read-only (0400). */
#define GX_SHM_F_CONST 1u

struct gx_map {
	struct gx_devrt_map l; /* first: the helper handle; l.data = host storage */
	char name[GX_MAP_NAME_MAX];
	struct gx_shm_hdr *hdr; /* mapping base (shm or anonymous) */
	size_t map_size;
	int owner;   /* created here: unlink on free unless kept */
	int keep;
	int writable;
	char path[384]; /* "" for anonymous maps */
	void *sealed;   /* gx_map__seal: the private read-only copy l.data points at */
	size_t sealed_len;
};

struct gx_map_spec {
	const char *name;
	unsigned type; /* GX_MAP_* */
	unsigned key_size, value_size, max_entries;
	unsigned nr_shards; /* sharded arrays: shard count (0 = 1) */
};

enum {
	GX_MAP_F_SHM = 1u << 0,  /* back with a file in the shm folder */
	GX_MAP_F_KEEP = 1u << 1, /* leave the file when the map is freed */
};

/* Create a map (zero-filled). Returns 0 or -errno; messages go to gx_log. */
int gx_map__create(const struct gx_map_spec *spec, unsigned flags, struct gx_map **out);
/* Open a map file created by another process (read-only unless writable).
 * A constant map (GX_SHM_F_CONST) is never opened for writing: -EROFS. */
int gx_map__open(const char *path, int writable, struct gx_map **out);
void gx_map__free(struct gx_map *m);
/* Make a map constant (global data the verifier folds:
 * GX_BPF_MAP_F_RDONLY), its storage starting with the `len` bytes the
 * programs were verified with (`bytes`; NULL: the storage as it is). From
 * then on this process reads a private, read-only copy (l.data changes: take
 * it after this call; a write faults, an update fails with -EPERM), so no
 * write to the shared file, by gpuext or anyone else, reaches the programs;
 * the file gets the same bytes for `gpuext map dump`, says GX_SHM_F_CONST
 * and becomes 0400. Arrays only. 0 or -errno. */
int gx_map__seal(struct gx_map *m, const void *bytes, size_t len);
/* Whether m is constant: sealed here, or marked so by the process that
 * created its file. */
int gx_map__is_const(const struct gx_map *m);

/* Folder of the shm files: $GPUEXT_SHM_DIR or /dev/shm/gpuext-$UID. */
int gx_map_shm_dir(char *buf, size_t n);
/* Compute the layout (sizes, shard and bucket counts) of a spec; -EINVAL if
 * the spec is invalid. layout->data is left 0. */
int gx_map_layout(const struct gx_map_spec *spec, struct gx_devrt_map *layout);

/* Host-side operations with the helpers' semantics (sharded arrays use the
 * shard of gx_host_env). Return 0 / pointer, or -errno / NULL. */
void *gx_map__lookup(struct gx_map *m, const void *key);
int gx_map__update(struct gx_map *m, const void *key, const void *value, uint64_t flags);
int gx_map__delete(struct gx_map *m, const void *key);
/* Iterate keys: prev NULL gives the first. Returns 0, or -ENOENT at the end.
 * Hash maps iterate in bucket order. */
int gx_map__next_key(struct gx_map *m, const void *prev, void *next);
/* Element idx of shard s (arrays: s = 0). */
void *gx_map__shard_elem(struct gx_map *m, unsigned shard, unsigned idx);
/* Merged view of a sharded array element: out[w] = sum over shards of word w
 * (value_size / 8 words). */
int gx_map__merged_u64(struct gx_map *m, unsigned idx, uint64_t *out);
/* RINGBUF maps: the ring. */
struct gx_ring *gx_map__ring(struct gx_map *m);
const char *gx_map_type_name(unsigned type);

/* ---- ring consumer (ring.c) ---- */
/* Initialize a ring of `size` data bytes (power of two, >= 64) at r. */
int gx_ring__init(struct gx_ring *r, uint64_t size);
/* Bytes a ring of `size` data bytes occupies. */
static inline size_t gx_ring_bytes(uint64_t size)
{
	return sizeof(struct gx_ring) + (size_t)size;
}
/* Records refused so far (the sum of the producers' drop shards); drains
 * store it in r->drops. */
uint64_t gx_ring__drops(const struct gx_ring *r);
/* Forget the producers' "full" hints (drains do it once they made room). */
void gx_ring__clear_hints(struct gx_ring *r);
typedef int (*gx_ring_cb)(void *ctx, unsigned type, const void *rec, size_t len);
/* Consume committed records in order (PAD records skipped), calling cb with
 * the whole record (header included) and its exact length; a non-zero cb
 * return stops after that record. Returns the number consumed. */
long gx_ring__drain(struct gx_ring *r, gx_ring_cb cb, void *ctx);
/* Format a printk record ("%d %u %x %ld %lu %lx %lld %llu %llx %p %%"). */
int gx_printk_format(const struct gx_rec_printk *rec, char *out, size_t n);

/* ---- device copies (maps_dev.c), testable without a GPU ---- */
struct gx_dev_ops {
	void *ctx;
	int (*alloc)(void *ctx, size_t size, uint64_t *daddr);
	void (*free)(void *ctx, uint64_t daddr);
	int (*htod)(void *ctx, uint64_t daddr, const void *src, size_t n);
	int (*dtoh)(void *ctx, void *dst, uint64_t daddr, size_t n);
	/* Make page-aligned host memory addressable by the device (rings). */
	int (*host_map)(void *ctx, void *host, size_t n, uint64_t *daddr);
	void (*host_unmap)(void *ctx, void *host);
	/* Device rings (all three or none). With them, rings live in device
	 * memory (reservations are L2 atomics, not PCIe ones) and
	 * gx_devmaps__drain copies them to their host mirror; without them
	 * rings are host memory mapped for the device (host_map). Both queue
	 * on the consumer's private stream, in order; sync waits for it.
	 * dtoh must also run on that stream (it is waited for before return). */
	int (*dzero_async)(void *ctx, uint64_t daddr, size_t n);
	int (*htod_async)(void *ctx, uint64_t daddr, const void *src, size_t n);
	int (*sync)(void *ctx);
};

struct gx_devmaps;
/* Allocate device storage for maps[0..n) (index = the JIT's map index),
 * upload the host copies, build and upload struct gx_devrt. rt_ring: the
 * runtime ring for printk/prefetch records (page-aligned host memory) or NULL. */
int gx_devmaps__create(struct gx_map *const *maps, size_t n, struct gx_ring *rt_ring,
		       size_t rt_ring_bytes, unsigned devrt_flags, const struct gx_dev_ops *ops,
		       struct gx_devmaps **out);
/* Consume the records of ring map `map` (its index), or of the runtime
 * ring with GX_DEVMAPS_RT, through cb (as gx_ring__drain). Device rings:
 * copies the committed span to the host mirror (the map's ring / the
 * rt_ring given to create), parses it there, clears the consumed records on
 * the device and publishes the new tail; the mirror's drops mirror the
 * device's. Host-mapped rings drain in place. Returns records consumed. */
#define GX_DEVMAPS_RT (-1L)
long gx_devmaps__drain(struct gx_devmaps *d, long map, gx_ring_cb cb, void *ctx);
/* Device address of the struct gx_devrt (what goes into __gx_devrt). */
uint64_t gx_devmaps__devrt(const struct gx_devmaps *d);
/* Device -> host copy of every array/hash/sharded map; bumps gen. */
int gx_devmaps__flush(struct gx_devmaps *d);
/* Host -> device copy (after host-side updates). */
int gx_devmaps__push(struct gx_devmaps *d);
void gx_devmaps__free(struct gx_devmaps *d);

#endif
