/* maps_dev.c — per-context device copies of maps and the gx_devrt block.
 *
 * The shim owns the CUDA calls; this file owns the layout: it allocates one
 * device buffer per map through ops->alloc, uploads the host copy and fills a
 * struct gx_devrt with the device addresses (the caller copies it into each
 * module's constant-bank __gx_devrt). Rings live in
 * device memory too when the ops can queue on a private stream (dzero_async,
 * htod_async, sync): every record reservation is then an L2 atomic instead
 * of a PCIe round trip (786 ms instead of 1.76 ms for a 1M-block kernel
 * under kernelretsnoop, with host-mapped rings); gx_devmaps__drain copies
 * them to the host mirror. Without those ops rings are host memory mapped
 * for the device (ops->host_map), drained in place. Flush is a device ->
 * host copy of the storage (the layouts are identical), push the reverse.
 * With memcpy callbacks (tests) the whole path runs without a GPU. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "devbpf/gx_bpf.h"
#include "common/gx_log.h"
#include "common/gx_util.h"

struct gx_devmaps {
	struct gx_dev_ops ops;
	size_t nr;
	struct gx_map **maps;
	uint64_t *daddr;     /* per map: device storage (or mapped ring) */
	int *host_mapped;    /* per map: daddr came from host_map */
	int *pinned;         /* per map: device ring whose mirror host_map pinned */
	unsigned char **scratch; /* per record table: the drainer's copy of the device's */
	int dev_rings;       /* rings in device memory (ops can queue async) */
	struct gx_ring *rt_ring;
	uint64_t rt_ring_daddr;
	int rt_pinned;
	struct gx_devrt rt; /* what each module's __gx_devrt gets */
};

static int copied(const struct gx_map *m)
{
	return m->l.type != GX_MAP_RINGBUF;
}

/* Copied both ways by flush and push: not rings, not record tables (their
 * host storage is the drainer's last look, gx_devmaps__drain_records). */
static int mirrored(const struct gx_map *m)
{
	return copied(m) && !m->records;
}

/* A ring in device memory, initialised from its host mirror (the header
 * with its size, zero data); the mirror is pinned when host_map can, so the
 * drain's copies are true async DMA (unpinned still works, staged). */
static int dev_ring(struct gx_devmaps *d, struct gx_ring *mirror, size_t bytes, uint64_t *daddr,
		    int *pinned)
{
	const struct gx_dev_ops *o = &d->ops;
	int ret = o->alloc(o->ctx, bytes, daddr);
	if (!ret)
		ret = o->htod(o->ctx, *daddr, mirror, bytes);
	if (ret)
		return ret;
	uint64_t unused;
	if (o->host_map && o->host_unmap && !o->host_map(o->ctx, mirror, bytes, &unused))
		*pinned = 1;
	return 0;
}

