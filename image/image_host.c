/* image_host.c — locate fatbin containers inside host ELF files.
 *
 * The sections are authoritative (.nv_fatbin, __nv_relfatbin hold the
 * containers back to back, 8-byte aligned); the wrappers in .nvFatBinSegment
 * only tell which containers the runtime registers and with which version.
 * A wrapper's data pointer is an address: filled in place by GNU ld, or only
 * in a RELATIVE relocation's addend (lld), so both are consulted. */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/gx_util.h"
#include "image/gx_image.h"
#include "image/image_internal.h"

#define MAX_CONTAINERS (1u << 20)

struct scan {
	unsigned flags;
	const uint8_t *base;
	size_t len;
	Elf *elf;
	struct gx_host_fatbin *v;
	size_t n, cap;
	char *err;
	size_t errlen;
};

static int fail(struct scan *s, int ret, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct scan *s, int ret, const char *fmt, ...)
{
	if (s->err && s->errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(s->err, s->errlen, fmt, ap);
		va_end(ap);
	}
	return ret;
}

static int add(struct scan *s, const char *sec, uint64_t off, size_t size, uint64_t vaddr, int prelinked)
{
	if (s->n >= MAX_CONTAINERS)
		return fail(s, -E2BIG, "more than %u fatbin containers", MAX_CONTAINERS);
	if (s->n == s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 16;
		struct gx_host_fatbin *v = realloc(s->v, ncap * sizeof(*v));
		if (!v)
			return fail(s, -ENOMEM, "out of memory");
		s->v = v, s->cap = ncap;
	}
	s->v[s->n++] = (struct gx_host_fatbin){
		.data = s->base + off, .size = size, .file_offset = off, .vaddr = vaddr,
		.section = sec, .prelinked = prelinked,
	};
	return 0;
}

/* Split one section into containers. Bytes that are not a container header
 * (alignment padding, or anything unexpected) are skipped 8 bytes at a time. */
static int scan_section(struct scan *s, const char *name, const GElf_Shdr *sh, int prelinked)
{
	uint64_t off = sh->sh_offset, end = sh->sh_offset + sh->sh_size;
	while (end - off >= GX_FATBIN_HDR) {
		const uint8_t *p = s->base + off;
		uint64_t ext = gx__rd16(p + 6) + gx__rd64(p + 8);
		if (gx__rd32(p) != GX_FATBIN_MAGIC || gx__rd16(p + 6) < GX_FATBIN_HDR ||
		    gx__rd64(p + 8) > GX_IMAGE_MAX_SIZE || ext > end - off) {
			off += 8 - (off - sh->sh_offset) % 8;
			continue;
		}
		int ret = add(s, name, off, ext, sh->sh_addr ? sh->sh_addr + (off - sh->sh_offset) : 0,
			      prelinked);
		if (ret)
			return ret;
		off += ext;
	}
	return 0;
}

/* A container header at p (with `left` bytes to the section end) that is
 * plausible enough to report from a data section: version 1, header 16, its
 * size within the section, first entry with a small kind and a sane header. */
static bool plausible(const uint8_t *p, uint64_t left, uint64_t *ext)
{
	if (left < GX_FATBIN_HDR + GX_ENTRY_HDR_MIN || gx__rd32(p) != GX_FATBIN_MAGIC ||
	    gx__rd16(p + 4) != 1 || gx__rd16(p + 6) != GX_FATBIN_HDR)
		return false;
	uint64_t fat = gx__rd64(p + 8);
	if (fat < GX_ENTRY_HDR_MIN || fat > left - GX_FATBIN_HDR)
		return false;
	const uint8_t *e = p + GX_FATBIN_HDR;
	uint16_t kind = gx__rd16(e);
	uint32_t hs = gx__rd32(e + 4);
	if (!kind || kind > 0xff || hs < GX_ENTRY_HDR_MIN || hs > fat || gx__rd64(e + 8) > fat - hs)
		return false;
	*ext = GX_FATBIN_HDR + fat;
	return true;
}

