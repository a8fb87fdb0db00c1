/* fatbin.c — the fatbin wrapper (__fatBinC_Wrapper_t) and fatbin containers.
 *
 * Layouts as measured on nvcc 13.0 output (docs/images.md has the tables):
 *   wrapper   : u32 magic 0x466243B1, u32 version, u64 data, u64 filename_or_fatbins
 *   container : u32 magic 0xBA55ED50, u16 version, u16 header size, u64 fat size
 *   entry     : u16 kind, u16 version, u32 header size, u64 payload size,
 *               u32 compressed size, u32 options-descriptor offset, u16 minor,
 *               u16 major, u32 arch, u32 name offset, u32 name length,
 *               u64 flags, u64 (zero), u64 uncompressed size, [extension]
 * Containers may follow each other (one per host object in .nv_fatbin). */
#include <errno.h>
#include <stdlib.h>

#include "image/image_internal.h"

/* Offsets inside an entry header. */
enum {
	EH_KIND = 0x00,
	EH_HSIZE = 0x04,
	EH_PSIZE = 0x08,
	EH_CSIZE = 0x10,
	EH_OPTDESC = 0x14,
	EH_MINOR = 0x18,
	EH_MAJOR = 0x1a,
	EH_ARCH = 0x1c,
	EH_NAMEOFF = 0x20,
	EH_NAMELEN = 0x24,
	EH_FLAGS = 0x28,
	EH_RAWSIZE = 0x38,
};

static bool printable(const uint8_t *s, size_t n)
{
	for (size_t i = 0; i < n && s[i]; i++)
		if (s[i] < 0x20 && s[i] != '\t' && s[i] != '\n')
			return false;
	return true;
}

static int parse_entry(struct gx_img_ctx *c, const uint8_t *h, size_t left, size_t coff,
		       size_t eoff, size_t *used)
{
	unsigned idx = c->im->nr_containers;
	if (left < GX_ENTRY_HDR_MIN)
		return gx__img_fail(c, -EBADMSG,
				    "fatbin container %u: entry at offset %zu truncated (%zu of %u header bytes)",
				    idx, eoff, left, GX_ENTRY_HDR_MIN);
	uint32_t hsize = gx__rd32(h + EH_HSIZE);
	uint64_t psize = gx__rd64(h + EH_PSIZE);
	if (hsize < GX_ENTRY_HDR_MIN || hsize > GX_ENTRY_HDR_MAX || hsize > left)
		return gx__img_fail(c, -EBADMSG,
				    "fatbin container %u: entry at offset %zu has header size %u (want %u..%u within %zu bytes)",
				    idx, eoff, hsize, GX_ENTRY_HDR_MIN, GX_ENTRY_HDR_MAX, left);
	if (psize > left - hsize)
		return gx__img_fail(c, -EBADMSG,
				    "fatbin container %u: entry at offset %zu has payload size %llu beyond the container (%zu bytes left)",
				    idx, eoff, (unsigned long long)psize, left - hsize);
	*used = hsize + (size_t)psize;

	uint16_t kind = gx__rd16(h + EH_KIND);
	if (kind != GX_ENTRY_PTX && kind != GX_ENTRY_ELF && kind != GX_ENTRY_LTOIR)
		return 0; /* unknown kinds are skipped */
	uint64_t flags = gx__rd64(h + EH_FLAGS);
	struct gx_image_entry *e = gx__img_add(c);
	if (!e)
		return -ENOMEM;
	e->kind = kind;
	e->flags = flags;
	e->sm = gx__rd32(h + EH_ARCH);
	e->ver_major = gx__rd16(h + EH_MAJOR);
	e->ver_minor = gx__rd16(h + EH_MINOR);
	e->arch_specific = !!(flags & GX_FATBIN_F_ARCH_SPEC);
	e->family_specific = !!(flags & GX_FATBIN_F_FAMILY_SPEC);
	e->container = idx;
	e->offset = eoff - coff;
	e->data = h + hsize;
	bool zstd = flags & GX_FATBIN_F_ZSTD, lz4 = flags & GX_FATBIN_F_LZ4;
	if (zstd && lz4)
		return gx__img_fail(c, -EBADMSG,
				    "fatbin container %u: entry at offset %zu claims both zstd and LZ4 compression",
				    idx, eoff);
	if (zstd || lz4) {
		uint32_t csize = gx__rd32(h + EH_CSIZE);
		uint64_t raw = gx__rd64(h + EH_RAWSIZE);
		if (!csize || csize > psize)
			return gx__img_fail(c, -EBADMSG,
					    "fatbin container %u: entry at offset %zu has compressed size %u outside its payload of %llu bytes",
					    idx, eoff, csize, (unsigned long long)psize);
		if (!raw || raw > GX_IMAGE_MAX_SIZE)
			return gx__img_fail(c, -EBADMSG,
					    "fatbin container %u: entry at offset %zu has uncompressed size %llu (limit %zu)",
					    idx, eoff, (unsigned long long)raw, GX_IMAGE_MAX_SIZE);
		e->comp = zstd ? GX_COMP_ZSTD : GX_COMP_LZ4;
		e->size = csize;
		e->raw_size = raw;
	} else {
		e->comp = GX_COMP_NONE;
		e->size = psize;
		if (kind == GX_ENTRY_PTX) {
			/* The text and its NUL, as a compressed entry records it. */
			e->raw_size = strnlen(e->data, psize);
			if (e->raw_size < psize)
				e->raw_size++;
		} else if (kind == GX_ENTRY_LTOIR) {
			e->raw_size = psize; /* no length of its own that we know of */
		} else {
			/* The payload is padded; the ELF's own headers give its length. */
			size_t ext;
			e->raw_size = gx__elf_extent(e->data, psize, &ext) ? psize : ext;
		}
	}
	/* Optional strings inside the header: identifier and PTX options. */
	uint32_t noff = gx__rd32(h + EH_NAMEOFF), nlen = gx__rd32(h + EH_NAMELEN);
	if (nlen && noff >= GX_ENTRY_HDR_MIN && noff <= hsize && nlen <= hsize - noff &&
	    printable(h + noff, nlen))
		e->name = gx__strndup_trim((const char *)h + noff, nlen);
	uint32_t od = gx__rd32(h + EH_OPTDESC);
	if (kind != GX_ENTRY_ELF && od >= GX_ENTRY_HDR_MIN && od <= hsize - 8) {
		uint32_t ooff = gx__rd32(h + od), olen = gx__rd32(h + od + 4);
		if (olen && ooff >= GX_ENTRY_HDR_MIN && ooff <= hsize && olen <= hsize - ooff &&
		    printable(h + ooff, olen))
			e->options = gx__strndup_trim((const char *)h + ooff, olen);
	}
	return 0;
}