GX_EXPORT int gx_devmaps__create(struct gx_map *const *maps, size_t n, struct gx_ring *rt_ring,
				 size_t rt_ring_bytes, unsigned devrt_flags,
				 const struct gx_dev_ops *ops, struct gx_devmaps **out)
{
	int ret = 0;
	if (!ops || !ops->alloc || !ops->htod || !ops->dtoh || n > GX_DEVRT_MAX_MAPS ||
	    (n && !maps))
		return gx_err(-EINVAL);
	struct gx_devmaps *d = calloc(1, sizeof(*d));
	if (!d)
		return gx_err(-ENOMEM);
	d->ops = *ops;
	d->nr = n;
	d->maps = calloc(n ? n : 1, sizeof(*d->maps));
	d->daddr = calloc(n ? n : 1, sizeof(*d->daddr));
	d->host_mapped = calloc(n ? n : 1, sizeof(*d->host_mapped));
	d->pinned = calloc(n ? n : 1, sizeof(*d->pinned));
	d->scratch = calloc(n ? n : 1, sizeof(*d->scratch));
	d->dev_rings = ops->dzero_async && ops->htod_async && ops->sync;
	if (!d->maps || !d->daddr || !d->host_mapped || !d->pinned || !d->scratch) {
		ret = -ENOMEM;
		goto fail;
	}
	struct gx_devrt rt = { .magic = GX_DEVRT_MAGIC, .version = GX_DEVRT_VERSION,
			       .nr_maps = (uint32_t)n, .flags = devrt_flags };
	for (size_t i = 0; i < n; i++) {
		struct gx_map *m = maps[i];
		d->maps[i] = m;
		if (!m) /* unused slot: zero descriptor, helpers see type 0 */
			continue;
		if (copied(m)) {
			ret = ops->alloc(ops->ctx, m->l.data_size, &d->daddr[i]);
			if (!ret)
				ret = ops->htod(ops->ctx, d->daddr[i],
						(const void *)(uintptr_t)m->l.data, m->l.data_size);
			/* the copy, then a taken bit per slot (records_look) */
			if (!ret && m->records &&
			    !(d->scratch[i] = calloc(1, m->l.data_size + m->l.max_entries / 8 + 1)))
				ret = -ENOMEM;
		} else if (d->dev_rings) {
			ret = dev_ring(d, gx_map__ring(m), m->l.data_size, &d->daddr[i], &d->pinned[i]);
		} else if (ops->host_map) {
			/* read live by the CPU: commits need system scope */
			gx_map__ring(m)->flags |= GX_RING_F_SYS;
			ret = ops->host_map(ops->ctx, (void *)(uintptr_t)m->l.data, m->l.data_size,
					    &d->daddr[i]);
			d->host_mapped[i] = !ret;
		} else {
			ret = -ENOTSUP;
		}
		if (ret) {
			pr_warn("maps: device storage for '%s' failed: %d\n", m->name, ret);
			goto fail;
		}
		rt.maps[i] = m->l;
		rt.maps[i].data = d->daddr[i];
	}
	if (rt_ring && d->dev_rings) {
		ret = dev_ring(d, rt_ring, rt_ring_bytes, &d->rt_ring_daddr, &d->rt_pinned);
		if (ret)
			goto fail;
		d->rt_ring = rt_ring;
		rt.ring = d->rt_ring_daddr;
	} else if (rt_ring) {
		if (!ops->host_map) {
			ret = -ENOTSUP;
			goto fail;
		}
		rt_ring->flags |= GX_RING_F_SYS;
		ret = ops->host_map(ops->ctx, rt_ring, rt_ring_bytes, &d->rt_ring_daddr);
		if (ret)
			goto fail;
		d->rt_ring = rt_ring;
		rt.ring = d->rt_ring_daddr;
	}
	d->rt = rt;
	*out = d;
	return 0;
fail:
	gx_devmaps__free(d);
	return gx_err(ret < 0 ? ret : -EIO);
}

GX_EXPORT const struct gx_devrt *gx_devmaps__devrt(const struct gx_devmaps *d)
{
	return d ? &d->rt : NULL;
}

GX_EXPORT int gx_devmaps__flush(struct gx_devmaps *d)
{
	if (!d)
		return gx_err(-EINVAL);
	int ret = 0;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	for (size_t i = 0; i < d->nr; i++) {
		struct gx_map *m = d->maps[i];
		/* a constant map's device copy cannot have changed (programs may
		 * not write it) and its host copy is read-only */
		if (!m || !mirrored(m) || !d->daddr[i] || gx_map__is_const(m))
			continue;
		int r = d->ops.dtoh(d->ops.ctx, (void *)(uintptr_t)m->l.data, d->daddr[i],
				    m->l.data_size);
		if (r) {
			ret = ret ? ret : r;
			continue;
		}
		__atomic_add_fetch(&m->hdr->gen, 1, __ATOMIC_RELEASE);
		m->hdr->flush_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	}
	return gx_err(ret);
}

GX_EXPORT int gx_devmaps__push(struct gx_devmaps *d)
{
	if (!d)
		return gx_err(-EINVAL);
	for (size_t i = 0; i < d->nr; i++) {
		struct gx_map *m = d->maps[i];
		if (!m || !mirrored(m) || !d->daddr[i])
			continue;
		int r = d->ops.htod(d->ops.ctx, d->daddr[i], (const void *)(uintptr_t)m->l.data,
				    m->l.data_size);
		if (r)
			return gx_err(r);
	}
	return 0;
}

GX_EXPORT void gx_devmaps__free(struct gx_devmaps *d)
{
	if (!d)
		return;
	for (size_t i = 0; d->daddr && i < d->nr; i++) {
		if (!d->daddr[i])
			continue;
		if (d->pinned[i] && d->ops.host_unmap)
			d->ops.host_unmap(d->ops.ctx, (void *)(uintptr_t)d->maps[i]->l.data);
		if (d->host_mapped[i]) {
			if (d->ops.host_unmap)
				d->ops.host_unmap(d->ops.ctx, (void *)(uintptr_t)d->maps[i]->l.data);
		} else if (d->ops.free) {
			d->ops.free(d->ops.ctx, d->daddr[i]);
		}
	}
	if (d->rt_ring && d->dev_rings) {
		if (d->rt_pinned && d->ops.host_unmap)
			d->ops.host_unmap(d->ops.ctx, d->rt_ring);
		if (d->ops.free)
			d->ops.free(d->ops.ctx, d->rt_ring_daddr);
	} else if (d->rt_ring && d->ops.host_unmap) {
		d->ops.host_unmap(d->ops.ctx, d->rt_ring);
	}
	for (size_t i = 0; d->scratch && i < d->nr; i++)
		free(d->scratch[i]);
	free(d->scratch);
	free(d->maps);
	free(d->daddr);
	free(d->host_mapped);
	free(d->pinned);
	free(d);
}

