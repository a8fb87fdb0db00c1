/* reloc.c — relocate map/global-data references and flatten bpf-to-bpf calls.
 *
 * Each program becomes one self-contained insn array: its own function first,
 * then every subprogram it reaches (transitively), each copied once, with
 * call and function-address offsets rewritten to point inside the array.
 * Conventions of the result are listed at the top of gx_bpf.h. */
#include <stdlib.h>
#include <string.h>

#include "devbpf/loader_internal.h"
#include "common/gx_log.h"
#include "common/gx_util.h"

#define MAX_PROG_INSNS (1u << 20)
/* The flattened programs of one object together: at most 4 times its code,
 * or 2^20 instructions (one program's maximum, 8 MiB) if that is more. The
 * objects of this tree flatten to at most 1.15 times their code (clang
 * inlines static functions); one 1M-instruction subprogram called by 500
 * programs of an 8 MB object took 3.9 GB before. */
#define FLAT_MIN_INSNS (1u << 20)
#define FLAT_RATIO 4

static int rerr(struct gx_load *ld, const char *sec, size_t insn, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int rerr(struct gx_load *ld, const char *sec, size_t insn, const char *fmt, ...)
{
	char msg[384], line[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(line, sizeof(line), "section '%s' insn %zu: %s", sec, insn, msg);
	return gx_load_msg(ld, -EINVAL, line);
}

/* Index the relocations of a code section by instruction. */
static int index_relocs(struct gx_load *ld, size_t shndx)
{
	struct gx_lsec *s = &ld->secs[shndx];
	if (s->rel_at || !s->rel_shndx)
		return 0;
	size_t n = s->size / 8;
	s->rel_at = calloc(n ? n : 1, sizeof(*s->rel_at));
	if (!s->rel_at)
		return -ENOMEM;
	struct gx_lsec *r = &ld->secs[s->rel_shndx];
	const Elf64_Rel *rels = r->data;
	size_t nr = r->size / sizeof(Elf64_Rel);
	if (nr > UINT32_MAX - 1)
		return rerr(ld, s->name, 0, "too many relocations");
	for (size_t i = 0; i < nr; i++) {
		uint64_t off = rels[i].r_offset;
		if (off % 8 || off / 8 >= n)
			return rerr(ld, s->name, (size_t)(off / 8), "relocation %zu: bad offset %#llx", i,
				    (unsigned long long)off);
		if (ELF64_R_TYPE(rels[i].r_info) == R_BPF_NONE)
			continue;
		if (s->rel_at[off / 8])
			return rerr(ld, s->name, (size_t)(off / 8), "two relocations on one instruction");
		s->rel_at[off / 8] = (uint32_t)i + 1;
	}
	return 0;
}

static const Elf64_Rel *reloc_at(struct gx_load *ld, size_t shndx, size_t idx)
{
	struct gx_lsec *s = &ld->secs[shndx];
	if (!s->rel_at || !s->rel_at[idx])
		return NULL;
	return (const Elf64_Rel *)ld->secs[s->rel_shndx].data + (s->rel_at[idx] - 1);
}

static long find_func(struct gx_load *ld, size_t shndx, size_t idx)
{
	for (size_t i = 0; i < ld->nfuncs; i++)
		if (ld->funcs[i].shndx == shndx && idx >= ld->funcs[i].start &&
		    idx < ld->funcs[i].start + ld->funcs[i].cnt)
			return (long)i;
	return -1;
}

struct flat {
	const char *prog;
	struct bpf_insn *insns;
	size_t len, cap;
	long *func_base; /* per ld->funcs entry: base in insns, -1 if not copied */
	/* per chunk, in order: function index and base */
	size_t *chunk_func, *chunk_base, nchunks;
};

static int append_func(struct gx_load *ld, struct flat *fl, size_t f)
{
	struct gx_lfunc *fn = &ld->funcs[f];
	if (fl->len + fn->cnt > MAX_PROG_INSNS)
		return rerr(ld, ld->secs[fn->shndx].name, fn->start, "program too large");
	if (ld->flat_total + fl->len + fn->cnt > ld->flat_max) {
		rerr(ld, ld->secs[fn->shndx].name, fn->start,
		     "program '%s' brings the object past %zu instructions once every program has its own copy "
		     "of the subprograms it calls (at most max(2^20, %d x its code))",
		     fl->prog, ld->flat_max, FLAT_RATIO);
		return -E2BIG;
	}
	if (fl->len + fn->cnt > fl->cap) {
		size_t ncap = fl->cap ? fl->cap : 64;
		while (ncap < fl->len + fn->cnt)
			ncap *= 2;
		struct bpf_insn *ni = realloc(fl->insns, ncap * sizeof(*ni));
		if (!ni)
			return -ENOMEM;
		fl->insns = ni, fl->cap = ncap;
	}
	size_t *cf = realloc(fl->chunk_func, (fl->nchunks + 1) * sizeof(*cf));
	if (!cf)
		return -ENOMEM;
	fl->chunk_func = cf;
	size_t *cb = realloc(fl->chunk_base, (fl->nchunks + 1) * sizeof(*cb));
	if (!cb)
		return -ENOMEM;
	fl->chunk_base = cb;
	fl->chunk_func[fl->nchunks] = f;
	fl->chunk_base[fl->nchunks++] = fl->len;
	/* Byte arithmetic: a section of a hostile file may be misaligned. */
	memcpy(fl->insns + fl->len, (const char *)ld->secs[fn->shndx].data + fn->start * sizeof(struct bpf_insn),
	       fn->cnt * sizeof(struct bpf_insn));
	fl->func_base[f] = (long)fl->len;
	fl->len += fn->cnt;
	return index_relocs(ld, fn->shndx);
}

/* Flat position of (shndx, idx), copying the function that holds it. */
static int flat_target(struct gx_load *ld, struct flat *fl, const char *from, size_t at,
		       size_t shndx, int64_t idx, size_t *pos)
{
	if (idx < 0 || (uint64_t)idx >= ld->secs[shndx].size / 8)
		return rerr(ld, from, at, "call target out of range");
	long f = find_func(ld, shndx, (size_t)idx);
	if (f < 0)
		return rerr(ld, from, at, "call target %lld in '%s' is not inside a function",
			    (long long)idx, ld->secs[shndx].name);
	if (fl->func_base[f] < 0) {
		int err = append_func(ld, fl, (size_t)f);
		if (err)
			return err;
	}
	*pos = (size_t)fl->func_base[f] + ((size_t)idx - ld->funcs[f].start);
	return 0;
}

static bool is_ldimm64(const struct bpf_insn *in)
{
	return in->code == (BPF_LD | BPF_IMM | BPF_DW);
}

static bool is_call(const struct bpf_insn *in)
{
	return in->code == (BPF_JMP | BPF_CALL);
}

static struct gx_bpf_map *map_for_sym(struct gx_load *ld, const Elf64_Sym *sym)
{
	for (size_t i = 0; i < ld->obj->map_cnt; i++) {
		struct gx_bpf_map *m = &ld->obj->maps[i];
		if (sym->st_shndx == ld->maps_shndx) {
			if (!(m->gx_flags & GX_BPF_MAP_F_INTERNAL) && m->sym_off == sym->st_value)
				return m;
		} else if ((m->gx_flags & GX_BPF_MAP_F_INTERNAL) && m->sec_idx == sym->st_shndx) {
			return m;
		}
	}
	return NULL;
}

static int reloc_one(struct gx_load *ld, struct flat *fl, size_t k, size_t shndx, size_t sidx,
		     const Elf64_Rel *rel, size_t chunk_end)
{
	const char *sn = ld->secs[shndx].name;
	struct bpf_insn *in = &fl->insns[k];
	size_t symi = ELF64_R_SYM(rel->r_info);
	uint32_t type = ELF64_R_TYPE(rel->r_info);
	if (symi == 0 || symi >= ld->nsyms)
		return rerr(ld, sn, sidx, "relocation with bad symbol index %zu", symi);
	const Elf64_Sym *sym = &ld->syms[symi];
	const char *name = gx_load_sym_name(ld, sym);
	if (sym->st_shndx == SHN_UNDEF && ld->o.resolve_extern && is_call(in) && type == R_BPF_64_32) {
		/* a kfunc: the caller's helper id */
		int id = ld->o.resolve_extern(ld->o.user, name);
		if (id < 0)
			return rerr(ld, sn, sidx, "call of unknown kfunc '%s'", name);
		in->src_reg = 0;
		in->imm = id;
		return 0;
	}
	if (sym->st_shndx == SHN_UNDEF)
		return rerr(ld, sn, sidx, "relocation against undefined symbol '%s' (externs are not supported)",
			    name);
	if (sym->st_shndx >= ld->nsec)
		return rerr(ld, sn, sidx, "relocation against symbol '%s' in a special section", name);
	struct gx_lsec *ts = &ld->secs[sym->st_shndx];
	if (ts->is_code) {
		int64_t target;
		if (is_call(in) && in->src_reg == BPF_PSEUDO_CALL) {
			if (type != R_BPF_64_32)
				return rerr(ld, sn, sidx, "call relocation of type %u", type);
			if (sym->st_value % 8)
				return rerr(ld, sn, sidx, "misaligned call target '%s'", name);
			target = (int64_t)(sym->st_value / 8) + in->imm + 1;
		} else if (is_ldimm64(in) && in->src_reg == 0) {
			if (type != R_BPF_64_64)
				return rerr(ld, sn, sidx, "function address relocation of type %u", type);
			if (in->imm % 8 || sym->st_value % 8)
				return rerr(ld, sn, sidx, "misaligned function address '%s'", name);
			target = (int64_t)(sym->st_value / 8) + in->imm / 8;
			in->src_reg = BPF_PSEUDO_FUNC;
		} else {
			return rerr(ld, sn, sidx, "code relocation '%s' on an instruction that is not a call", name);
		}
		size_t pos;
		int err = flat_target(ld, fl, sn, sidx, sym->st_shndx, target, &pos);
		if (err)
			return err;
		in = &fl->insns[k]; /* may have moved */
		in->imm = (int32_t)((int64_t)pos - (int64_t)k - 1);
		return 0;
	}
	if (!is_ldimm64(in) || k + 1 >= chunk_end)
		return rerr(ld, sn, sidx, "relocation against '%s' on an instruction that is not ld_imm64", name);
	if (type != R_BPF_64_64)
		return rerr(ld, sn, sidx, "data relocation of type %u", type);
	if (in->src_reg != 0)
		return rerr(ld, sn, sidx, "relocated ld_imm64 already has src_reg %u", in->src_reg);
	if ((int)sym->st_shndx == ld->maps_shndx) {
		struct gx_bpf_map *m = map_for_sym(ld, sym);
		if (!m)
			return rerr(ld, sn, sidx, "relocation against '%s', which is not a map", name);
		in->src_reg = BPF_PSEUDO_MAP_IDX;
		in->imm = (int32_t)m->idx;
		in[1].imm = 0;
		return 0;
	}
	if (ts->data_kind) {
		struct gx_bpf_map *m = map_for_sym(ld, sym);
		if (!m)
			return rerr(ld, sn, sidx, "relocation against empty data section '%s'", ts->name);
		int64_t off = (int64_t)in->imm + (ELF64_ST_TYPE(sym->st_info) == STT_SECTION ? 0 : (int64_t)sym->st_value);
		if (off < 0 || off >= m->value_size)
			return rerr(ld, sn, sidx, "global data offset %lld outside '%s' (%u bytes)",
				    (long long)off, m->name, m->value_size);
		in->src_reg = BPF_PSEUDO_MAP_IDX_VALUE;
		in->imm = (int32_t)m->idx;
		in[1].imm = (int32_t)off;
		return 0;
	}
	return rerr(ld, sn, sidx, "relocation against '%s' in unsupported section '%s'", name, ts->name);
}

static int flatten(struct gx_load *ld, struct gx_bpf_prog *p, size_t main_func)
{
	struct flat fl = { .prog = p->name };
	int err = -ENOMEM;
	fl.func_base = malloc(ld->nfuncs * sizeof(*fl.func_base));
	if (!fl.func_base)
		goto out;
	for (size_t i = 0; i < ld->nfuncs; i++)
		fl.func_base[i] = -1;
	err = append_func(ld, &fl, main_func);
	for (size_t c = 0; !err && c < fl.nchunks; c++) {
		size_t f = fl.chunk_func[c], base = fl.chunk_base[c];
		struct gx_lfunc *fn = &ld->funcs[f];
		const char *sn = ld->secs[fn->shndx].name;
		for (size_t j = 0; !err && j < fn->cnt; j++) {
			size_t k = base + j, sidx = fn->start + j;
			const Elf64_Rel *rel = reloc_at(ld, fn->shndx, sidx);
			if (rel) {
				err = reloc_one(ld, &fl, k, fn->shndx, sidx, rel, base + fn->cnt);
			} else if (is_call(&fl.insns[k]) && fl.insns[k].src_reg == BPF_PSEUDO_CALL) {
				/* pc-relative call inside the same section */
				size_t pos;
				int64_t t = (int64_t)sidx + fl.insns[k].imm + 1;
				err = flat_target(ld, &fl, sn, sidx, fn->shndx, t, &pos);
				if (!err)
					fl.insns[k].imm = (int32_t)((int64_t)pos - (int64_t)k - 1);
			}
			if (is_ldimm64(&fl.insns[k]))
				j++; /* second slot */
		}
	}
	if (!err) {
		p->insns = fl.insns;
		p->insn_cnt = fl.len;
		ld->flat_total += fl.len;
		fl.insns = NULL;
	}
out:
	free(fl.insns);
	free(fl.func_base);
	free(fl.chunk_func);
	free(fl.chunk_base);
	return err;
}

int gx_load_relocate(struct gx_load *ld)
{
	size_t code = 0;
	for (size_t i = 1; i < ld->nsec; i++)
		if (ld->secs[i].is_code)
			code += ld->secs[i].size / sizeof(struct bpf_insn);
	ld->flat_max = code > FLAT_MIN_INSNS / FLAT_RATIO ? code * FLAT_RATIO : FLAT_MIN_INSNS;
	for (size_t i = 0; i < ld->obj->prog_cnt; i++) {
		struct gx_bpf_prog *p = &ld->obj->progs[i];
		long f = find_func(ld, (size_t)p->sec_idx, p->sec_insn_off);
		if (f < 0)
			return -EINVAL;
		int err = flatten(ld, p, (size_t)f);
		if (err)
			return err;
	}
	return 0;
}
