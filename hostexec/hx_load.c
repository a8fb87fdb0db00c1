/* hx_load.c — turn a hostbpf struct_ops object into an executable policy.
 *
 * Read with libelf and our own BTF reader (hx_btf.c: no libbpf at run time,
 * the shim's plugin must run where libbpf is absent): map definitions from
 * the .maps DATASEC, global data (.rodata/.data/.bss, one internal map per
 * section), the struct_ops variable and its BTF type. Relocations are
 * applied here as libbpf would at kernel load: maps and global data become
 * the devbpf interpreter's ld_imm64 conventions, kfunc calls become helper
 * calls with HX_KF_* ids. Members of the struct_ops variable are matched to
 * programs through the .struct_ops.link relocations. Static functions in
 * .text (bpf-to-bpf calls, bpf_loop callbacks) are copied after each
 * program that reaches them, as devbpf's loader does, so every program
 * stays one self-contained array for the verifier, interpreter and JIT. */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "common/gx_log.h"
#include "devbpf/gx_bpf.h"
#include "hostexec/hx_internal.h"

static const char *const kfunc_names[] = {
	"bpf_gpu_move_head", "bpf_gpu_move_tail", "bpf_gpu_set_prefetch_region",
	"bpf_gpu_migrate_range", "bpf_gpu_set_attr", "bpf_gpu_reject_bind",
	"bpf_gpu_hold_launch", "bpf_gpu_set_window",
};

static int fail(char *why, size_t wlen, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, wlen, fmt, ap);
	va_end(ap);
	return err;
}

static int find_map_for_sec(const struct hx_policy *p, const char *sec)
{
	for (int i = 0; i < p->nmaps; i++)
		if (p->maps[i].internal && !strcmp(p->maps[i].name, sec))
			return i;
	return -1;
}

static int find_map(const struct hx_policy *p, const char *name)
{
	for (int i = 0; i < p->nmaps; i++)
		if (!p->maps[i].internal && !strcmp(p->maps[i].name, name))
			return i;
	return -1;
}

static struct hx_prog *find_prog(struct hx_policy *p, const char *name)
{
	for (int i = 0; i < p->nprogs; i++)
		if (!strcmp(p->progs[i].name, name))
			return &p->progs[i];
	return NULL;
}

/* The object's .text: its functions (from the symbol table) and
 * relocations, for copying the ones a program reaches after it. */
#define HX_MAX_FUNCS 64
struct hx_text {
	size_t shndx;                /* 0: no .text */
	const struct bpf_insn *insns;
	size_t cnt;
	Elf_Data *rel;               /* .rel.text, or NULL */
	size_t fstart[HX_MAX_FUNCS], fcnt[HX_MAX_FUNCS];
	size_t nfn;
};

/* What a program was linked from: the ELF, and where each .text function
 * was copied into it (-1: not yet). */
struct hx_link {
	struct hx_policy *p;
	struct hx_prog *prog;
	size_t own_shndx;            /* the program's own section */
	Elf *elf;
	Elf_Data *syms;
	size_t strndx;
	const struct hx_text *text;
	long base[HX_MAX_FUNCS];
	char *why;
	size_t wlen;
};

static int reloc_insn(struct hx_link *l, size_t idx, const GElf_Rel *rel);

static bool is_call_insn(const struct bpf_insn *in)
{
	return in->code == (BPF_JMP | BPF_CALL);
}

/* The function of .text that starts at insn `t` is in the program at the
 * returned index (copied there, and linked, on first use). */
