/* gx_image.h — CUDA code images, parsed in-process (no cuobjdump).
 *
 * Used by the shim's module-load path and by `gpuext fatbin`. Recognises:
 * fatbin wrapper (magic 0x466243B1, versions 1 and 2), fatbin container
 * (0xBA55ED50; PTX/ELF entries raw, zstd (flag 0x8000) or LZ4 (0x2000)),
 * ELF cubins (libelf), and PTX text. Every function bounds-checks against
 * `avail` and returns -EINVAL/-EBADMSG with a message on malformed input,
 * never crashes: images come from applications and must be fuzzed. */
#ifndef GX_IMAGE_H
#define GX_IMAGE_H

#include <stddef.h>
#include <stdint.h>

enum gx_image_kind {
	GX_IMAGE_UNKNOWN = 0,
	GX_IMAGE_PTX,     /* NUL-terminated PTX text */
	GX_IMAGE_ELF,     /* cubin */
	GX_IMAGE_FATBIN,  /* fatbin container(s) */
	GX_IMAGE_WRAPPER, /* __fatBinC_Wrapper_t pointing at a fatbin */
};

enum gx_entry_kind {
	GX_ENTRY_PTX = 1,
	GX_ENTRY_ELF = 2,
};

enum gx_entry_compression {
	GX_COMP_NONE = 0,
	GX_COMP_ZSTD,
	GX_COMP_LZ4,
};

/* One entry of a fatbin (or the whole image when it is a bare PTX/ELF). */
struct gx_image_entry {
	enum gx_entry_kind kind;
	unsigned sm;             /* arch, e.g. 90 for sm_90 / compute_90 */
	int arch_specific;       /* sm_90a-style ('a' suffix) */
	enum gx_entry_compression comp;
	const void *data;        /* points into the image, as stored */
	size_t size;             /* stored bytes */
	size_t raw_size;         /* bytes after decompression */
	uint64_t flags;          /* raw header flags, for `gpuext fatbin list` */
	const char *name;        /* identifier/file name if the header carries one, else NULL */
	unsigned container;      /* index of the fatbin container it came from */
};

struct gx_image {
	enum gx_image_kind kind;
	size_t extent;           /* bytes the image occupies (known even for pointer-only loads) */
	struct gx_image_entry *entries;
	size_t nr_entries;
};

/* Parse an image. `avail` is how many bytes may be read at `img`; pass
 * SIZE_MAX when the caller only has a pointer (cuModuleLoadData): sizes then
 * come from the headers, which are validated for sanity. Returns 0 or -errno;
 * on error `err` (may be NULL) gets a one-line reason. The entries point into
 * `img`, which must outlive the gx_image. */
int gx_image_parse(const void *img, size_t avail, struct gx_image *out, char *err, size_t errlen);
void gx_image_free(struct gx_image *im);

/* Decompressed copy of an entry (malloc'd; PTX is NUL-terminated and `len`
 * excludes the NUL). Returns 0 or -errno (-EBADMSG on corrupt data). */
int gx_image_entry_data(const struct gx_image_entry *e, void **out, size_t *len);

/* The PTX entry a device of compute capability `device_sm` (e.g. 90) would
 * JIT: the highest PTX arch <= device_sm (arch-specific 'a' PTX only for the
 * exact arch). NULL if none. `has_sass` (may be NULL) tells whether an ELF
 * entry for this device exists. */
const struct gx_image_entry *gx_image_pick_ptx(const struct gx_image *im, unsigned device_sm,
					       int *has_sass);

const char *gx_image_kind_name(enum gx_image_kind k);

#endif
