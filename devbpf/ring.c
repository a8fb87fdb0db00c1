/* ring.c — the consumer side of device -> host rings (gx_devrt.h has the
 * protocol) and the printk formatter. One consumer per ring: the shim's
 * background thread, or a test. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "devbpf/gx_bpf.h"
#include "common/gx_util.h"

GX_EXPORT int gx_ring__init(struct gx_ring *r, uint64_t size)
{
	if (!r || size < 64 || (size & (size - 1)))
		return gx_err(-EINVAL);
	memset(r, 0, gx_ring_bytes(size));
	r->size = size;
	return 0;
}

GX_EXPORT uint64_t gx_ring__drops(const struct gx_ring *r)
{
	uint64_t n = 0;
	if (!r)
		return 0;
	for (unsigned i = 0; i < GX_RING_DROP_SHARDS; i++)
		n += __atomic_load_n(&r->drop_sh[i], __ATOMIC_RELAXED);
	return n;
}

GX_EXPORT void gx_ring__clear_hints(struct gx_ring *r)
{
	for (unsigned i = 0; r && i < GX_RING_HINTS; i++)
		if (__atomic_load_n(&r->full_until[i], __ATOMIC_RELAXED))
			__atomic_store_n(&r->full_until[i], 0, __ATOMIC_RELAXED);
}

/* The committed header at tail, as one 8-byte load (producers publish
 * {len, type} with one release store); type 0 = not committed yet. */
static uint32_t rec_at(const unsigned char *data, uint64_t off, uint32_t *len)
{
	uint64_t w = __atomic_load_n((const uint64_t *)(const void *)(data + off), __ATOMIC_ACQUIRE);
	struct gx_rec_hdr h;
	memcpy(&h, &w, sizeof(h));
	*len = h.len;
	return h.type;
}

GX_EXPORT long gx_ring__drain(struct gx_ring *r, gx_ring_cb cb, void *ctx)
{
	if (!r || !r->size || (r->size & (r->size - 1)))
		return gx_err(-EINVAL);
	unsigned char *data = (unsigned char *)(r + 1);
	uint64_t tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
	long n = 0;
	/* In-place rings: the producers' shards are here. A device ring's
	 * mirror has none (gx_devmaps__drain stored the device's sum): the
	 * counts only grow, so the larger value is the current one. */
	uint64_t dr = gx_ring__drops(r);
	if (dr > __atomic_load_n(&r->drops, __ATOMIC_RELAXED))
		__atomic_store_n(&r->drops, dr, __ATOMIC_RELAXED);
	for (;;) {
		uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
		if (tail >= head)
			break;
		uint64_t off = tail & (r->size - 1);
		uint32_t len, type = rec_at(data, off, &len);
		if (!(type & GX_REC_COMMITTED))
			break; /* reserved, not yet committed: try again later */
		struct gx_rec_hdr *h = (struct gx_rec_hdr *)(data + off);
		uint64_t room = r->size - off;
		if (len < sizeof(*h) || GX_ROUND8(len) > room) {
			/* corrupt record: drop everything reserved so far */
			memset(data, 0, r->size);
			__atomic_store_n(&r->tail, head, __ATOMIC_RELEASE);
			return gx_err(-EBADMSG);
		}
		type &= ~GX_REC_COMMITTED;
		int stop = 0;
		if (type != GX_REC_PAD && cb)
			stop = cb(ctx, type, h, len);
		memset(h, 0, GX_ROUND8(len)); /* producers find zero headers */
		tail += GX_ROUND8(len);
		__atomic_store_n(&r->tail, tail, __ATOMIC_RELEASE);
		if (type != GX_REC_PAD)
			n++;
		if (stop)
			break;
	}
	if (n)
		gx_ring__clear_hints(r);
	return n;
}

/* Integer conversions only: the arguments are eBPF registers. */
GX_EXPORT int gx_printk_format(const struct gx_rec_printk *rec, char *out, size_t n)
{
	char fmt[GX_PRINTK_FMT_MAX];
	size_t o = 0;
	int arg = 0;
	if (!rec || !out || !n)
		return gx_err(-EINVAL);
	memcpy(fmt, rec->fmt, sizeof(fmt));
	fmt[sizeof(fmt) - 1] = 0;
#define PUT(...)                                                           \
	do {                                                               \
		int k_ = snprintf(out + o, o < n ? n - o : 0, __VA_ARGS__); \
		if (k_ > 0)                                                \
			o += (size_t)k_;                                   \
	} while (0)
	for (const char *p = fmt; *p; p++) {
		if (*p != '%') {
			PUT("%c", *p);
			continue;
		}
		p++;
		if (*p == '%') {
			PUT("%%");
			continue;
		}
		int l = 0;
		while (*p == 'l')
			l++, p++;
		uint64_t v = arg < 3 ? rec->args[arg] : 0;
		switch (*p) {
		case 'd':
		case 'i':
			if (l)
				PUT("%" PRId64, (int64_t)v);
			else
				PUT("%d", (int)(int32_t)v);
			break;
		case 'u':
			PUT("%" PRIu64, l ? v : (uint32_t)v);
			break;
		case 'x':
			PUT("%" PRIx64, l ? v : (uint32_t)v);
			break;
		case 'p':
			PUT("0x%" PRIx64, v);
			break;
		case 0:
			p--;
			continue;
		default:
			PUT("%%%c", *p);
			continue;
		}
		arg++;
	}
#undef PUT
	if (o >= n)
		out[n - 1] = 0;
	return (int)(o < n ? o : n - 1);
}