/* ---- device ring consumer ---- */

/* Device -> mirror copy of ring bytes [from, to) (at most one lap). */
static int span_copy(struct gx_devmaps *d, struct gx_ring *mir, uint64_t ddata, uint64_t from, uint64_t to)
{
	unsigned char *data = (unsigned char *)(mir + 1);
	uint64_t mask = mir->size - 1;
	while (from < to) {
		uint64_t off = from & mask, n = to - from;
		if (n > mir->size - off)
			n = mir->size - off;
		int r = d->ops.dtoh(d->ops.ctx, data + off, ddata + off, n);
		if (r)
			return r;
		from += n;
	}
	return 0;
}

/* Zero device ring bytes [from, to), queued on the private stream. */
static int span_zero(struct gx_devmaps *d, const struct gx_ring *mir, uint64_t ddata, uint64_t from, uint64_t to)
{
	uint64_t mask = mir->size - 1;
	while (from < to) {
		uint64_t off = from & mask, n = to - from;
		if (n > mir->size - off)
			n = mir->size - off;
		int r = d->ops.dzero_async(d->ops.ctx, ddata + off, n);
		if (r)
			return r;
		from += n;
	}
	return 0;
}

/* End of the committed records from tail in the mirror's copy (a corrupt
 * header counts as committed: gx_ring__drain then resets the ring). */
static uint64_t committed_end(const struct gx_ring *mir, uint64_t tail, uint64_t head)
{
	const unsigned char *data = (const unsigned char *)(mir + 1);
	while (tail < head) {
		const struct gx_rec_hdr *h = (const void *)(data + (tail & (mir->size - 1)));
		if (!(h->type & GX_REC_COMMITTED))
			break;
		uint64_t room = mir->size - (tail & (mir->size - 1));
		if (h->len < sizeof(*h) || GX_ROUND8(h->len) > room)
			return head;
		tail += GX_ROUND8(h->len);
	}
	return tail < head ? tail : head;
}

/* The consumer of a device ring (gx_devrt.h, "Device rings"): the host
 * mirror's tail is the consumer's; head and drops come from the device. */
static long dev_drain(struct gx_devmaps *d, struct gx_ring *mir, uint64_t dring, gx_ring_cb cb, void *ctx)
{
	struct gx_ring dh = { 0 };
	int r = d->ops.dtoh(d->ops.ctx, &dh, dring, offsetof(struct gx_ring, full_until));
	if (r)
		return gx_err(r);
	/* the producers' drop shards, summed here (the mirror's own shards
	 * stay zero: nobody produces into the mirror) */
	__atomic_store_n(&mir->drops, gx_ring__drops(&dh), __ATOMIC_RELAXED);
	uint64_t tail = mir->tail, head = dh.head;
	if (!mir->size || head <= tail)
		return 0;
	if (head - tail > mir->size) /* cannot happen: at most one lap reserved */
		head = tail + mir->size;
	uint64_t ddata = dring + sizeof(struct gx_ring);
	/* The copy engine may read a record's payload before a producer wrote
	 * it and its committed header after: copy once to find which records
	 * were committed, then again, those only (their payloads were complete
	 * before the first copy finished: the producer fences before commit). */
	if ((r = span_copy(d, mir, ddata, tail, head)))
		return gx_err(r);
	uint64_t end = committed_end(mir, tail, head);
	if (end == tail)
		return 0;
	if ((r = span_copy(d, mir, ddata, tail, end)))
		return gx_err(r);
	__atomic_store_n(&mir->head, end, __ATOMIC_RELEASE);
	long n = gx_ring__drain(mir, cb, ctx);
	uint64_t nt = __atomic_load_n(&mir->tail, __ATOMIC_ACQUIRE);
	/* Producers must find zero headers where they reserve: clear what was
	 * consumed, then (same stream, in order) let them reuse it. */
	r = span_zero(d, mir, ddata, tail, nt);
	if (!r)
		r = d->ops.htod_async(d->ops.ctx, dring + offsetof(struct gx_ring, tail), &mir->tail,
				      sizeof(mir->tail));
	/* room made: the SMs that found the ring full may look again (their
	 * cached hints expire by themselves within GX_RING_FULL_NS) */
	if (!r && nt > tail)
		r = d->ops.dzero_async(d->ops.ctx, dring + offsetof(struct gx_ring, full_until),
				       sizeof(mir->full_until));
	int s = d->ops.sync(d->ops.ctx);
	if (r || s)
		return gx_err(r ? r : s);
	return n;
}

