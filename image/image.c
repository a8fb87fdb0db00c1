/* image.c — recognise a CUDA code image and dispatch to its parser; pick the
 * PTX a device would JIT.
 *
 * The shim calls this on every module load with whatever pointer the
 * application passed, often without a size, so recognition looks at a few
 * bytes only and every later read is bounded by headers already validated. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/gx_util.h"
#include "image/image_internal.h"

int gx__img_fail(struct gx_img_ctx *c, int ret, const char *fmt, ...)
{
	if (c->err && c->errlen && !c->err[0]) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(c->err, c->errlen, fmt, ap);
		va_end(ap);
	}
	return ret;
}

struct gx_image_entry *gx__img_add(struct gx_img_ctx *c)
{
	struct gx_image *im = c->im;
	if (im->nr_entries == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 8;
		struct gx_image_entry *n = realloc(im->entries, ncap * sizeof(*n));
		if (!n) {
			gx__img_fail(c, -ENOMEM, "out of memory for %zu image entries", ncap);
			return NULL;
		}
		im->entries = n;
		c->cap = ncap;
	}
	struct gx_image_entry *e = &im->entries[im->nr_entries++];
	memset(e, 0, sizeof(*e));
	e->prelinked = c->prelinked;
	return e;
}

const void *gx__img_resolve(struct gx_img_ctx *c, uint64_t addr, size_t *avail)
{
	if (!addr)
		return NULL;
	if (c->opts.resolve) {
		*avail = 0;
		const void *p = c->opts.resolve(c->opts.ctx, addr, avail);
		return p && *avail ? p : NULL;
	}
	*avail = SIZE_MAX;
	return (const void *)(uintptr_t)addr;
}

char *gx__strndup_trim(const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	while (len && (s[len - 1] == ' ' || s[len - 1] == '\n'))
		len--;
	if (!len)
		return NULL;
	char *d = malloc(len + 1);
	if (d) {
		memcpy(d, s, len);
		d[len] = 0;
	}
	return d;
}

static int parse_bare_ptx(struct gx_img_ctx *c, const uint8_t *p, size_t avail)
{
	size_t lim = avail < GX_IMAGE_MAX_SIZE ? avail : GX_IMAGE_MAX_SIZE;
	size_t len = strnlen((const char *)p, lim);
	size_t extent;
	if (len < lim)
		extent = len + 1;
	else if (avail != SIZE_MAX && avail <= GX_IMAGE_MAX_SIZE)
		extent = avail; /* a file: the text runs to its end */
	else
		return gx__img_fail(c, -EINVAL, "PTX text has no terminating NUL within %zu bytes", lim);
	struct gx_image_entry *e = gx__img_add(c);
	if (!e)
		return -ENOMEM;
	e->kind = GX_ENTRY_PTX;
	e->data = p;
	e->size = e->raw_size = len < extent ? len + 1 : len; /* with its NUL, if any */
	gx__ptx_info((const char *)p, len, &e->sm, &e->arch_specific, &e->family_specific,
		     &e->ver_major, &e->ver_minor);
	c->im->kind = GX_IMAGE_PTX;
	c->im->extent = extent;
	return 0;
}

static int parse_bare_elf(struct gx_img_ctx *c, const uint8_t *p, size_t avail)
{
	struct gx_cubin_info ci;
	int ret = gx__cubin_probe(c, p, avail, &ci);
	if (ret)
		return ret;
	struct gx_image_entry *e = gx__img_add(c);
	if (!e)
		return -ENOMEM;
	e->kind = GX_ENTRY_ELF;
	e->data = p;
	e->size = e->raw_size = ci.extent;
	e->sm = ci.sm;
	e->arch_specific = ci.arch_specific;
	c->im->kind = GX_IMAGE_ELF;
	c->im->extent = ci.extent;
	return 0;
}

