/* image_elf.c — CUDA cubins (ELF64, e_machine EM_CUDA = 190).
 *
 * A cubin handed to cuModuleLoadData comes without a size, so its extent is
 * computed from its own header tables first (bounded, by hand: libelf needs a
 * size), then libelf validates the headers within that extent. The arch
 * lives in e_flags: bits 0-7 in the old ABI (EI_ABIVERSION < 8, 'a' targets
 * flagged by 0x800), bits 8-15 in the ABI nvcc 12.8+/13 emits (OSABI 0x41,
 * EI_ABIVERSION 8). */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>

#include "image/image_internal.h"

#define EHDR64 64u
#define SHDR64 64u
#define PHDR64 56u

static bool add_end(uint64_t off, uint64_t size, size_t lim, size_t *end)
{
	if (off > lim || size > lim - off)
		return false;
	if (off + size > *end)
		*end = (size_t)(off + size);
	return true;
}

int gx__elf_extent(const uint8_t *p, size_t avail, size_t *extent)
{
	size_t lim = avail < GX_IMAGE_MAX_SIZE ? avail : GX_IMAGE_MAX_SIZE;
	if (lim < EHDR64 || memcmp(p, "\177ELF", 4) || p[EI_CLASS] != ELFCLASS64 ||
	    p[EI_DATA] != ELFDATA2LSB)
		return -EBADMSG;
	uint64_t phoff = gx__rd64(p + 0x20), shoff = gx__rd64(p + 0x28);
	uint16_t phentsize = gx__rd16(p + 0x36), phnum = gx__rd16(p + 0x38);
	uint16_t shentsize = gx__rd16(p + 0x3a);
	uint64_t shnum = gx__rd16(p + 0x3c);
	size_t end = EHDR64;
	if (shoff) {
		if (shentsize != SHDR64 || !add_end(shoff, SHDR64, lim, &end))
			return -EBADMSG;
		if (!shnum) /* extended numbering: the count sits in section 0 */
			shnum = gx__rd64(p + shoff + 0x20);
		if (shnum > lim / SHDR64 || !add_end(shoff, shnum * SHDR64, lim, &end))
			return -EBADMSG;
		for (uint64_t i = 0; i < shnum; i++) {
			const uint8_t *sh = p + shoff + i * SHDR64;
			if (gx__rd32(sh + 4) == SHT_NOBITS)
				continue;
			if (!add_end(gx__rd64(sh + 0x18), gx__rd64(sh + 0x20), lim, &end))
				return -EBADMSG;
		}
	}
	if (phoff && phnum) {
		if (phentsize != PHDR64 || !add_end(phoff, (uint64_t)phnum * PHDR64, lim, &end))
			return -EBADMSG;
		for (unsigned i = 0; i < phnum; i++) {
			const uint8_t *ph = p + phoff + (size_t)i * PHDR64;
			if (!add_end(gx__rd64(ph + 0x08), gx__rd64(ph + 0x20), lim, &end))
				return -EBADMSG;
		}
	}
	*extent = end;
	return 0;
}

static pthread_once_t elf_once = PTHREAD_ONCE_INIT;
static void elf_init(void)
{
	elf_version(EV_CURRENT);
}

int gx__cubin_probe(struct gx_img_ctx *c, const uint8_t *p, size_t avail, struct gx_cubin_info *ci)
{
	memset(ci, 0, sizeof(*ci));
	if (avail < EHDR64)
		return gx__img_fail(c, -EINVAL, "ELF image truncated (%zu of %u header bytes)", avail, EHDR64);
	if (p[EI_CLASS] != ELFCLASS64 || p[EI_DATA] != ELFDATA2LSB)
		return gx__img_fail(c, -EINVAL, "ELF image is not 64-bit little-endian (class %u, data %u)",
				    p[EI_CLASS], p[EI_DATA]);
	uint16_t machine = gx__rd16(p + 0x12);
	if (machine != GX_EM_CUDA)
		return gx__img_fail(c, -EINVAL, "ELF image is not a CUDA cubin (e_machine %u, want %u)",
				    machine, GX_EM_CUDA);
	if (gx__elf_extent(p, avail, &ci->extent))
		return gx__img_fail(c, -EBADMSG, "cubin header tables lie outside the %s",
				    avail == SIZE_MAX ? "size limit" : "image");
	pthread_once(&elf_once, elf_init);
	Elf *elf = elf_memory((char *)p, ci->extent);
	GElf_Ehdr eh;
	int ret = 0;
	size_t shnum;
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) || elf_getshdrnum(elf, &shnum)) {
		ret = gx__img_fail(c, -EBADMSG, "cubin rejected by libelf: %s", elf_errmsg(-1));
		goto out;
	}
	for (size_t i = 1; i < shnum; i++) {
		GElf_Shdr sh;
		Elf_Scn *scn = elf_getscn(elf, i);
		if (!scn || !gelf_getshdr(scn, &sh)) {
			ret = gx__img_fail(c, -EBADMSG, "cubin section %zu unreadable: %s", i, elf_errmsg(-1));
			goto out;
		}
	}
	ci->abi_version = eh.e_ident[EI_ABIVERSION];
	ci->e_type = eh.e_type;
	if (ci->abi_version >= 8 || eh.e_ident[EI_OSABI] == 0x41) {
		ci->sm = (eh.e_flags >> 8) & 0xff;
	} else {
		ci->sm = eh.e_flags & 0xff;
		ci->arch_specific = !!(eh.e_flags & 0x800);
	}
out:
	elf_end(elf);
	return ret;
}