static int scan_data_section(struct scan *s, const char *name, const GElf_Shdr *sh)
{
	uint64_t off = sh->sh_offset, end = sh->sh_offset + sh->sh_size;
	/* Start at the first 8-byte aligned address (file offset for objects). */
	uint64_t a = sh->sh_addr ? sh->sh_addr : sh->sh_offset;
	off += (8 - a % 8) % 8;
	while (off < end) {
		const uint8_t *hit = memmem(s->base + off, end - off, "\x50\xed\x55\xba", 4);
		if (!hit)
			break;
		uint64_t h = (uint64_t)(hit - s->base), ext;
		uint64_t mis = (h - sh->sh_offset + (a % 8)) % 8;
		if (mis) {
			off = h + (8 - mis);
			continue;
		}
		if (!plausible(hit, end - h, &ext)) {
			off = h + 8;
			continue;
		}
		int ret = add(s, name, h, ext, sh->sh_addr ? sh->sh_addr + (h - sh->sh_offset) : 0, 0);
		if (ret)
			return ret;
		off = h + ext;
		off += (8 - (off - sh->sh_offset + a % 8) % 8) % 8;
	}
	return 0;
}

/* Wrapper data pointers that only live in RELATIVE relocations (one pass
 * over the relocation tables, whatever their size). */
static void reloc_addends(struct scan *s, const GElf_Shdr *seg, const GElf_Shdr *shs, size_t nsh,
			  uint64_t *data, size_t nw)
{
	for (size_t i = 0; i < nsh; i++) {
		if (shs[i].sh_type != SHT_RELA || shs[i].sh_entsize != 24)
			continue;
		const uint8_t *r = s->base + shs[i].sh_offset;
		for (uint64_t k = 0; k + 24 <= shs[i].sh_size; k += 24) {
			uint64_t where = gx__rd64(r + k);
			uint32_t type = (uint32_t)gx__rd64(r + k + 8);
			if (type != 8 /* x86-64 */ && type != 1027 /* aarch64 */)
				continue;
			if (where < seg->sh_addr + 8 || where - seg->sh_addr - 8 >= nw * GX_WRAPPER_SIZE ||
			    (where - seg->sh_addr - 8) % GX_WRAPPER_SIZE)
				continue;
			size_t w = (where - seg->sh_addr - 8) / GX_WRAPPER_SIZE;
			if (!data[w])
				data[w] = gx__rd64(r + k + 16);
		}
	}
}

static int mark_wrappers(struct scan *s, const GElf_Shdr *seg, const GElf_Shdr *shs, size_t nsh)
{
	size_t nw = seg->sh_size / GX_WRAPPER_SIZE;
	uint64_t *data = calloc(nw ? nw : 1, sizeof(*data));
	if (!data)
		return fail(s, -ENOMEM, "out of memory");
	bool need_relocs = false;
	for (size_t w = 0; w < nw; w++) {
		data[w] = gx__rd64(s->base + seg->sh_offset + w * GX_WRAPPER_SIZE + 8);
		need_relocs |= !data[w];
	}
	if (need_relocs && seg->sh_addr)
		reloc_addends(s, seg, shs, nsh, data, nw);
	for (size_t w = 0; w < nw; w++) {
		const uint8_t *p = s->base + seg->sh_offset + w * GX_WRAPPER_SIZE;
		if (gx__rd32(p) != GX_WRAPPER_MAGIC || !data[w])
			continue;
		for (size_t i = 0; i < s->n; i++)
			if (s->v[i].vaddr == data[w])
				s->v[i].wrapper_version = (int)gx__rd32(p + 4);
	}
	free(data);
	return 0;
}

static pthread_once_t elf_once = PTHREAD_ONCE_INIT;
static void elf_init(void)
{
	elf_version(EV_CURRENT);
}