GX_EXPORT int gx_image_parse_opts(const void *img, size_t avail, const struct gx_image_opts *opts,
				  struct gx_image *out, char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = 0;
	if (!out)
		return gx_err(-EINVAL);
	memset(out, 0, sizeof(*out));
	struct gx_img_ctx c = { .im = out, .err = err, .errlen = errlen };
	if (gx_opts_copy(&c.opts, sizeof(c.opts), opts, opts ? opts->sz : 0))
		return gx_err(gx__img_fail(&c, -EINVAL, "unknown non-zero image options"));
	const uint8_t *p = img;
	int ret;
	if (!p)
		ret = gx__img_fail(&c, -EINVAL, "no image (NULL pointer)");
	else if (avail < 4)
		ret = gx__img_fail(&c, -EINVAL, "image too small (%zu bytes)", avail);
	else if (gx__rd32(p) == GX_FATBIN_MAGIC) {
		size_t extent = 0;
		out->kind = GX_IMAGE_FATBIN;
		ret = gx__fatbin_parse(&c, p, avail, avail == SIZE_MAX, &extent);
		out->extent = out->fatbin_extent = extent;
		out->fatbin = p;
	} else if (gx__rd32(p) == GX_WRAPPER_MAGIC) {
		out->kind = GX_IMAGE_WRAPPER;
		ret = gx__wrapper_parse(&c, p, avail);
	} else if (!memcmp(p, "\177ELF", 4)) {
		ret = parse_bare_elf(&c, p, avail);
	} else if (gx__ptx_looks_like(p, avail)) {
		ret = parse_bare_ptx(&c, p, avail);
	} else {
		ret = gx__img_fail(&c, -EINVAL,
				   "unrecognised image: not a fatbin, fatbin wrapper, cubin or PTX "
				   "(starts with %02x %02x %02x %02x)", p[0], p[1], p[2], p[3]);
	}
	if (ret) {
		gx_image_free(out);
		return gx_err(ret);
	}
	return 0;
}

GX_EXPORT int gx_image_parse(const void *img, size_t avail, struct gx_image *out, char *err,
			     size_t errlen)
{
	return gx_image_parse_opts(img, avail, NULL, out, err, errlen);
}

GX_EXPORT void gx_image_free(struct gx_image *im)
{
	if (!im)
		return;
	for (size_t i = 0; i < im->nr_entries; i++) {
		free((char *)im->entries[i].name);
		free((char *)im->entries[i].options);
	}
	free(im->entries);
	memset(im, 0, sizeof(*im));
}

GX_EXPORT const char *gx_image_kind_name(enum gx_image_kind k)
{
	switch (k) {
	case GX_IMAGE_PTX: return "ptx";
	case GX_IMAGE_ELF: return "cubin";
	case GX_IMAGE_FATBIN: return "fatbin";
	case GX_IMAGE_WRAPPER: return "wrapper";
	default: return "unknown";
	}
}

GX_EXPORT const char *gx_image_comp_name(enum gx_entry_compression comp)
{
	switch (comp) {
	case GX_COMP_NONE: return "none";
	case GX_COMP_ZSTD: return "zstd";
	case GX_COMP_LZ4: return "lz4";
	default: return "unknown";
	}
}

GX_EXPORT const char *gx_image_arch_name(const struct gx_image_entry *e, char *buf, size_t len)
{
	snprintf(buf, len, "sm_%u%s", e->sm,
		 e->arch_specific ? "a" : e->family_specific ? "f" : "");
	return buf;
}

/* Can code built for `e` run (SASS) or be JIT-compiled (PTX) on `dev`? */
static bool arch_fits(const struct gx_image_entry *e, unsigned dev, bool sass)
{
	if (e->sm > dev)
		return false;
	if (e->arch_specific)
		return e->sm == dev;
	if (e->family_specific || sass)
		return e->sm / 10 == dev / 10;
	return true;
}

/* Higher is better among fitting PTX: exact arch first, then newer ISA. */
static unsigned long ptx_rank(const struct gx_image_entry *e)
{
	return (unsigned long)e->sm << 24 | (unsigned long)(e->arch_specific * 2 + e->family_specific) << 16 |
	       (e->ver_major & 0xff) << 8 | (e->ver_minor & 0xff);
}

GX_EXPORT const struct gx_image_entry *gx_image_pick_ptx(const struct gx_image *im,
							  unsigned device_sm, int *has_sass)
{
	const struct gx_image_entry *best = NULL;
	int sass = 0;
	for (size_t i = 0; im && i < im->nr_entries; i++) {
		const struct gx_image_entry *e = &im->entries[i];
		if (e->prelinked || !arch_fits(e, device_sm, e->kind == GX_ENTRY_ELF))
			continue;
		if (e->kind == GX_ENTRY_ELF)
			sass = 1;
		else if (e->kind != GX_ENTRY_PTX)
			continue;
		else if (e->kind == GX_ENTRY_PTX && (!best || ptx_rank(e) > ptx_rank(best)))
			best = e;
	}
	if (has_sass)
		*has_sass = sass;
	return best;
}

GX_EXPORT const struct gx_image_entry *gx_image_pick_ptx_in(const struct gx_image *im, unsigned container,
							     unsigned device_sm)
{
	const struct gx_image_entry *best = NULL;
	for (size_t i = 0; im && i < im->nr_entries; i++) {
		const struct gx_image_entry *e = &im->entries[i];
		if (e->container != container || e->kind != GX_ENTRY_PTX || !arch_fits(e, device_sm, false))
			continue;
		if (!best || ptx_rank(e) > ptx_rank(best))
			best = e;
	}
	return best;
}
