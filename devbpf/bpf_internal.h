/* bpf_internal.h — the structures behind gx_bpf.h's opaque types, shared by
 * the loader, the verifier, the dump and the interpreter (not installed). */
#ifndef GX_BPF_INTERNAL_H
#define GX_BPF_INTERNAL_H

#include <errno.h>
#include <string.h>

#include "devbpf/gx_bpf.h"

struct gx_btf;
struct gx_vfacts; /* verifier per-insn facts (verifier_internal.h) */

struct gx_bpf_map {
	struct gx_bpf_object *obj;
	char *name;
	size_t idx;
	enum gx_bpf_map_type type;
	uint32_t key_size, value_size, max_entries, map_flags, gx_flags;
	uint32_t btf_key_type_id, btf_value_type_id;
	/* ELF: the section it came from and its symbol offset (for relocation). */
	int sec_idx;        /* .maps: section index; internal: the data section */
	uint64_t sym_off;   /* offset of the map variable in .maps */
	void *init;         /* internal and struct_ops maps: value_size bytes */
	int32_t *st_prog;   /* struct_ops: per 8-byte slot, the program index or -1 */
};

struct gx_bpf_prog {
	struct gx_bpf_object *obj;
	char *name;
	char *sec_name;
	const struct gx_bpf_sec_def *sec;
	const char *attach_target; /* points into sec_name */
	struct bpf_insn *insns;
	size_t insn_cnt;
	/* ELF origin: section index and first insn within that section. */
	int sec_idx;
	size_t sec_insn_off, sec_insn_cnt;
	/* verifier results */
	bool verified;
	uint32_t stack_depth;
	char *vmsg;
	struct gx_bpf_verify_stats stats;
	uint8_t *varying;           /* per insn, or NULL */
	struct gx_vfacts *facts;    /* per insn, or NULL */
};

/* A global variable of .data/.rodata/.bss (its map and place in it). */
struct gx_bpf_var {
	char *name;
	size_t map;
	uint32_t off, size;
};

struct gx_bpf_object {
	char *name;
	struct gx_bpf_prog *progs;
	size_t prog_cnt;
	struct gx_bpf_map *maps;
	size_t map_cnt;
	struct gx_bpf_var *vars;
	size_t var_cnt;
	struct gx_btf *btf;
};

void gx_bpf_prog_clear_verdict(struct gx_bpf_prog *prog);
/* Whether rule d matches section name (sections.c). */
bool gx_bpf_sec_match(const struct gx_bpf_sec_def *d, const char *name);
void gx_vfacts_free(struct gx_vfacts *f, size_t cnt);

#endif