static int scan_elf(struct scan *s)
{
	const uint8_t *p = s->base;
	if (s->len < 64 || memcmp(p, "\177ELF", 4))
		return fail(s, -EINVAL, "not an ELF file");
	if (p[EI_CLASS] != ELFCLASS64 || p[EI_DATA] != ELFDATA2LSB)
		return fail(s, -EINVAL, "only 64-bit little-endian ELF files are supported");
	if (gx__rd16(p + 0x12) == GX_EM_CUDA)
		return fail(s, -EINVAL, "this is a CUDA cubin, not a host binary");
	uint64_t shoff = gx__rd64(p + 0x28), shnum = gx__rd16(p + 0x3c);
	if (shoff && (shoff > s->len || (shnum ? shnum : 1) * 64 > s->len - shoff))
		return fail(s, -EBADMSG, "truncated ELF file: section headers at offset %llu lie beyond its %zu bytes",
			    (unsigned long long)shoff, s->len);
	pthread_once(&elf_once, elf_init);
	s->elf = elf_memory((char *)p, s->len);
	GElf_Ehdr eh;
	size_t nsh, strndx;
	if (!s->elf || elf_kind(s->elf) != ELF_K_ELF || !gelf_getehdr(s->elf, &eh) ||
	    elf_getshdrnum(s->elf, &nsh) || elf_getshdrstrndx(s->elf, &strndx))
		return fail(s, -EBADMSG, "malformed ELF file: %s", elf_errmsg(-1));
	if (nsh > 1 << 20)
		return fail(s, -EBADMSG, "malformed ELF file: %zu sections", nsh);
	GElf_Shdr *shs = calloc(nsh ? nsh : 1, sizeof(*shs));
	if (!shs)
		return fail(s, -ENOMEM, "out of memory");
	int ret = 0;
	const GElf_Shdr *seg = NULL;
	for (size_t i = 0; i < nsh && !ret; i++) {
		Elf_Scn *scn = elf_getscn(s->elf, i);
		if (!scn || !gelf_getshdr(scn, &shs[i])) {
			ret = fail(s, -EBADMSG, "malformed ELF file: section %zu: %s", i, elf_errmsg(-1));
			break;
		}
		GElf_Shdr *sh = &shs[i];
		if (sh->sh_type != SHT_NOBITS &&
		    (sh->sh_offset > s->len || sh->sh_size > s->len - sh->sh_offset)) {
			/* Drop it from address lookups too. */
			sh->sh_type = SHT_NOBITS;
			continue;
		}
		const char *name = elf_strptr(s->elf, strndx, sh->sh_name);
		if (!name || sh->sh_type == SHT_NOBITS)
			continue;
		if (!strcmp(name, ".nv_fatbin"))
			ret = scan_section(s, ".nv_fatbin", sh, 0);
		else if (!strcmp(name, "__nv_relfatbin"))
			ret = scan_section(s, "__nv_relfatbin", sh, 1);
		else if (!strcmp(name, ".nvFatBinSegment"))
			seg = sh;
		else if ((s->flags & GX_HOSTELF_SCAN_DATA) && sh->sh_type == SHT_PROGBITS &&
			 (sh->sh_flags & SHF_ALLOC) && !(sh->sh_flags & SHF_EXECINSTR))
			/* The name must outlive elf_end(): keep it only if it lies in
			 * the caller's buffer (libelf points there for memory images). */
			ret = scan_data_section(s, (const uint8_t *)name >= s->base &&
						   (const uint8_t *)name < s->base + s->len ? name : "(data)", sh);
	}
	if (!ret && seg)
		ret = mark_wrappers(s, seg, shs, nsh);
	free(shs);
	return ret;
}

GX_EXPORT int gx_elf_host_fatbins(const void *elf, size_t len, unsigned flags,
				  struct gx_host_fatbin **out, size_t *nr, char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = 0;
	if (!elf || !out || !nr)
		return gx_err(-EINVAL);
	*out = NULL;
	*nr = 0;
	if (flags & ~GX_HOSTELF_SCAN_DATA)
		return gx_err(-EINVAL);
	struct scan s = { .flags = flags, .base = elf, .len = len, .err = err, .errlen = errlen };
	int ret = scan_elf(&s);
	elf_end(s.elf);
	if (ret) {
		free(s.v);
		return gx_err(ret);
	}
	*out = s.v;
	*nr = s.n;
	return 0;
}