/* One container at p; *extent gets its size (header + fat size). */
static int parse_container(struct gx_img_ctx *c, const uint8_t *p, size_t avail, size_t off,
			   size_t *extent)
{
	unsigned idx = c->im->nr_containers;
	if (avail < GX_FATBIN_HDR)
		return gx__img_fail(c, -EBADMSG, "fatbin container %u at offset %zu: truncated header (%zu of %u bytes)",
				    idx, off, avail, GX_FATBIN_HDR);
	if (gx__rd32(p) != GX_FATBIN_MAGIC)
		return gx__img_fail(c, -EINVAL, "fatbin container %u at offset %zu: bad magic 0x%08x (want 0x%08x)",
				    idx, off, gx__rd32(p), GX_FATBIN_MAGIC);
	uint16_t hsize = gx__rd16(p + 6);
	uint64_t fat = gx__rd64(p + 8);
	if (hsize < GX_FATBIN_HDR || hsize > GX_ENTRY_HDR_MAX)
		return gx__img_fail(c, -EBADMSG, "fatbin container %u at offset %zu: header size %u out of range",
				    idx, off, hsize);
	if (fat > GX_IMAGE_MAX_SIZE)
		return gx__img_fail(c, -EBADMSG, "fatbin container %u at offset %zu: size %llu over the %zu-byte limit",
				    idx, off, (unsigned long long)fat, GX_IMAGE_MAX_SIZE);
	if (fat + hsize > avail)
		return gx__img_fail(c, -EBADMSG,
				    "fatbin container %u at offset %zu: size %llu exceeds the %zu bytes available",
				    idx, off, (unsigned long long)fat + hsize, avail);
	size_t end = hsize + (size_t)fat;
	for (size_t e = hsize; e < end;) {
		size_t used = 0;
		int ret = parse_entry(c, p + e, end - e, off, off + e, &used);
		if (ret)
			return ret;
		e += used;
	}
	c->im->nr_containers++;
	*extent = end;
	return 0;
}