static long link_func(struct hx_link *l, int64_t t)
{
	const struct hx_text *x = l->text;
	size_t f = 0;
	while (f < x->nfn && (int64_t)x->fstart[f] != t)
		f++;
	if (f == x->nfn)
		return fail(l->why, l->wlen, -EINVAL, "program %s: call into .text insn %lld, not a function",
			    l->prog->name, (long long)t);
	if (l->base[f] >= 0)
		return l->base[f];
	struct hx_prog *pr = l->prog;
	size_t base = pr->cnt, n = x->fcnt[f];
	if (base + n > HX_MAX_INSNS)
		return fail(l->why, l->wlen, -E2BIG, "program %s: more than %d insns with its subprograms", pr->name,
			    HX_MAX_INSNS);
	struct bpf_insn *ni = realloc(pr->insns, (base + n) * sizeof(*ni));
	if (!ni)
		return -ENOMEM;
	memcpy(ni + base, x->insns + x->fstart[f], n * sizeof(*ni));
	pr->insns = ni;
	pr->cnt = base + n;
	l->base[f] = (long)base;
	/* its own relocations, and calls inside .text (pc-relative) */
	for (size_t j = 0; j < n; j++) {
		size_t k = base + j, at = (x->fstart[f] + j) * 8;
		bool relocated = false;
		for (size_t r = 0; x->rel && r < x->rel->d_size / sizeof(GElf_Rel); r++) {
			GElf_Rel rel;
			if (!gelf_getrel(x->rel, (int)r, &rel) || rel.r_offset != at)
				continue;
			rel.r_offset = k * 8;
			int err = reloc_insn(l, k, &rel);
			if (err)
				return err;
			relocated = true;
		}
		struct bpf_insn *in = &pr->insns[k];
		if (!relocated && is_call_insn(in) && in->src_reg == BPF_PSEUDO_CALL) {
			long pos = link_func(l, (int64_t)(x->fstart[f] + j) + in->imm + 1);
			if (pos < 0)
				return (int)pos;
			pr->insns[k].imm = (int32_t)(pos - (long)k - 1);
		}
		if (pr->insns[k].code == (BPF_LD | BPF_DW | BPF_IMM))
			j++;
	}
	return (long)base;
}

/* One relocation at insn idx of the program being linked. */
static int reloc_insn(struct hx_link *l, size_t idx, const GElf_Rel *rel)
{
	struct hx_policy *p = l->p;
	struct hx_prog *prog = l->prog;
	GElf_Sym sym;
	if (!gelf_getsym(l->syms, (int)GELF_R_SYM(rel->r_info), &sym))
		return fail(l->why, l->wlen, -EINVAL, "bad relocation");
	struct bpf_insn *in = &prog->insns[idx];
	const char *sname = elf_strptr(l->elf, l->strndx, sym.st_name);
	const char *secname = "";
	if (sym.st_shndx != SHN_UNDEF && sym.st_shndx < SHN_LORESERVE) {
		Elf_Scn *ts = elf_getscn(l->elf, sym.st_shndx);
		GElf_Shdr th;
		if (ts && gelf_getshdr(ts, &th))
			secname = elf_strptr(l->elf, l->strndx, th.sh_name);
	}
	if (!sname)
		sname = "";
	if (!secname)
		secname = "";
	bool in_text = l->text->shndx && sym.st_shndx == l->text->shndx;
	bool own = sym.st_shndx == l->own_shndx;
	if (own && (is_call_insn(in) || in->code == (BPF_LD | BPF_DW | BPF_IMM))) {
		/* a call or function address inside the program's own section */
		int64_t t = is_call_insn(in) ? (int64_t)(sym.st_value / 8) + in->imm + 1
					     : (int64_t)(sym.st_value / 8) + in->imm / 8;
		if (in->code == (BPF_LD | BPF_DW | BPF_IMM)) {
			in->src_reg = BPF_PSEUDO_FUNC;
			in[1].imm = 0;
		}
		in->imm = (int32_t)(t - (int64_t)idx - 1);
		return 0;
	}
	if (is_call_insn(in) && in_text) {
		long pos = link_func(l, (int64_t)(sym.st_value / 8) + in->imm + 1);
		if (pos < 0)
			return (int)pos;
		prog->insns[idx].imm = (int32_t)(pos - (long)idx - 1);
		return 0;
	}
	if (is_call_insn(in)) {
		if (sym.st_shndx != SHN_UNDEF)
			return fail(l->why, l->wlen, -EOPNOTSUPP, "program %s calls %s outside .text", prog->name, sname);
		size_t k;
		for (k = 0; k < sizeof(kfunc_names) / sizeof(kfunc_names[0]); k++)
			if (!strcmp(sname, kfunc_names[k]))
				break;
		if (k == sizeof(kfunc_names) / sizeof(kfunc_names[0]))
			return fail(l->why, l->wlen, -EINVAL, "program %s calls unknown kfunc %s", prog->name, sname);
		in->src_reg = 0;
		in->imm = HX_KF_BASE + (int)k;
		return 0;
	}
	if (in->code != (BPF_LD | BPF_DW | BPF_IMM) || idx + 1 >= prog->cnt)
		return fail(l->why, l->wlen, -EINVAL, "program %s insn %zu: unexpected relocation", prog->name, idx);
	if (in_text) {
		/* a function's address: a bpf_loop callback */
		long pos = link_func(l, (int64_t)(sym.st_value / 8) + in->imm / 8);
		if (pos < 0)
			return (int)pos;
		in = &prog->insns[idx];
		in->src_reg = BPF_PSEUDO_FUNC;
		in->imm = (int32_t)(pos - (long)idx - 1);
		in[1].imm = 0;
		return 0;
	}
	if (!strcmp(secname, ".maps")) {
		int m = find_map(p, sname);
		if (m < 0)
			return fail(l->why, l->wlen, -EINVAL, "program %s: unknown map %s", prog->name, sname);
		in->src_reg = BPF_PSEUDO_MAP_IDX;
		in->imm = m;
		return 0;
	}
	int m = find_map_for_sec(p, secname);
	if (m < 0)
		return fail(l->why, l->wlen, -EINVAL, "program %s: reference to section '%s' not supported", prog->name,
			    secname);
	uint64_t off = sym.st_value + (uint32_t)in->imm;
	if (off >= p->maps[m].data_len)
		return fail(l->why, l->wlen, -EINVAL, "program %s: global data offset out of range", prog->name);
	in->src_reg = BPF_PSEUDO_MAP_IDX_VALUE;
	in[0].imm = m;
	in[1].imm = (int32_t)off;
	return 0;
}

