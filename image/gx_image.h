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
	GX_ENTRY_LTOIR = 8,      /* NVVM IR for link-time optimisation (code=lto_XX) */
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
	/* Additions (see docs/images.md). */
	int family_specific;     /* sm_100f-style ('f' suffix) */
	unsigned ver_major;      /* PTX: ISA version (9.0); ELF: code version (1.8) */
	unsigned ver_minor;
	int prelinked;           /* from a version-2 wrapper's prelinked list: relocatable
				  * (-rdc) code that needs linking, never loaded alone */
	const char *options;     /* PTX: ptxas options; LTO-IR: NVVM options; else NULL */
	size_t offset;           /* entry header offset from its container's start */
};

/* Entry header flags (struct gx_image_entry.flags), as found in nvcc 13 output. */
#define GX_FATBIN_F_64BIT        0x1ULL       /* 64-bit addresses */
#define GX_FATBIN_F_DEBUG        0x2ULL       /* -G */
#define GX_FATBIN_F_LINUX        0x10ULL      /* host is Linux */
#define GX_FATBIN_F_LZ4          0x2000ULL    /* payload is one raw LZ4 block */
#define GX_FATBIN_F_ZSTD         0x8000ULL    /* payload is a zstd frame */
#define GX_FATBIN_F_ENCODED      0x10000ULL   /* LTO-IR: payload encoded beyond compression
					       * (only nvJitLink reads it): not decodable here */
#define GX_FATBIN_F_ARCH_SPEC    0x100000ULL  /* sm_90a: arch-specific */
#define GX_FATBIN_F_FAMILY_SPEC  0x200000ULL  /* sm_100f: family-specific */
#define GX_FATBIN_F_EXT_DESC     0x1000000ULL /* sm_100+ ELF: binary descriptor in the header */

struct gx_image {
	enum gx_image_kind kind;
	size_t extent;           /* bytes the image occupies (known even for pointer-only loads) */
	struct gx_image_entry *entries;
	size_t nr_entries;
	/* Additions. */
	unsigned nr_containers;  /* fatbin containers parsed (prelinked ones included) */
	int wrapper_version;     /* GX_IMAGE_WRAPPER: 1 or 2, else 0 */
	const void *fatbin;      /* the (first) fatbin container, NULL if none */
	size_t fatbin_extent;    /* bytes of the fatbin run at `fatbin` */
};

/* Options for gx_image_parse_opts (size first, so it can grow). */
struct gx_image_opts {
	size_t sz;               /* sizeof(struct gx_image_opts) */
	/* Turn a pointer stored in the image (a wrapper's fatbin, a prelinked list
	 * and its elements) into readable memory; `*avail` gets how many bytes may be
	 * read there (SIZE_MAX: unknown). NULL result: unresolvable. When NULL, the
	 * pointers are used as they are (the shim, in-process). Parsers of files and
	 * fuzzers set it so no stray pointer is ever followed. */
	const void *(*resolve)(void *ctx, uint64_t addr, size_t *avail);
	void *ctx;
	int no_prelinked;        /* skip a version-2 wrapper's prelinked fatbins */
};

/* Upper bounds applied to sizes read from headers (pointer-only images). */
#define GX_IMAGE_MAX_SIZE  ((size_t)1 << 31)  /* one container, cubin or PTX */
#define GX_IMAGE_MAX_PRELINKED 4096
/* Decompression budget of one image or file: every entry decompressed from
 * it is charged to one budget of max(256 MiB, 64 x its size) bytes. */
#define GX_IMAGE_BUDGET_MIN   ((size_t)256 << 20)
#define GX_IMAGE_BUDGET_RATIO 64

/* Parse an image. `avail` is how many bytes may be read at `img`; pass
 * SIZE_MAX when the caller only has a pointer (cuModuleLoadData): sizes then
 * come from the headers, which are validated for sanity. Returns 0 or -errno;
 * on error `err` (may be NULL) gets a one-line reason. The entries point into
 * `img`, which must outlive the gx_image. */
int gx_image_parse(const void *img, size_t avail, struct gx_image *out, char *err, size_t errlen);
int gx_image_parse_opts(const void *img, size_t avail, const struct gx_image_opts *opts,
			struct gx_image *out, char *err, size_t errlen);
void gx_image_free(struct gx_image *im);

/* The decompression budget of an image or file of `input_size` bytes:
 * max(GX_IMAGE_BUDGET_MIN, GX_IMAGE_BUDGET_RATIO x input_size). */
size_t gx_image_budget(size_t input_size);

/* Decompressed copy of an entry (malloc'd; PTX is NUL-terminated and `len`
 * excludes the NUL). Its size is first charged to `*budget` (shared by every
 * entry of one image or file; start it at gx_image_budget()): an entry that
 * does not fit is refused with -E2BIG before anything is allocated. Returns
 * 0 or -errno (-EBADMSG on corrupt data, -ENOTSUP for GX_FATBIN_F_ENCODED
 * entries). */
