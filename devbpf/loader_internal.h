/* loader_internal.h — state shared by loader.c (ELF parsing) and reloc.c
 * (relocation and flattening) while one object is opened. The one loader
 * of device and host policies: the host executor opens its struct_ops
 * objects through it with its own open options (hostexec/hx_load.c). */
#ifndef GX_BPF_LOADER_H
#define GX_BPF_LOADER_H

#include <gelf.h>
#include <libelf.h>

#include "devbpf/bpf_internal.h"

struct gx_lsec {
	GElf_Shdr sh;
	const char *name;
	const void *data; /* NULL for SHT_NOBITS */
	size_t size;
	bool is_code;
	int data_kind;    /* 1 .data, 2 .rodata, 3 .bss, 0 other */
	int rel_shndx;    /* its SHT_REL section, 0 if none */
	uint32_t *rel_at; /* code: per insn, 1 + index of its relocation, 0 none */
};

struct gx_lfunc {
	const char *name;
	size_t shndx;
	size_t start, cnt; /* in insns within the section */
	bool global, prog;
};

struct gx_load {
	const char *name;
	struct gx_bpf_open_opts o; /* the caller's, completed with zeros */
	char *buf;
	size_t len;
	Elf *elf;
	size_t nsec, shstrndx;
	struct gx_lsec *secs;
	int maps_shndx, btf_shndx, symtab_shndx;
	size_t strtab_shndx;
	const Elf64_Sym *syms;
	size_t nsyms;
	struct gx_lfunc *funcs;
	size_t nfuncs;
	struct gx_bpf_object *obj;
	/* Instructions of all programs once flattened, and their bound
	 * (reloc.c): every program gets its own copy of what it calls. */
	size_t flat_total, flat_max;
};

const char *gx_load_sym_name(struct gx_load *ld, const Elf64_Sym *sym);
/* Report one loader message (to o.log, and gx_log unless o.quiet); returns err. */
int gx_load_msg(struct gx_load *ld, int err, const char *msg);
int gx_load_relocate(struct gx_load *ld);

#endif