/* Apply one code section's relocations to its program, copying the .text
 * functions it reaches after it. */
static int relocate(struct hx_policy *p, struct hx_prog *prog, size_t shndx, Elf *elf, Elf_Data *rd,
		    Elf_Data *syms, size_t strndx, const struct hx_text *text, char *why, size_t wlen)
{
	struct hx_link l = { .p = p, .prog = prog, .own_shndx = shndx, .elf = elf, .syms = syms, .strndx = strndx,
			     .text = text, .why = why, .wlen = wlen };
	size_t own = prog->cnt, n = rd->d_size / sizeof(GElf_Rel);
	for (size_t f = 0; f < HX_MAX_FUNCS; f++)
		l.base[f] = -1;
	for (size_t i = 0; i < n; i++) {
		GElf_Rel rel;
		if (!gelf_getrel(rd, (int)i, &rel))
			return fail(why, wlen, -EINVAL, "bad relocation");
		size_t idx = rel.r_offset / 8;
		if (rel.r_offset % 8 || idx >= own)
			return fail(why, wlen, -EINVAL, "relocation outside program %s", prog->name);
		int err = reloc_insn(&l, idx, &rel);
		if (err)
			return err;
	}
	return 0;
}

/* .text's functions, its instructions and relocations (the functions a
 * program calls are copied after it in relocate). */
static int load_text(Elf *elf, size_t strndx, Elf_Data *syms, struct hx_text *x, char *why, size_t wlen)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *n;
		if (!gelf_getshdr(scn, &sh) || !(n = elf_strptr(elf, strndx, sh.sh_name)))
			continue;
		if (sh.sh_type == SHT_PROGBITS && (sh.sh_flags & SHF_EXECINSTR) && !strcmp(n, ".text") && sh.sh_size) {
			Elf_Data *d = elf_getdata(scn, NULL);
			if (!d || d->d_size % 8)
				return fail(why, wlen, -EINVAL, "section '.text': bad code");
			x->shndx = elf_ndxscn(scn);
			x->insns = d->d_buf;
			x->cnt = d->d_size / 8;
		}
	}
	if (!x->shndx)
		return 0;
	scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_REL && sh.sh_info == x->shndx)
			x->rel = elf_getdata(scn, NULL);
	}
	for (size_t i = 0; syms && i < syms->d_size / sizeof(GElf_Sym); i++) {
		GElf_Sym s;
		if (!gelf_getsym(syms, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC || s.st_shndx != x->shndx)
			continue;
		if (x->nfn == HX_MAX_FUNCS)
			return fail(why, wlen, -E2BIG, "more than %d functions in .text", HX_MAX_FUNCS);
		if (s.st_value % 8 || s.st_size % 8 || !s.st_size || (s.st_value + s.st_size) / 8 > x->cnt)
			return fail(why, wlen, -EINVAL, "function %s: bad extent in .text",
				    elf_strptr(elf, strndx, s.st_name));
		x->fstart[x->nfn] = s.st_value / 8;
		x->fcnt[x->nfn++] = s.st_size / 8;
	}
	return 0;
}