int gx_image_entry_data(const struct gx_image_entry *e, size_t *budget, void **out, size_t *len);

/* The PTX entry a device of compute capability `device_sm` (e.g. 90) would
 * JIT: the highest PTX arch <= device_sm (arch-specific 'a' PTX only for the
 * exact arch, family 'f' PTX only within the family, e.g. 100f on 103). NULL
 * if none. Prelinked (relocatable) entries are never picked. `has_sass` (may
 * be NULL) tells whether an ELF entry that runs on this device exists (same
 * major arch and not newer; 'a' only exact). */
const struct gx_image_entry *gx_image_pick_ptx(const struct gx_image *im, unsigned device_sm,
					       int *has_sass);

/* The same among the entries of one container only, prelinked ones included
 * (-rdc: each translation unit's relocatable PTX lies in its own container). */
const struct gx_image_entry *gx_image_pick_ptx_in(const struct gx_image *im, unsigned container,
						  unsigned device_sm);

/* The cubin among the entries that the driver would load on device_sm (same
 * major arch, not newer; sm_90a only on sm_90), preferring the newest: NULL
 * if none. */
const struct gx_image_entry *gx_image_pick_sass(const struct gx_image *im, unsigned device_sm);

/* The PTX a cubin carries in .nv_debug_ptx_txt (ptxas -lineinfo: Triton,
 * nvcc -lineinfo), as text (malloc'd, NUL-terminated, *len without the NUL).
 * 0, -ENOENT (no such section), -EINVAL/-EBADMSG (not a cubin, or a section
 * that is not PTX) or -ENOMEM. `avail` as for gx_image_parse. */
int gx_image_cubin_ptx(const void *cubin, size_t avail, char **ptx, size_t *len);
/* The registers the cubin's SASS gives each of its kernels (.nv.info's
 * EIATTR_REGCOUNT): cb(arg, kernel, regs) for each, stopping at a nonzero
 * return (passed back). 0, -ENOENT (no counts), -EINVAL/-EBADMSG (not a
 * cubin, or a malformed .nv.info). `avail` as for gx_image_parse. */
int gx_image_cubin_regs(const void *cubin, size_t avail, int (*cb)(void *arg, const char *kernel, unsigned regs),
			void *arg);

const char *gx_image_kind_name(enum gx_image_kind k);
/* "none", "zstd", "lz4". */
const char *gx_image_comp_name(enum gx_entry_compression c);
/* "sm_90", "sm_90a", "sm_100f" into buf; returns buf. */
const char *gx_image_arch_name(const struct gx_image_entry *e, char *buf, size_t len);

/* ---- host ELF files ---- */
/* Find the fatbins embedded in a host ELF file (executable,
 * shared library, relocatable object), as `gpuext fatbin` and tests need.
 *
 * nvcc puts each object's fatbin container in `.nv_fatbin` (relocatable -rdc
 * code in `__nv_relfatbin`) and a __fatBinC_Wrapper_t pointing at it in
 * `.nvFatBinSegment`; the linker concatenates them. Works on a read-only
 * mapping of the file: only headers are touched, so a 1 GiB library is fast. */


struct gx_host_fatbin {
	const void *data;     /* container start, inside the caller's buffer */
	size_t size;          /* container extent (header + fat size) */
	uint64_t file_offset;
	uint64_t vaddr;       /* address once loaded (0 in relocatable objects) */
	const char *section;  /* ".nv_fatbin", "__nv_relfatbin", or with
			       * GX_HOSTELF_SCAN_DATA the data section it was found in
			       * (points into the ELF's string table) */
	int prelinked;        /* relocatable -rdc code from __nv_relfatbin */
	int wrapper_version;  /* version of a wrapper in .nvFatBinSegment pointing here, else 0 */
};

/* Also look through the other allocated, non-executable data sections
 * (.rodata, .lrodata, .ldata, ...) for containers at 8-byte aligned addresses
 * with a valid header: libraries that load their own kernels with
 * cuModuleLoadData/cuLibraryLoadData keep them there (libcufft: ~24,000 in
 * .ldata). Reads those sections whole. */
#define GX_HOSTELF_SCAN_DATA 0x1u

/* Scan the ELF file in elf[0..len). On success *out (malloc'd, free() it) holds
 * *nr containers in file order of their sections; zero containers is success
 * (no device code). Returns 0 or -errno (-EINVAL: not a 64-bit host ELF;
 * -EBADMSG: malformed), with a one-line reason in err. */
int gx_elf_host_fatbins(const void *elf, size_t len, unsigned flags, struct gx_host_fatbin **out,
			size_t *nr, char *err, size_t errlen);

#endif