GX_EXPORT long gx_devmaps__drain(struct gx_devmaps *d, long map, gx_ring_cb cb, void *ctx)
{
	if (!d || map < GX_DEVMAPS_RT || (map >= 0 && (size_t)map >= d->nr))
		return gx_err(-EINVAL);
	struct gx_ring *mir;
	uint64_t dring;
	if (map == GX_DEVMAPS_RT) {
		mir = d->rt_ring;
		dring = d->rt_ring_daddr;
	} else {
		struct gx_map *m = d->maps[map];
		if (!m || m->l.type != GX_MAP_RINGBUF)
			return gx_err(-EINVAL);
		mir = gx_map__ring(m);
		dring = d->daddr[map];
	}
	if (!mir)
		return 0;
	if (!d->dev_rings)
		return gx_ring__drain(mir, cb, ctx);
	return dev_drain(d, mir, dring, cb, ctx);
}

/* ---- record tables (GDEV_F_RECORDS) ---- */

/* A record table's slot is empty: every byte equals the first and the
 * first is 0 (memcmp of the slot against itself one byte on is glibc's
 * vectorized compare: a drain looks at every slot of a 3.7 MB table) */
static int all_zero(const unsigned char *p, size_t n)
{
	return !n || (!p[0] && !memcmp(p, p + 1, n - 1));
}

/* One look at a record table: copy the device's slots, hand on each slot
 * that is not zero, holds what the previous look saw (prev, the map's host
 * storage) and was not handed on already (the taken bits after the copy in
 * the scratch buffer), and remember the others. Why two looks: a
 * producer's plain stores may reach memory in any order and the copy
 * engine may read a slot between them; a record that stayed the same for a
 * whole drain period was complete (one warp writes it within
 * microseconds). Nothing is written to the device: a slot the program
 * fills again (kernelretsnoop's regions come round every 256 launches)
 * could be filled between this copy and a clear, and the clear would lose
 * that record. A new record differs from the one taken (its time). */
static long records_look(struct gx_devmaps *d, size_t i, unsigned char *rec, gx_ring_cb cb, void *ctx, long *pending)
{
	struct gx_map *m = d->maps[i];
	size_t stride = m->l.value_stride, vs = m->l.value_size, n = m->l.max_entries;
	unsigned char *prev = (unsigned char *)(uintptr_t)m->l.data, *cur = d->scratch[i];
	unsigned char *taken = cur + m->l.data_size;
	int r = d->ops.dtoh(d->ops.ctx, cur, d->daddr[i], m->l.data_size);
	if (r)
		return r;
	long got = 0;
	*pending = 0;
	for (size_t s = 0; s < n; s++) {
		const unsigned char *c = cur + s * stride;
		unsigned char *p = prev + s * stride, bit = (unsigned char)(1u << (s & 7));
		if (all_zero(c, vs)) {
			memset(p, 0, vs);
			taken[s >> 3] &= (unsigned char)~bit;
		} else if (memcmp(c, p, vs)) {
			memcpy(p, c, vs);
			taken[s >> 3] &= (unsigned char)~bit;
			(*pending)++;
		} else if (!(taken[s >> 3] & bit)) {
			taken[s >> 3] |= bit;
			memcpy(rec + sizeof(struct gx_rec_hdr), c, vs);
			if (cb)
				cb(ctx, GX_REC_DATA, rec, sizeof(struct gx_rec_hdr) + vs);
			got++;
		}
	}
	return got;
}

GX_EXPORT long gx_devmaps__drain_records(struct gx_devmaps *d, long map, gx_ring_cb cb, void *ctx, int final,
					 long *pending)
{
	if (!d || map < 0 || (size_t)map >= d->nr || !d->maps[map] || !d->maps[map]->records ||
	    !d->scratch[map] || !d->daddr[map])
		return gx_err(-EINVAL);
	struct gx_map *m = d->maps[map];
	unsigned char *rec = calloc(1, sizeof(struct gx_rec_hdr) + m->l.value_size);
	if (!rec)
		return gx_err(-ENOMEM);
	struct gx_rec_hdr h = { (uint32_t)(sizeof(h) + m->l.value_size), GX_REC_DATA | GX_REC_COMMITTED };
	memcpy(rec, &h, sizeof(h));
	long got = 0, left = 0;
	/* the last drain (the context synchronized): a second look at once
	 * takes what the first saw for the first time */
	for (int look = 0; look < (final ? 2 : 1); look++) {
		long n = records_look(d, (size_t)map, rec, cb, ctx, &left);
		if (n < 0) {
			free(rec);
			return gx_err((int)n);
		}
		got += n;
	}
	free(rec);
	if (pending)
		*pending = left;
	return got;
}