/* Knob "name=value": a const volatile in .rodata. */
static int set_knobs(struct hx_policy *p, const char *knobs, char *why, size_t wlen)
{
	char buf[256];
	if (!knobs || !*knobs)
		return 0;
	snprintf(buf, sizeof(buf), "%s", knobs);
	for (char *save = NULL, *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');
		if (!eq)
			return fail(why, wlen, -EINVAL, "knob '%s': expected name=value", kv);
		*eq = 0;
		uint32_t sz = 0;
		uint8_t *v = hx_policy_global(p, kv, &sz);
		char *end;
		unsigned long long x = strtoull(eq + 1, &end, 0);
		if (!v || *end || !(sz == 4 || sz == 8 || sz == 1 || sz == 2))
			return fail(why, wlen, -EINVAL, "knob '%s': no such setting", kv);
		memcpy(v, &x, sz); /* little endian */
	}
	return 0;
}

/* Globals by name: clang leaves DATASEC offsets 0 in objects (libbpf fixes
 * them from the symbol table), so the symbol table is the source. */
void *hx_policy_global(const struct hx_policy *p, const char *name, uint32_t *size)
{
	for (int i = 0; i < p->nglobals; i++)
		if (!strcmp(p->globals[i].name, name)) {
			*size = p->globals[i].size;
			return p->maps[p->globals[i].map].data + p->globals[i].off;
		}
	return NULL;
}

static struct hx_map *new_map(struct hx_policy *p, const char *name, char *why, size_t wlen)
{
	if (p->nmaps == HX_MAX_MAPS) {
		fail(why, wlen, -E2BIG, "too many maps");
		return NULL;
	}
	struct hx_map *m = &p->maps[p->nmaps++];
	snprintf(m->name, sizeof(m->name), "%s", name);
	return m;
}

/* Global data sections → internal maps; .BTF → p->btf; .maps → maps. */
static int load_data(struct hx_policy *p, Elf *elf, size_t strndx, char *why, size_t wlen)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		const char *n = elf_strptr(elf, strndx, sh.sh_name);
		if (!n)
			continue;
		if (!strcmp(n, ".BTF")) {
			Elf_Data *d = elf_getdata(scn, NULL);
			if (!d || !d->d_size || d->d_size > (64u << 20))
				return fail(why, wlen, -EINVAL, "bad .BTF section");
			p->btf_raw = malloc(d->d_size);
			if (!p->btf_raw)
				return -ENOMEM;
			memcpy(p->btf_raw, d->d_buf, d->d_size);
			if (hx_btf_parse(&p->btf, p->btf_raw, d->d_size))
				return fail(why, wlen, -EINVAL, "malformed BTF");
			continue;
		}
		bool ro = gx_bpf_section_is_rodata(n);
		if (!(sh.sh_flags & SHF_ALLOC) || (sh.sh_flags & SHF_EXECINSTR) || !sh.sh_size ||
		    !(ro || !strncmp(n, ".data", 5) || !strncmp(n, ".bss", 4)))
			continue;
		if (sh.sh_size > (1u << 20))
			return fail(why, wlen, -E2BIG, "section '%s': too much global data", n);
		struct hx_map *m = new_map(p, n, why, wlen);
		if (!m)
			return -E2BIG;
		m->type = 2;
		m->internal = true;
		m->rdonly = ro;
		m->key_size = 4;
		m->value_size = (uint32_t)sh.sh_size;
		m->max_entries = 1;
		m->data_len = (sh.sh_size + 7) & ~7ull;
		m->data = calloc(1, m->data_len);
		if (!m->data)
			return -ENOMEM;
		Elf_Data *d = sh.sh_type == SHT_NOBITS ? NULL : elf_getdata(scn, NULL);
		if (d && d->d_buf)
			memcpy(m->data, d->d_buf, d->d_size < sh.sh_size ? d->d_size : sh.sh_size);
	}
	if (!p->btf.off)
		return fail(why, wlen, -EINVAL, "no BTF (compile with -g)");
	uint32_t sec = hx_btf_find_datasec(&p->btf, ".maps");
	const char *vn;
	uint32_t vt, off, sz;
	for (int i = 0; sec && hx_btf_datasec_var(&p->btf, sec, i, &vn, &vt, &off, &sz) != -ENOENT; i++) {
		struct hx_btf_map def;
		if (hx_btf_map_def(&p->btf, vt, &def))
			return fail(why, wlen, -EINVAL, "map %s: unsupported definition", vn);
		struct hx_map *m = new_map(p, vn, why, wlen);
		if (!m)
			return -E2BIG;
		m->type = def.type;
		m->key_size = def.key_size;
		m->value_size = def.value_size;
		m->max_entries = def.max_entries;
		if (hx_map_init(m))
			return fail(why, wlen, -EOPNOTSUPP, "map %s: type %u or size not supported", vn, def.type);
	}
	return 0;
}

