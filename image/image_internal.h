/* image_internal.h — internals shared by the image parsers (image*.c, fatbin.c).
 *
 * One parse carries a context: the options, the image being filled, and the
 * caller's error buffer. Every parser reads only through gx__rd_* helpers
 * against an explicit `avail`, so a malformed header can never move a read
 * outside the bytes the caller vouched for. */
#ifndef IMAGE_INTERNAL_H
#define IMAGE_INTERNAL_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "image/gx_image.h"

#define GX_FATBIN_MAGIC   0xBA55ED50u
#define GX_WRAPPER_MAGIC  0x466243B1u
#define GX_FATBIN_HDR     16u  /* container header */
#define GX_ENTRY_HDR_MIN  64u  /* entry header, fixed part */
#define GX_ENTRY_HDR_MAX  4096u
#define GX_WRAPPER_SIZE   24u
#define GX_EM_CUDA        190

struct gx_img_ctx {
	struct gx_image_opts opts;
	struct gx_image *im;
	size_t cap;          /* entries allocated */
	char *err;
	size_t errlen;
	int prelinked;       /* entries being added come from a prelinked fatbin */
};

/* Record the first error; returns `ret` (negative errno). */
int gx__img_fail(struct gx_img_ctx *c, int ret, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Append a zeroed entry; NULL on ENOMEM (error recorded). */
struct gx_image_entry *gx__img_add(struct gx_img_ctx *c);
/* Resolve a pointer stored in the image (see gx_image_opts.resolve). */
const void *gx__img_resolve(struct gx_img_ctx *c, uint64_t addr, size_t *avail);
/* malloc'd NUL-terminated copy of at most n bytes, trailing NULs trimmed; NULL if empty. */
char *gx__strndup_trim(const char *s, size_t n);

/* Little-endian field readers (unaligned-safe). */
static inline uint16_t gx__rd16(const void *p)
{
	uint16_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}
static inline uint32_t gx__rd32(const void *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}
static inline uint64_t gx__rd64(const void *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

/* fatbin.c: wrapper and container(s). `extent` gets the bytes consumed. */
int gx__fatbin_parse(struct gx_img_ctx *c, const uint8_t *p, size_t avail, bool only_first,
		     size_t *extent);
int gx__wrapper_parse(struct gx_img_ctx *c, const uint8_t *p, size_t avail);

/* image_elf.c: a cubin. Fills sm/arch flags and the extent. */
struct gx_cubin_info {
	size_t extent;
	unsigned sm;
	int arch_specific;
	unsigned abi_version;
	unsigned e_type;
};
int gx__cubin_probe(struct gx_img_ctx *c, const uint8_t *p, size_t avail, struct gx_cubin_info *ci);
/* The cubin at p (avail as for gx_image_parse) opened with libelf over its
 * extent, and its section `name`: *bytes inside p with its header in *sh,
 * or *bytes NULL (absent, no bytes, or past the extent). The ELF, to
 * elf_end; NULL with *err set (-EINVAL, -EBADMSG) if p is not a cubin.
 * (image_cubin_ptx.c) */
Elf *gx__cubin_section(const void *p, size_t avail, const char *name, const uint8_t **bytes, GElf_Shdr *sh,
		       int *err);
/* Extent of an in-memory ELF64 from its headers (no libelf; bounded). */
int gx__elf_extent(const uint8_t *p, size_t avail, size_t *extent);

/* image_ptx.c: PTX text. */
bool gx__ptx_looks_like(const uint8_t *p, size_t avail);
/* Arch (from .target) and ISA version (from .version) of PTX text of len n. */
void gx__ptx_info(const char *p, size_t n, unsigned *sm, int *arch_specific, int *family_specific,
		  unsigned *vmaj, unsigned *vmin);

#endif