int gx__fatbin_parse(struct gx_img_ctx *c, const uint8_t *p, size_t avail, bool only_first,
		     size_t *extent)
{
	size_t off = 0;
	do {
		size_t ext = 0;
		int ret = parse_container(c, p + off, avail - off, off, &ext);
		if (ret)
			return ret;
		off += ext;
		/* Containers are 8-byte aligned one after the other; zero padding may sit between. */
		size_t next = off;
		while (!only_first && next < avail && (next & 7) && !p[next])
			next++;
		if (only_first || avail - next < GX_FATBIN_HDR || gx__rd32(p + next) != GX_FATBIN_MAGIC)
			break;
		off = next;
	} while (1);
	*extent = off;
	return 0;
}

int gx__wrapper_parse(struct gx_img_ctx *c, const uint8_t *p, size_t avail)
{
	if (avail < GX_WRAPPER_SIZE)
		return gx__img_fail(c, -EINVAL, "fatbin wrapper truncated (%zu of %u bytes)", avail,
				    GX_WRAPPER_SIZE);
	uint32_t ver = gx__rd32(p + 4);
	if (ver != 1 && ver != 2)
		return gx__img_fail(c, -EINVAL, "fatbin wrapper version %u not supported (want 1 or 2)", ver);
	struct gx_image *im = c->im;
	im->wrapper_version = (int)ver;
	im->extent = GX_WRAPPER_SIZE;
	size_t favail;
	const uint8_t *fb = gx__img_resolve(c, gx__rd64(p + 8), &favail);
	if (!fb)
		return gx__img_fail(c, -EINVAL, "fatbin wrapper points at no fatbin (data 0x%llx)",
				    (unsigned long long)gx__rd64(p + 8));
	if (favail < GX_FATBIN_HDR || gx__rd32(fb) != GX_FATBIN_MAGIC)
		return gx__img_fail(c, -EINVAL, "fatbin wrapper data at 0x%llx is not a fatbin container",
				    (unsigned long long)gx__rd64(p + 8));
	size_t ext = 0;
	int ret = gx__fatbin_parse(c, fb, favail, true, &ext);
	if (ret)
		return ret;
	im->fatbin = fb;
	im->fatbin_extent = ext;
	if (ver != 2 || c->opts.no_prelinked)
		return 0;

	/* Version 2 (-rdc, device-linked): a NULL-terminated array of the
	 * relocatable fatbins that went into the link (filled in by the
	 * registration code before the runtime loads the wrapper). */
	uint64_t list = gx__rd64(p + 16);
	size_t lavail;
	const uint8_t *l = gx__img_resolve(c, list, &lavail);
	if (!list)
		return 0;
	if (!l)
		return gx__img_fail(c, -EINVAL, "fatbin wrapper: prelinked list at 0x%llx unreadable",
				    (unsigned long long)list);
	c->prelinked = 1;
	for (size_t i = 0;; i++) {
		if (i >= GX_IMAGE_MAX_PRELINKED)
			return gx__img_fail(c, -EBADMSG, "fatbin wrapper: prelinked list has no NULL within %u pointers",
					    GX_IMAGE_MAX_PRELINKED);
		if (lavail != SIZE_MAX && (lavail / 8 <= i))
			return gx__img_fail(c, -EBADMSG, "fatbin wrapper: prelinked list truncated after %zu pointers", i);
		uint64_t a = gx__rd64(l + 8 * i);
		if (!a)
			break;
		size_t pavail;
		const uint8_t *pf = gx__img_resolve(c, a, &pavail);
		if (!pf || pavail < GX_FATBIN_HDR || gx__rd32(pf) != GX_FATBIN_MAGIC)
			return gx__img_fail(c, -EINVAL, "fatbin wrapper: prelinked fatbin %zu at 0x%llx is not a fatbin container",
					    i, (unsigned long long)a);
		size_t pext;
		ret = gx__fatbin_parse(c, pf, pavail, true, &pext);
		if (ret)
			return ret;
	}
	c->prelinked = 0;
	return 0;
}