/* The struct_ops variable: its type says mem or sched; name from its data. */
static int load_ops(struct hx_policy *p, Elf *elf, size_t strndx, const char **ops_var, char *why, size_t wlen)
{
	const char *secs[] = {".struct_ops.link", ".struct_ops"};
	for (int s = 0; s < 2; s++) {
		uint32_t sec = hx_btf_find_datasec(&p->btf, secs[s]);
		const char *vn;
		uint32_t vt, off, sz;
		for (int i = 0; sec && hx_btf_datasec_var(&p->btf, sec, i, &vn, &vt, &off, &sz) != -ENOENT; i++) {
			const struct btf_type *t = hx_btf_type(&p->btf, hx_btf_skip_mods(&p->btf, vt));
			const char *tn = t ? hx_btf_name(&p->btf, t->name_off) : "?";
			if (*ops_var)
				return fail(why, wlen, -EINVAL, "more than one struct_ops variable");
			if (!t || (strcmp(tn, "gpu_mem_ops") && strcmp(tn, "gpu_sched_ops")))
				return fail(why, wlen, -EINVAL, "struct_ops type %s is not gpu_mem_ops/gpu_sched_ops", tn);
			p->kind = strcmp(tn, "gpu_mem_ops") ? HX_SCHED : HX_MEM;
			*ops_var = vn;
			/* the name member, from the section's bytes */
			size_t noff = p->kind == HX_MEM ? offsetof(struct gpu_mem_ops, name)
							: offsetof(struct gpu_sched_ops, name);
			Elf_Scn *scn = NULL;
			while ((scn = elf_nextscn(elf, scn))) {
				GElf_Shdr sh;
				const char *n;
				Elf_Data *d;
				if (!gelf_getshdr(scn, &sh) || !(n = elf_strptr(elf, strndx, sh.sh_name)) ||
				    strcmp(n, secs[s]) || !(d = elf_getdata(scn, NULL)) || !d->d_buf)
					continue;
				if ((uint64_t)off + noff + GPU_OPS_NAME_LEN <= d->d_size)
					memcpy(p->name, (const char *)d->d_buf + off + noff, GPU_OPS_NAME_LEN);
			}
			if (!p->name[0])
				snprintf(p->name, sizeof(p->name), "%.16s", vn);
		}
	}
	if (!*ops_var)
		return fail(why, wlen, -EINVAL, "no struct_ops variable (gpu_mem_ops / gpu_sched_ops)");
	return 0;
}

