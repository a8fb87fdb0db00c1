/* bpf_bomb.h — a BPF object that is small on disk and huge once flattened
 * (issue 20): one static subprogram of SUB instructions and NPROGS programs
 * that each call it, in one gdev/probe section (pc-relative calls, no
 * relocations), no maps, no BTF. The loader copies the subprogram into every
 * program that calls it: 500 programs over a 1M-instruction subprogram (an
 * 8 MB file) took 3.9 GB before the object's flattened size was bounded.
 * Built by the tests (test_loader, gen_bpf_bomb for the CLI test and the
 * fuzzer's seeds), never committed. */
#ifndef GX_TEST_BPF_BOMB_H
#define GX_TEST_BPF_BOMB_H

#include <elf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/gx_bpf_isa.h"

/* ELF64 BPF relocatable: sections null, code, .symtab, .strtab, .shstrtab. */
static uint8_t *bpf_bomb_object(unsigned nprogs, size_t sub, size_t *len)
{
	static const char shstr[] = "\0gdev/probe/k\0.symtab\0.strtab\0.shstrtab";
	size_t ninsn = sub + 2 * (size_t)nprogs, nsym = 2 + (size_t)nprogs;
	size_t code_off = sizeof(Elf64_Ehdr), sym_off = code_off + ninsn * 8;
	size_t str_off = sym_off + nsym * sizeof(Elf64_Sym), strsz = 1 + 4 + (size_t)nprogs * 12;
	size_t shstr_off = str_off + strsz, sh_off = (shstr_off + sizeof(shstr) + 7) & ~(size_t)7;
	size_t total = sh_off + 5 * sizeof(Elf64_Shdr);
	uint8_t *b = calloc(1, total);
	if (!b) {
		perror("bpf_bomb");
		exit(1);
	}
	Elf64_Ehdr *eh = (Elf64_Ehdr *)b;
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_REL;
	eh->e_machine = EM_BPF;
	eh->e_version = EV_CURRENT;
	eh->e_ehsize = sizeof(*eh);
	eh->e_shoff = sh_off;
	eh->e_shentsize = sizeof(Elf64_Shdr);
	eh->e_shnum = 5;
	eh->e_shstrndx = 4;
	/* the subprogram: r0 = 0, ..., exit; each program: call it, exit */
	struct bpf_insn *in = (struct bpf_insn *)(b + code_off);
	for (size_t i = 0; i + 1 < sub; i++)
		in[i] = (struct bpf_insn){ .code = BPF_ALU64 | BPF_MOV | BPF_K };
	in[sub - 1] = (struct bpf_insn){ .code = BPF_JMP | BPF_EXIT };
	for (size_t p = 0; p < nprogs; p++) {
		size_t at = sub + 2 * p;
		in[at] = (struct bpf_insn){ .code = BPF_JMP | BPF_CALL, .src_reg = BPF_PSEUDO_CALL,
					    .imm = (int32_t)(0 - (int64_t)at - 1) };
		in[at + 1] = (struct bpf_insn){ .code = BPF_JMP | BPF_EXIT };
	}
	Elf64_Sym *sy = (Elf64_Sym *)(b + sym_off);
	char *str = (char *)(b + str_off);
	memcpy(str + 1, "sub", 4);
	sy[1] = (Elf64_Sym){ .st_name = 1, .st_info = ELF64_ST_INFO(STB_LOCAL, STT_FUNC), .st_shndx = 1,
			     .st_size = sub * 8 };
	for (size_t p = 0; p < nprogs; p++) {
		size_t no = 5 + p * 12;
		snprintf(str + no, 12, "p%zu", p);
		sy[2 + p] = (Elf64_Sym){ .st_name = (Elf64_Word)no, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
					 .st_shndx = 1, .st_value = (sub + 2 * p) * 8, .st_size = 16 };
	}
	memcpy(b + shstr_off, shstr, sizeof(shstr));
	Elf64_Shdr *sh = (Elf64_Shdr *)(b + sh_off);
	sh[1] = (Elf64_Shdr){ .sh_name = 1, .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
			      .sh_offset = code_off, .sh_size = ninsn * 8, .sh_addralign = 8 };
	sh[2] = (Elf64_Shdr){ .sh_name = 14, .sh_type = SHT_SYMTAB, .sh_offset = sym_off,
			      .sh_size = nsym * sizeof(Elf64_Sym), .sh_link = 3, .sh_info = 2,
			      .sh_addralign = 8, .sh_entsize = sizeof(Elf64_Sym) };
	sh[3] = (Elf64_Shdr){ .sh_name = 22, .sh_type = SHT_STRTAB, .sh_offset = str_off, .sh_size = strsz,
			      .sh_addralign = 1 };
	sh[4] = (Elf64_Shdr){ .sh_name = 30, .sh_type = SHT_STRTAB, .sh_offset = shstr_off,
			      .sh_size = sizeof(shstr), .sh_addralign = 1 };
	*len = total;
	return b;
}

#endif
