/* image_cubin_regs.c — the registers a cubin's SASS gives each kernel.
 *
 * Why: a kernel rewritten from the PTX its cubin carries (Triton, Inductor)
 * is capped at the original's registers (ptx-rewrite's .maxnreg rule), so
 * that a tool's probe, or the cubin route's relocatable compile (ptxas -c
 * gave tool_bench's rowsoftmax 36 registers where the whole-module JIT
 * gives 27: 12 blocks of 128 threads per SM instead of 16), never costs the
 * kernel resident blocks. For a PTX-only module the shim has to JIT the
 * original once to learn the counts (shim/kregs.c); a cubin states them.
 *
 * Where: the cubin's `.nv.info` section is a list of attributes
 * {u8 format, u8 attribute, u16 size or value}, those of format
 * EIFMT_SVAL followed by `size` bytes; EIATTR_REGCOUNT's value is
 * {u32 symbol index, u32 registers}, the symbol being the kernel's in the
 * section's linked symbol table. Bounded like the rest of the parser:
 * every read inside the cubin's extent, libelf for the headers. */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>

#include "common/gx_util.h"
#include "image/image_internal.h"

#define EIFMT_SVAL	4
#define EIATTR_REGCOUNT 0x2f

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Symbol `idx`'s name in the symbol table of section `link`, or NULL. */
static const char *sym_name(Elf *elf, size_t link, uint32_t idx)
{
	Elf_Scn *scn = elf_getscn(elf, link);
	GElf_Shdr sh;
	Elf_Data *d;
	GElf_Sym sym;
	if (!scn || !gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !(d = elf_getdata(scn, NULL)) ||
	    !gelf_getsym(d, (int)idx, &sym))
		return NULL;
	return elf_strptr(elf, sh.sh_link, sym.st_name);
}

GX_EXPORT int gx_image_cubin_regs(const void *cubin, size_t avail,
				  int (*cb)(void *arg, const char *kernel, unsigned regs), void *arg)
{
	if (!cb)
		return gx_err(-EINVAL);
	const uint8_t *s;
	GElf_Shdr sh;
	int ret;
	Elf *elf = gx__cubin_section(cubin, avail, ".nv.info", &s, &sh, &ret);
	if (!elf)
		return gx_err(ret);
	ret = -ENOENT;
	for (size_t off = 0; s && off + 4 <= sh.sh_size;) {
		uint8_t fmt = s[off], attr = s[off + 1];
		uint16_t v = (uint16_t)(s[off + 2] | s[off + 3] << 8);
		off += 4;
		if (fmt != EIFMT_SVAL)
			continue; /* the value was the u16 */
		if (v > sh.sh_size - off) {
			ret = -EBADMSG;
			break;
		}
		if (attr == EIATTR_REGCOUNT && v >= 8) {
			const char *name = sym_name(elf, sh.sh_link, rd32(s + off));
			uint32_t regs = rd32(s + off + 4);
			if (name && *name && regs && regs <= 255) {
				int r = cb(arg, name, regs);
				if (r) {
					ret = r;
					break;
				}
				ret = 0;
			}
		}
		off += v;
	}
	elf_end(elf);
	return gx_err(ret);
}
