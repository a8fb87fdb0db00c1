/* maps_dev.c — per-context device copies of maps and the gx_devrt block.
 *
 * The shim owns the CUDA calls; this file owns the layout: it allocates one
 * device buffer per map through ops->alloc, uploads the host copy, fills a
 * struct gx_devrt with the device addresses and uploads it. Rings are not
 * copied: their host memory is mapped for the device (ops->host_map) so the
 * host drains records while kernels run. Flush is a device -> host copy of
 * the storage (the layouts are identical), push the reverse. With memcpy
 * callbacks (tests) the whole path runs without a GPU. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "devbpf/gx_map.h"
#include "gx_log.h"
#include "gx_util.h"

struct gx_devmaps {
	struct gx_dev_ops ops;
	size_t nr;
	struct gx_map **maps;
	uint64_t *daddr;     /* per map: device storage (or mapped ring) */
	int *host_mapped;    /* per map: daddr came from host_map */
	struct gx_ring *rt_ring;
	uint64_t rt_ring_daddr;
	uint64_t devrt_daddr;
};

static int copied(const struct gx_map *m)
{
	return m->l.type != GX_MAP_RINGBUF;
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
	if (!d->maps || !d->daddr || !d->host_mapped) {
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
		} else if (ops->host_map) {
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
	if (rt_ring) {
		if (!ops->host_map) {
			ret = -ENOTSUP;
			goto fail;
		}
		ret = ops->host_map(ops->ctx, rt_ring, rt_ring_bytes, &d->rt_ring_daddr);
		if (ret)
			goto fail;
		d->rt_ring = rt_ring;
		rt.ring = d->rt_ring_daddr;
	}
	ret = ops->alloc(ops->ctx, sizeof(rt), &d->devrt_daddr);
	if (!ret)
		ret = ops->htod(ops->ctx, d->devrt_daddr, &rt, sizeof(rt));
	if (ret)
		goto fail;
	*out = d;
	return 0;
fail:
	gx_devmaps__free(d);
	return gx_err(ret < 0 ? ret : -EIO);
}

GX_EXPORT uint64_t gx_devmaps__devrt(const struct gx_devmaps *d)
{
	return d ? d->devrt_daddr : 0;
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
		if (!m || !copied(m) || !d->daddr[i])
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
		if (!m || !copied(m) || !d->daddr[i])
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
		if (d->host_mapped[i]) {
			if (d->ops.host_unmap)
				d->ops.host_unmap(d->ops.ctx, (void *)(uintptr_t)d->maps[i]->l.data);
		} else if (d->ops.free) {
			d->ops.free(d->ops.ctx, d->daddr[i]);
		}
	}
	if (d->rt_ring && d->ops.host_unmap)
		d->ops.host_unmap(d->ops.ctx, d->rt_ring);
	if (d->devrt_daddr && d->ops.free)
		d->ops.free(d->ops.ctx, d->devrt_daddr);
	free(d->maps);
	free(d->daddr);
	free(d->host_mapped);
	free(d);
}
