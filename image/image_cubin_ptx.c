/* image_cubin_ptx.c — the PTX a cubin carries for debuggers.
 *
 * ptxas -lineinfo (Triton always passes it; nvcc -lineinfo too) stores the
 * whole PTX text in the cubin's section .nv_debug_ptx_txt, so that line
 * tables can point into it: comments and leading blanks dropped, every line
 * NUL-terminated (empty lines as empty strings), after 8 bytes of header.
 * Turning the NULs back into newlines gives PTX the driver JITs to the same
 * kernels: the way into modules that reach the driver only as cubins
 * (Triton, Inductor). Bounded like the rest of the parser: the cubin's
 * extent from its headers, libelf inside it, the section inside the cubin. */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>

#include "common/gx_util.h"
#include "image/image_internal.h"

#define DEBUG_PTX_SECTION ".nv_debug_ptx_txt"

/* Section `name` of the ELF at p (extent bytes): its header in *sh and its
 * bytes inside p, or NULL. */
static const uint8_t *section(Elf *elf, const uint8_t *p, size_t extent, const char *name, GElf_Shdr *sh)
{
	size_t shstrndx;
	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		const char *n;
		if (!gelf_getshdr(scn, sh) || !(n = elf_strptr(elf, shstrndx, sh->sh_name)) || strcmp(n, name))
			continue;
		if (sh->sh_type == SHT_NOBITS || sh->sh_offset > extent || sh->sh_size > extent - sh->sh_offset)
			return NULL;
		return p + sh->sh_offset;
	}
	return NULL;
}

Elf *gx__cubin_section(const void *p, size_t avail, const char *name, const uint8_t **bytes, GElf_Shdr *sh, int *err)
{
	struct gx_img_ctx c = { 0 };
	struct gx_cubin_info ci;
	*bytes = NULL;
	*err = p ? gx__cubin_probe(&c, p, avail, &ci) : -EINVAL;
	if (*err)
		return NULL;
	Elf *elf = elf_memory((char *)p, ci.extent);
	*err = elf ? 0 : -EBADMSG;
	if (elf)
		*bytes = section(elf, p, ci.extent, name, sh);
	return elf;
}

GX_EXPORT int gx_image_cubin_ptx(const void *cubin, size_t avail, char **ptx, size_t *len)
{
	*ptx = NULL;
	*len = 0;
	const uint8_t *s;
	GElf_Shdr sh;
	int ret;
	Elf *elf = gx__cubin_section(cubin, avail, DEBUG_PTX_SECTION, &s, &sh, &ret);
	if (!elf)
		return gx_err(ret);
	size_t size = s ? sh.sh_size : 0;
	ret = -ENOENT;
	if (s) {
		/* Skip the header (leading NULs), keep the lines. */
		size_t i = 0;
		while (i < size && !s[i])
			i++;
		char *out = malloc(size - i + 2);
		if (!out) {
			ret = -ENOMEM;
		} else {
			size_t n = 0;
			for (; i < size; i++)
				out[n++] = s[i] ? (char)s[i] : '\n';
			if (n && out[n - 1] != '\n')
				out[n++] = '\n';
			out[n] = 0;
			/* Text, not a fragment of something else: it must say what it is. */
			if (!strstr(out, ".version") || !strstr(out, ".target")) {
				free(out);
				ret = -EBADMSG;
			} else {
				*ptx = out;
				*len = n;
				ret = 0;
			}
		}
	}
	elf_end(elf);
	return gx_err(ret);
}

GX_EXPORT const struct gx_image_entry *gx_image_pick_sass(const struct gx_image *im, unsigned device_sm)
{
	const struct gx_image_entry *best = NULL;
	for (size_t i = 0; im && i < im->nr_entries; i++) {
		const struct gx_image_entry *e = &im->entries[i];
		if (e->kind != GX_ENTRY_ELF || e->prelinked || e->sm > device_sm || e->sm / 10 != device_sm / 10 ||
		    (e->arch_specific && e->sm != device_sm))
			continue;
		if (!best || e->sm > best->sm || (e->sm == best->sm && e->arch_specific > best->arch_specific))
			best = e;
	}
	return best;
}
