/* gx_hostelf.h — find the fatbins embedded in a host ELF file (executable,
 * shared library, relocatable object), as `gpuext fatbin` and tests need.
 *
 * nvcc puts each object's fatbin container in `.nv_fatbin` (relocatable -rdc
 * code in `__nv_relfatbin`) and a __fatBinC_Wrapper_t pointing at it in
 * `.nvFatBinSegment`; the linker concatenates them. Works on a read-only
 * mapping of the file: only headers are touched, so a 1 GiB library is fast. */
#ifndef GX_HOSTELF_H
#define GX_HOSTELF_H

#include <stddef.h>
#include <stdint.h>

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