static int load_elf(struct hx_policy *p, const char *path, const char *ops_var, char *why, size_t wlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err = 0;
	if (fd < 0)
		return fail(why, wlen, -errno, "%s", strerror(errno));
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	size_t strndx;
	Elf_Data *syms = NULL;
	Elf_Scn *scn = NULL;
	if (!elf || elf_getshdrstrndx(elf, &strndx)) {
		err = fail(why, wlen, -EINVAL, "not an ELF object");
		goto out;
	}
	/* Programs: struct_ops/NAME sections; the symbol table. */
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		const char *n = elf_strptr(elf, strndx, sh.sh_name);
		if (sh.sh_type == SHT_SYMTAB)
			syms = elf_getdata(scn, NULL);
		if (!n || sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_EXECINSTR))
			continue;
		if (strncmp(n, "struct_ops/", 11)) {
			if (sh.sh_size && strcmp(n, ".text")) {
				err = fail(why, wlen, -EINVAL, "code section '%s' is not struct_ops/", n);
				goto out;
			}
			continue;
		}
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d || !d->d_size || d->d_size % 8 || d->d_size / 8 > HX_MAX_INSNS || p->nprogs == HX_MAX_PROGS) {
			err = fail(why, wlen, -EINVAL, "section '%s': bad or too large program", n);
			goto out;
		}
		struct hx_prog *pr = &p->progs[p->nprogs++];
		snprintf(pr->name, sizeof(pr->name), "%s", n + 11);
		pr->cnt = d->d_size / 8;
		pr->insns = malloc(d->d_size);
		if (!pr->insns) {
			err = -ENOMEM;
			goto out;
		}
		memcpy(pr->insns, d->d_buf, d->d_size);
	}
	if (!syms || !p->nprogs) {
		err = fail(why, wlen, -EINVAL, "no struct_ops programs");
		goto out;
	}
	struct hx_text text = { 0 };
	if ((err = load_text(elf, strndx, syms, &text, why, wlen)))
		goto out;
	/* Globals: object symbols in global data sections. */
	size_t nsym = syms->d_size / sizeof(GElf_Sym);
	for (size_t i = 0; i < nsym; i++) {
		GElf_Sym s;
		GElf_Shdr th;
		Elf_Scn *ts;
		const char *sn, *vn;
		if (!gelf_getsym(syms, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_OBJECT ||
		    s.st_shndx == SHN_UNDEF || s.st_shndx >= SHN_LORESERVE || !(ts = elf_getscn(elf, s.st_shndx)) ||
		    !gelf_getshdr(ts, &th) || !(sn = elf_strptr(elf, strndx, th.sh_name)) ||
		    !(vn = elf_strptr(elf, strndx, s.st_name)) || p->nglobals == 64)
			continue;
		int mi = find_map_for_sec(p, sn);
		if (mi < 0 || s.st_value + s.st_size > p->maps[mi].data_len || s.st_size > 8)
			continue;
		snprintf(p->globals[p->nglobals].name, sizeof(p->globals[0].name), "%s", vn);
		p->globals[p->nglobals].map = mi;
		p->globals[p->nglobals].off = (uint32_t)s.st_value;
		p->globals[p->nglobals++].size = (uint32_t)s.st_size;
	}
	/* Program names: the function symbol at offset 0 of each section. */
	for (size_t i = 0; i < nsym; i++) {
		GElf_Sym s;
		if (!gelf_getsym(syms, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC || s.st_value)
			continue;
		Elf_Scn *ts = elf_getscn(elf, s.st_shndx);
		GElf_Shdr th;
		const char *sn = ts && gelf_getshdr(ts, &th) ? elf_strptr(elf, strndx, th.sh_name) : NULL;
		const char *fn = elf_strptr(elf, strndx, s.st_name);
		if (!sn || !fn || strncmp(sn, "struct_ops/", 11))
			continue;
		for (int k = 0; k < p->nprogs; k++)
			if (!strcmp(p->progs[k].name, sn + 11))
				snprintf(p->progs[k].name, sizeof(p->progs[k].name), "%s", fn);
	}
	/* Relocations: code sections and the struct_ops variable. */
	scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh, th;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_REL)
			continue;
		Elf_Scn *ts = elf_getscn(elf, sh.sh_info);
		const char *tn = ts && gelf_getshdr(ts, &th) ? elf_strptr(elf, strndx, th.sh_name) : NULL;
		Elf_Data *rd = elf_getdata(scn, NULL);
		if (!tn || !rd)
			continue;
		if (!strncmp(tn, "struct_ops/", 11)) {
			struct hx_prog *pr = NULL;
			/* the program of that section: its function symbol at 0 */
			size_t secidx = sh.sh_info;
			for (size_t i = 0; i < nsym && !pr; i++) {
				GElf_Sym s;
				if (gelf_getsym(syms, (int)i, &s) && GELF_ST_TYPE(s.st_info) == STT_FUNC &&
				    s.st_shndx == secidx && !s.st_value)
					pr = find_prog(p, elf_strptr(elf, strndx, s.st_name));
			}
			if (!pr) {
				err = fail(why, wlen, -EINVAL, "section '%s': no program symbol", tn);
				goto out;
			}
			err = relocate(p, pr, secidx, elf, rd, syms, strndx, &text, why, wlen);
			if (err)
				goto out;
		} else if (!strcmp(tn, ".struct_ops.link") || !strcmp(tn, ".struct_ops")) {
			uint64_t base = 0;
			for (size_t i = 0; i < nsym; i++) {
				GElf_Sym s;
				const char *sn2;
				if (gelf_getsym(syms, (int)i, &s) && s.st_shndx == sh.sh_info &&
				    (sn2 = elf_strptr(elf, strndx, s.st_name)) && !strcmp(sn2, ops_var))
					base = s.st_value;
			}
			size_t n = rd->d_size / sizeof(GElf_Rel);
			for (size_t i = 0; i < n; i++) {
				GElf_Rel rel;
				GElf_Sym s;
				if (!gelf_getrel(rd, (int)i, &rel) || !gelf_getsym(syms, (int)GELF_R_SYM(rel.r_info), &s))
					continue;
				uint64_t slot = (rel.r_offset - base) / 8;
				int max = p->kind == HX_MEM ? 4 : 3;
				struct hx_prog *pr = find_prog(p, elf_strptr(elf, strndx, s.st_name));
				if (rel.r_offset < base || (rel.r_offset - base) % 8 || slot >= (uint64_t)max || !pr) {
					err = fail(why, wlen, -EINVAL, "struct_ops %s: bad handler relocation", ops_var);
					goto out;
				}
				p->handler[slot] = pr;
			}
		}
	}
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return err;
}

static int load_meta(struct hx_policy *p, const char *path, const char **ops_var, char *why, size_t wlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;
	if (fd < 0)
		return fail(why, wlen, -errno, "%s", strerror(errno));
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	size_t strndx;
	GElf_Ehdr eh;
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getshdrstrndx(elf, &strndx) || !gelf_getehdr(elf, &eh))
		err = fail(why, wlen, -EINVAL, "not an ELF object");
	else if (eh.e_machine != EM_BPF || eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
		err = fail(why, wlen, -EINVAL, "not a little-endian 64-bit BPF object");
	else
		err = load_data(p, elf, strndx, why, wlen);
	if (!err)
		err = load_ops(p, elf, strndx, ops_var, why, wlen);
	if (elf)
		elf_end(elf);
	close(fd);
	return err;
}

int hx_policy_load(struct hx_policy *p, const char *path, const char *knobs, bool shm, char *why, size_t wlen)
{
	const char *ops_var = NULL;
	snprintf(why, wlen, "?");
	snprintf(p->file, sizeof(p->file), "%s", path);
	int err = load_meta(p, path, &ops_var, why, wlen);
	if (!err)
		err = load_elf(p, path, ops_var, why, wlen);
	if (!err)
		err = set_knobs(p, knobs, why, wlen);
	/* After the knobs: shared copies start with the final rodata. Failing
	 * to share is not fatal (private maps, one warning). */
	for (int i = 0; !err && shm && i < p->nmaps; i++) {
		int e = hx_map_share(&p->maps[i], p->name);
		if (e) {
			pr_warn("hostpolicy: %s: map %s stays private (%s)", p->name, p->maps[i].name, strerror(-e));
			break;
		}
	}
	for (int s = 0; !err && s < HX_MAX_HANDLERS; s++)
		if (p->handler[s])
			err = hx_verify_prog(p->handler[s], p->kind, s, p, why, wlen);
	if (!err) {
		bool any = false;
		for (int s = 0; s < HX_MAX_HANDLERS; s++)
			any |= p->handler[s] != NULL;
		if (!any)
			err = fail(why, wlen, -EINVAL, "struct_ops %s has no handlers", ops_var);
	}
	if (err)
		hx_policy_free(p);
	return err;
}

void hx_policy_free(struct hx_policy *p)
{
	hx_native_free(p->native);
	for (int i = 0; i < p->nprogs; i++)
		free(p->progs[i].insns);
	for (int i = 0; i < p->nmaps; i++)
		hx_map_release(&p->maps[i]);
	hx_btf_free(&p->btf);
	free(p->btf_raw);
	memset(p, 0, sizeof(*p));
}
