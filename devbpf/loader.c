/* loader.c — parse a `clang -target bpf` ELF object into a gx_bpf_object:
 * the one loader of device policies and of host (struct_ops) policies.
 *
 * Why by hand (libelf + our BTF reader, btf.c) and not bpf_object__open:
 * libbpf only knows kernel program types and wants to create kernel maps; we
 * need our own section → hook rules, our own map types (per-warp shards), and
 * an object that never touches the kernel; and the shim, which loads host
 * policies through here, must run where libbpf is absent. Every count and
 * offset read from the file is checked before use: the input is untrusted
 * (a fuzz target runs it, with the device's options and the host's).
 *
 * Steps: ELF header checks → section scan → BTF (.BTF) → maps (.maps, via
 * BTF) and global data maps (.data*, .rodata*, .bss*) → functions (symbols)
 * → programs (global functions in sections with a hook rule) → struct_ops
 * variables (when the caller runs them) → relocation and flattening
 * (reloc.c). What differs between device and host is in the open options:
 * section rules, map types, extern (kfunc) resolution. */
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>

#include "devbpf/btf_internal.h"
#include "devbpf/loader_internal.h"
#include "gpuext/gdev_helpers.h"
#include "common/gx_log.h"
#include "common/gx_util.h"

#define MAX_MAPS 256
#define MAX_PROGS 1024
#define MAX_ENTRIES_LIMIT (1u << 24)
#define MAX_KEY_SIZE 512
#define MAX_VALUE_SIZE (1u << 20)
#define MAX_DATA_SIZE (1u << 22)
#define MAX_RINGBUF_SIZE (1u << 28)

int gx_load_msg(struct gx_load *ld, int err, const char *msg)
{
	if (ld->o.log)
		ld->o.log(ld->o.user, msg);
	if (!ld->o.quiet)
		pr_warn("bpf: object '%s': %s\n", ld->name, msg);
	return err;
}

static int lerr(struct gx_load *ld, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int lerr(struct gx_load *ld, int err, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return gx_load_msg(ld, err, msg);
}

static bool name_has_prefix(const char *s, const char *p)
{
	size_t n = strlen(p);
	return !strncmp(s, p, n) && (s[n] == 0 || s[n] == '.');
}

static int data_kind(const char *name)
{
	if (gx_bpf_section_is_rodata(name))
		return 2;
	if (name_has_prefix(name, ".data"))
		return 1;
	if (name_has_prefix(name, ".bss"))
		return 3;
	return 0;
}

/* ----------------------------------------------------------- ELF scan */

static int scan_sections(struct gx_load *ld)
{
	GElf_Ehdr eh;
	if (!gelf_getehdr(ld->elf, &eh))
		return lerr(ld, -EINVAL, "not an ELF file");
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
		return lerr(ld, -EINVAL, "not a little-endian 64-bit ELF file");
	if (eh.e_machine != EM_BPF)
		return lerr(ld, -EINVAL, "not a BPF object (e_machine %u)", eh.e_machine);
	if (eh.e_type != ET_REL)
		return lerr(ld, -EINVAL, "not a relocatable object (e_type %u)", eh.e_type);
	if (elf_getshdrnum(ld->elf, &ld->nsec) || elf_getshdrstrndx(ld->elf, &ld->shstrndx))
		return lerr(ld, -EINVAL, "bad section headers: %s", elf_errmsg(-1));
	if (ld->nsec > 65536)
		return lerr(ld, -E2BIG, "too many sections (%zu)", ld->nsec);
	ld->secs = calloc(ld->nsec ? ld->nsec : 1, sizeof(*ld->secs));
	if (!ld->secs)
		return -ENOMEM;
	ld->maps_shndx = ld->btf_shndx = ld->symtab_shndx = -1;
	for (size_t i = 1; i < ld->nsec; i++) {
		struct gx_lsec *s = &ld->secs[i];
		Elf_Scn *scn = elf_getscn(ld->elf, i);
		if (!scn || !gelf_getshdr(scn, &s->sh))
			return lerr(ld, -EINVAL, "section %zu: bad header", i);
		s->name = elf_strptr(ld->elf, ld->shstrndx, s->sh.sh_name);
		if (!s->name)
			return lerr(ld, -EINVAL, "section %zu: bad name", i);
		if (s->sh.sh_type != SHT_NOBITS) {
			if (s->sh.sh_offset > ld->len || s->sh.sh_size > ld->len - s->sh.sh_offset)
				return lerr(ld, -EINVAL, "section '%s': extends past the end of the file", s->name);
			Elf_Data *d = elf_getdata(scn, NULL);
			if (!d && s->sh.sh_size)
				return lerr(ld, -EINVAL, "section '%s': unreadable: %s", s->name, elf_errmsg(-1));
			if (d && d->d_size != s->sh.sh_size)
				return lerr(ld, -EINVAL, "section '%s': size mismatch", s->name);
			s->data = d ? d->d_buf : NULL;
		}
		s->size = s->sh.sh_size;
		if (s->sh.sh_type == SHT_SYMTAB) {
			if (ld->symtab_shndx >= 0)
				return lerr(ld, -EINVAL, "more than one symbol table");
			ld->symtab_shndx = (int)i;
		} else if (!strcmp(s->name, ".maps")) {
			ld->maps_shndx = (int)i;
		} else if (!strcmp(s->name, ".BTF")) {
			ld->btf_shndx = (int)i;
		} else if (s->sh.sh_type == SHT_PROGBITS && (s->sh.sh_flags & SHF_EXECINSTR)) {
			if (s->size % sizeof(struct bpf_insn))
				return lerr(ld, -EINVAL, "section '%s': size %zu is not a multiple of 8",
					    s->name, s->size);
			s->is_code = true;
		} else if ((s->sh.sh_type == SHT_PROGBITS || s->sh.sh_type == SHT_NOBITS) &&
			   (s->sh.sh_flags & SHF_ALLOC) && data_kind(s->name)) {
			s->data_kind = data_kind(s->name);
		}
	}
	if (ld->symtab_shndx < 0)
		return lerr(ld, -EINVAL, "no symbol table");
	struct gx_lsec *st = &ld->secs[ld->symtab_shndx];
	if (st->sh.sh_entsize != sizeof(Elf64_Sym) || st->size % sizeof(Elf64_Sym) || !st->data)
		return lerr(ld, -EINVAL, "bad symbol table");
	if (st->sh.sh_link == 0 || st->sh.sh_link >= ld->nsec)
		return lerr(ld, -EINVAL, "bad symbol string table link");
	ld->nsyms = st->size / sizeof(Elf64_Sym);
	ld->syms = st->data;
	ld->strtab_shndx = st->sh.sh_link;
	/* Relocation sections, attached to code sections only (.BTF.ext and debug
	 * info relocations are not ours). */
	for (size_t i = 1; i < ld->nsec; i++) {
		struct gx_lsec *s = &ld->secs[i];
		if (s->sh.sh_type == SHT_RELA)
			return lerr(ld, -EINVAL, "section '%s': RELA relocations are not used by BPF", s->name);
		if (s->sh.sh_type != SHT_REL)
			continue;
		if (s->sh.sh_info >= ld->nsec)
			return lerr(ld, -EINVAL, "section '%s': bad target section", s->name);
		if (!ld->secs[s->sh.sh_info].is_code)
			continue;
		if (s->sh.sh_entsize != sizeof(Elf64_Rel) || s->size % sizeof(Elf64_Rel) || (!s->data && s->size))
			return lerr(ld, -EINVAL, "section '%s': bad relocation entries", s->name);
		if (s->sh.sh_link != (Elf64_Word)ld->symtab_shndx)
			return lerr(ld, -EINVAL, "section '%s': relocations use another symbol table", s->name);
		ld->secs[s->sh.sh_info].rel_shndx = (int)i;
	}
	return 0;
}

const char *gx_load_sym_name(struct gx_load *ld, const Elf64_Sym *sym)
{
	/* a section without a name (a fuzzed object: found by fuzz_bpf_loader)
	 * gives "?", never NULL: callers print it and pass it on */
	if (ELF64_ST_TYPE(sym->st_info) == STT_SECTION && sym->st_shndx < ld->nsec)
		return ld->secs[sym->st_shndx].name ? ld->secs[sym->st_shndx].name : "?";
	const char *n = elf_strptr(ld->elf, ld->strtab_shndx, sym->st_name);
	return n ? n : "?";
}

/* ------------------------------------------------------------------ BTF */

static int load_btf(struct gx_load *ld)
{
	if (ld->btf_shndx < 0)
		return 0;
	struct gx_lsec *s = &ld->secs[ld->btf_shndx];
	if (!s->data || s->size == 0 || s->size > UINT32_MAX)
		return lerr(ld, -EINVAL, "bad .BTF section");
	int err = gx_btf_parse(s->data, s->size, &ld->obj->btf);
	if (err)
		return lerr(ld, err, "invalid BTF: %s", strerror(-err));
	return 0;
}

/* __uint(name, N) is `int (*name)[N]`: a pointer to an array of N. */
static int btf_uint_attr(const struct gx_btf *btf, uint32_t type_id, uint32_t *val)
{
	const struct btf_type *t = gx_btf__type_by_id(btf, type_id);
	if (!t || BTF_INFO_KIND(t->info) != BTF_KIND_PTR)
		return -EINVAL;
	const struct btf_type *arr = gx_btf__type_by_id(btf, t->type);
	if (!arr || BTF_INFO_KIND(arr->info) != BTF_KIND_ARRAY)
		return -EINVAL;
	*val = ((const struct btf_array *)(arr + 1))->nelems;
	return 0;
}

/* __type(name, T) is `T *name`: returns T's id and size. */
static int btf_type_attr(const struct gx_btf *btf, uint32_t type_id, uint32_t *id, uint32_t *size)
{
	const struct btf_type *t = gx_btf__type_by_id(btf, type_id);
	if (!t || BTF_INFO_KIND(t->info) != BTF_KIND_PTR)
		return -EINVAL;
	int64_t sz = gx_btf__resolve_size(btf, t->type);
	if (sz <= 0 || sz > UINT32_MAX)
		return -EINVAL;
	*id = t->type;
	*size = (uint32_t)sz;
	return 0;
}

static const uint32_t device_map_types[] = { GX_BPF_MAP_HASH, GX_BPF_MAP_ARRAY, GX_BPF_MAP_PERSM_ARRAY,
					       GX_BPF_MAP_RINGBUF, GX_BPF_MAP_PERWARP_ARRAY };

/* Whether the caller runs maps of type t (struct_ops variables are not
 * declared in .maps). */
static bool map_type_known(const struct gx_load *ld, uint32_t t)
{
	const uint32_t *ts = ld->o.map_types ? ld->o.map_types : device_map_types;
	size_t n = ld->o.map_types ? ld->o.nr_map_types : GX_ARRAY_SIZE(device_map_types);
	for (size_t i = 0; i < n; i++)
		if (ts[i] == t)
			return true;
	return false;
}

static int check_map(struct gx_load *ld, struct gx_bpf_map *m)
{
	if (!map_type_known(ld, m->type) || m->type == GX_BPF_MAP_STRUCT_OPS)
		return lerr(ld, -EINVAL, "map '%s': unsupported map type %u", m->name, m->type);
	if (m->max_entries == 0)
		return lerr(ld, -EINVAL, "map '%s': max_entries is 0", m->name);
	if (m->type == GX_BPF_MAP_RINGBUF) {
		if (m->key_size || m->value_size)
			return lerr(ld, -EINVAL, "map '%s': ringbuf takes no key or value", m->name);
		if (m->max_entries < 4096 || m->max_entries > MAX_RINGBUF_SIZE ||
		    (m->max_entries & (m->max_entries - 1)))
			return lerr(ld, -EINVAL,
				    "map '%s': ringbuf size %u must be a power of 2 in [4096, %u]",
				    m->name, m->max_entries, MAX_RINGBUF_SIZE);
		return 0;
	}
	if (m->max_entries > MAX_ENTRIES_LIMIT)
		return lerr(ld, -E2BIG, "map '%s': max_entries %u over the limit %u", m->name,
			    m->max_entries, MAX_ENTRIES_LIMIT);
	if (m->value_size == 0 || m->value_size > MAX_VALUE_SIZE)
		return lerr(ld, -EINVAL, "map '%s': value size %u out of range [1, %u]", m->name,
			    m->value_size, MAX_VALUE_SIZE);
	if (m->type == GX_BPF_MAP_HASH || m->type == GX_BPF_MAP_LRU_HASH) {
		if (m->key_size == 0 || m->key_size > MAX_KEY_SIZE)
			return lerr(ld, -EINVAL, "map '%s': key size %u out of range [1, %u]", m->name,
				    m->key_size, MAX_KEY_SIZE);
	} else if (m->key_size != 4) {
		return lerr(ld, -EINVAL, "map '%s': array key size must be 4, not %u", m->name, m->key_size);
	}
	if ((uint64_t)m->value_size * m->max_entries > (1ull << 32))
		return lerr(ld, -E2BIG, "map '%s': %u x %u bytes is too large", m->name,
			    m->max_entries, m->value_size);
	if (m->map_flags & GDEV_F_RECORDS) {
		if (m->type != GX_BPF_MAP_ARRAY)
			return lerr(ld, -EINVAL, "map '%s': GDEV_F_RECORDS is for arrays (a record table)", m->name);
		/* the drainer copies the whole table each period */
		if ((uint64_t)m->value_size * m->max_entries > (16ull << 20))
			return lerr(ld, -E2BIG, "map '%s': a record table of %u x %u bytes is over 16 MiB", m->name,
				    m->max_entries, m->value_size);
		m->gx_flags |= GX_BPF_MAP_F_RECORDS;
	}
	return 0;
}

static int parse_map_def(struct gx_load *ld, struct gx_bpf_map *m)
{
	const struct gx_btf *btf = ld->obj->btf;
	int vid = gx_btf__find_by_name_kind(btf, m->name, BTF_KIND_VAR);
	if (vid <= 0)
		return lerr(ld, -EINVAL, "map '%s': no BTF for the definition", m->name);
	const struct btf_type *var = gx_btf__type_by_id(btf, (uint32_t)vid);
	const struct btf_type *st = gx_btf__type_by_id(btf, gx_btf__skip_mods(btf, var->type));
	if (!st || BTF_INFO_KIND(st->info) != BTF_KIND_STRUCT)
		return lerr(ld, -EINVAL, "map '%s': definition is not a struct", m->name);
	const struct btf_member *mb = (const void *)(st + 1);
	bool have_type = false;
	for (uint32_t i = 0; i < BTF_INFO_VLEN(st->info); i++, mb++) {
		const char *an = gx_btf__name_by_offset(btf, mb->name_off);
		uint32_t v = 0, id = 0;
		int err = 0;
		if (!strcmp(an, "type")) {
			err = btf_uint_attr(btf, mb->type, &v);
			m->type = v;
			have_type = true;
		} else if (!strcmp(an, "max_entries")) {
			err = btf_uint_attr(btf, mb->type, &m->max_entries);
		} else if (!strcmp(an, "map_flags")) {
			err = btf_uint_attr(btf, mb->type, &m->map_flags);
		} else if (!strcmp(an, "key_size")) {
			err = btf_uint_attr(btf, mb->type, &v);
			if (!err && m->btf_key_type_id && v != m->key_size)
				return lerr(ld, -EINVAL, "map '%s': key_size disagrees with key", m->name);
			m->key_size = v;
		} else if (!strcmp(an, "value_size")) {
			err = btf_uint_attr(btf, mb->type, &v);
			if (!err && m->btf_value_type_id && v != m->value_size)
				return lerr(ld, -EINVAL, "map '%s': value_size disagrees with value", m->name);
			m->value_size = v;
		} else if (!strcmp(an, "key")) {
			err = btf_type_attr(btf, mb->type, &id, &v);
			if (!err && m->key_size && v != m->key_size)
				return lerr(ld, -EINVAL, "map '%s': key_size disagrees with key", m->name);
			m->btf_key_type_id = id, m->key_size = v;
		} else if (!strcmp(an, "value")) {
			err = btf_type_attr(btf, mb->type, &id, &v);
			if (!err && m->value_size && v != m->value_size)
				return lerr(ld, -EINVAL, "map '%s': value_size disagrees with value", m->name);
			m->btf_value_type_id = id, m->value_size = v;
		} else if (!strcmp(an, "numa_node") || !strcmp(an, "pinning")) {
			err = btf_uint_attr(btf, mb->type, &v);
		} else {
			return lerr(ld, -EINVAL, "map '%s': unknown attribute '%s'", m->name, an);
		}
		if (err)
			return lerr(ld, -EINVAL, "map '%s': attribute '%s' is malformed", m->name, an);
	}
	if (!have_type)
		return lerr(ld, -EINVAL, "map '%s': no type", m->name);
	return check_map(ld, m);
}

static struct gx_bpf_map *new_map(struct gx_load *ld)
{
	struct gx_bpf_object *obj = ld->obj;
	if (obj->map_cnt >= MAX_MAPS) {
		lerr(ld, -E2BIG, "too many maps (limit %d)", MAX_MAPS);
		return NULL;
	}
	struct gx_bpf_map *nm = realloc(obj->maps, (obj->map_cnt + 1) * sizeof(*nm));
	if (!nm)
		return NULL;
	obj->maps = nm;
	struct gx_bpf_map *m = &nm[obj->map_cnt];
	memset(m, 0, sizeof(*m));
	m->obj = obj;
	m->idx = obj->map_cnt++;
	return m;
}

static int load_maps(struct gx_load *ld)
{
	if (ld->maps_shndx >= 0) {
		if (!ld->obj->btf)
			return lerr(ld, -EINVAL, "maps in .maps need BTF (compile with -g)");
		for (size_t i = 1; i < ld->nsyms; i++) {
			const Elf64_Sym *sym = &ld->syms[i];
			if (sym->st_shndx != ld->maps_shndx || ELF64_ST_TYPE(sym->st_info) == STT_SECTION)
				continue;
			if (ELF64_ST_BIND(sym->st_info) != STB_GLOBAL && ELF64_ST_BIND(sym->st_info) != STB_LOCAL)
				continue;
			if (ELF64_ST_TYPE(sym->st_info) != STT_OBJECT)
				continue;
			struct gx_bpf_map *m = new_map(ld);
			if (!m)
				return -ENOMEM;
			m->name = strdup(gx_load_sym_name(ld, sym));
			if (!m->name)
				return -ENOMEM;
			m->sec_idx = ld->maps_shndx;
			m->sym_off = sym->st_value;
			if (sym->st_value >= ld->secs[ld->maps_shndx].size)
				return lerr(ld, -EINVAL, "map '%s': symbol outside .maps", m->name);
			int err = parse_map_def(ld, m);
			if (err)
				return err;
		}
	}
	for (size_t i = 1; i < ld->nsec; i++) {
		struct gx_lsec *s = &ld->secs[i];
		if (!s->data_kind || s->size == 0)
			continue;
		if (s->size > MAX_DATA_SIZE)
			return lerr(ld, -E2BIG, "section '%s': %zu bytes of global data is too much",
				    s->name, s->size);
		struct gx_bpf_map *m = new_map(ld);
		if (!m)
			return -ENOMEM;
		m->name = strdup(s->name);
		m->init = calloc(1, s->size);
		if (!m->name || !m->init)
			return -ENOMEM;
		if (s->data_kind != 3 && s->data)
			memcpy(m->init, s->data, s->size);
		m->type = GX_BPF_MAP_ARRAY;
		m->key_size = 4;
		m->value_size = (uint32_t)s->size;
		m->max_entries = 1;
		m->gx_flags = GX_BPF_MAP_F_INTERNAL | (s->data_kind == 2 ? GX_BPF_MAP_F_RDONLY : 0);
		m->sec_idx = (int)i;
	}
	return 0;
}

/* Global variables by name (knobs): clang leaves DATASEC offsets 0 in the
 * BTF of objects (libbpf fixes them from the symbol table), so the symbol
 * table is the source. */
static int load_vars(struct gx_load *ld)
{
	struct gx_bpf_object *obj = ld->obj;
	for (size_t i = 1; i < ld->nsyms; i++) {
		const Elf64_Sym *sym = &ld->syms[i];
		if (ELF64_ST_TYPE(sym->st_info) != STT_OBJECT || sym->st_shndx >= ld->nsec ||
		    !ld->secs[sym->st_shndx].data_kind)
			continue;
		size_t mi = obj->map_cnt;
		for (size_t k = 0; k < obj->map_cnt; k++)
			if ((obj->maps[k].gx_flags & GX_BPF_MAP_F_INTERNAL) &&
			    obj->maps[k].sec_idx == (int)sym->st_shndx)
				mi = k;
		if (mi == obj->map_cnt || sym->st_value > obj->maps[mi].value_size ||
		    sym->st_size > obj->maps[mi].value_size - sym->st_value)
			continue;
		struct gx_bpf_var *nv = realloc(obj->vars, (obj->var_cnt + 1) * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		obj->vars = nv;
		nv[obj->var_cnt] = (struct gx_bpf_var){ .name = strdup(gx_load_sym_name(ld, sym)), .map = mi,
							.off = (uint32_t)sym->st_value,
							.size = (uint32_t)sym->st_size };
		if (!nv[obj->var_cnt++].name)
			return -ENOMEM;
	}
	return 0;
}

/* ------------------------------------------------------------ functions */

static int cmp_func(const void *a, const void *b)
{
	const struct gx_lfunc *x = a, *y = b;
	if (x->shndx != y->shndx)
		return x->shndx < y->shndx ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

static int load_funcs(struct gx_load *ld)
{
	for (size_t i = 1; i < ld->nsyms; i++) {
		const Elf64_Sym *sym = &ld->syms[i];
		if (ELF64_ST_TYPE(sym->st_info) != STT_FUNC)
			continue;
		if (sym->st_shndx == SHN_UNDEF && ld->o.resolve_extern)
			continue; /* a kfunc: its calls are resolved in reloc.c */
		if (sym->st_shndx == SHN_UNDEF)
			return lerr(ld, -EINVAL, "function '%s' is undefined (extern functions are not supported)",
				    gx_load_sym_name(ld, sym));
		if (sym->st_shndx >= ld->nsec || !ld->secs[sym->st_shndx].is_code)
			continue;
		struct gx_lsec *s = &ld->secs[sym->st_shndx];
		const char *name = gx_load_sym_name(ld, sym);
		if (sym->st_value % 8 || sym->st_size % 8 || sym->st_size == 0 ||
		    sym->st_value > s->size || sym->st_size > s->size - sym->st_value)
			return lerr(ld, -EINVAL, "function '%s': bad symbol bounds in '%s'", name, s->name);
		if (ld->nfuncs >= 4 * MAX_PROGS)
			return lerr(ld, -E2BIG, "too many functions");
		struct gx_lfunc *nf = realloc(ld->funcs, (ld->nfuncs + 1) * sizeof(*nf));
		if (!nf)
			return -ENOMEM;
		ld->funcs = nf;
		nf[ld->nfuncs++] = (struct gx_lfunc){
			.name = name,
			.shndx = sym->st_shndx,
			.start = sym->st_value / 8,
			.cnt = sym->st_size / 8,
			.global = ELF64_ST_BIND(sym->st_info) == STB_GLOBAL,
		};
	}
	if (ld->nfuncs > 1)
		qsort(ld->funcs, ld->nfuncs, sizeof(*ld->funcs), cmp_func);
	for (size_t i = 1; i < ld->nfuncs; i++) {
		struct gx_lfunc *a = &ld->funcs[i - 1], *b = &ld->funcs[i];
		if (a->shndx == b->shndx && a->start + a->cnt > b->start)
			return lerr(ld, -EINVAL, "functions '%s' and '%s' overlap", a->name, b->name);
	}
	return 0;
}

static const struct gx_bpf_sec_def *find_sec_def(const struct gx_load *ld, const char *name)
{
	if (!ld->o.sec_defs)
		return gx_bpf_find_section(name);
	for (size_t i = ld->o.nr_sec_defs; i-- > 0;)
		if (gx_bpf_sec_match(&ld->o.sec_defs[i], name))
			return &ld->o.sec_defs[i];
	return NULL;
}

static int load_progs(struct gx_load *ld)
{
	struct gx_bpf_object *obj = ld->obj;
	for (size_t i = 1; i < ld->nsec; i++) {
		struct gx_lsec *s = &ld->secs[i];
		if (!s->is_code || s->size == 0 || !strcmp(s->name, ".text"))
			continue;
		if (!find_sec_def(ld, s->name))
			return lerr(ld, -EINVAL, "section '%s': unknown program section", s->name);
	}
	for (size_t f = 0; f < ld->nfuncs; f++) {
		struct gx_lfunc *fn = &ld->funcs[f];
		const char *sname = ld->secs[fn->shndx].name;
		const struct gx_bpf_sec_def *def = find_sec_def(ld, sname);
		if (!def)
			continue;
		if (!fn->global)
			continue; /* static helpers in a program section: subprograms */
		if (obj->prog_cnt >= MAX_PROGS)
			return lerr(ld, -E2BIG, "too many programs");
		struct gx_bpf_prog *np = realloc(obj->progs, (obj->prog_cnt + 1) * sizeof(*np));
		if (!np)
			return -ENOMEM;
		obj->progs = np;
		struct gx_bpf_prog *p = &np[obj->prog_cnt++];
		memset(p, 0, sizeof(*p));
		p->obj = obj;
		p->name = strdup(fn->name);
		p->sec_name = strdup(sname);
		if (!p->name || !p->sec_name)
			return -ENOMEM;
		p->sec = def;
		if (def->flags & GX_BPF_SEC_SUFFIX)
			p->attach_target = p->sec_name + strlen(def->prefix);
		p->sec_idx = fn->shndx;
		p->sec_insn_off = fn->start;
		p->sec_insn_cnt = fn->cnt;
		fn->prog = true;
	}
	return 0;
}

/* ----------------------------------------------------------- struct_ops */

static const Elf64_Sym *find_object_sym(struct gx_load *ld, size_t shndx, const char *name)
{
	for (size_t i = 1; i < ld->nsyms; i++)
		if (ld->syms[i].st_shndx == shndx && ELF64_ST_TYPE(ld->syms[i].st_info) == STT_OBJECT &&
		    !strcmp(gx_load_sym_name(ld, &ld->syms[i]), name))
			return &ld->syms[i];
	return NULL;
}

/* Function pointers of the struct_ops variables in section shndx: its
 * relocations, each against a program's function at an 8-byte slot. */
static int struct_ops_relocs(struct gx_load *ld, size_t shndx, size_t first_map)
{
	struct gx_bpf_object *obj = ld->obj;
	for (size_t r = 1; r < ld->nsec; r++) {
		struct gx_lsec *rs = &ld->secs[r];
		if (rs->sh.sh_type != SHT_REL || rs->sh.sh_info != shndx)
			continue;
		if (rs->sh.sh_entsize != sizeof(Elf64_Rel) || rs->size % sizeof(Elf64_Rel) || (!rs->data && rs->size) ||
		    rs->sh.sh_link != (Elf64_Word)ld->symtab_shndx)
			return lerr(ld, -EINVAL, "section '%s': bad relocation entries", rs->name);
		const Elf64_Rel *rels = rs->data;
		for (size_t i = 0; i < rs->size / sizeof(Elf64_Rel); i++) {
			uint64_t at = rels[i].r_offset;
			size_t symi = ELF64_R_SYM(rels[i].r_info), mi = first_map;
			while (mi < obj->map_cnt && (at < obj->maps[mi].sym_off ||
						     at - obj->maps[mi].sym_off >= obj->maps[mi].value_size))
				mi++;
			if (mi == obj->map_cnt || symi == 0 || symi >= ld->nsyms)
				return lerr(ld, -EINVAL, "section '%s': relocation %zu outside its variables", ld->secs[shndx].name, i);
			struct gx_bpf_map *m = &obj->maps[mi];
			const Elf64_Sym *sym = &ld->syms[symi];
			uint64_t off = at - m->sym_off;
			size_t p = 0;
			while (p < obj->prog_cnt && (obj->progs[p].sec_idx != (int)sym->st_shndx ||
						     obj->progs[p].sec_insn_off * 8 != sym->st_value))
				p++;
			if (ELF64_ST_TYPE(sym->st_info) != STT_FUNC || p == obj->prog_cnt || off % 8)
				return lerr(ld, -EINVAL, "struct_ops '%s': offset %llu: not a program's address ('%s')",
					    m->name, (unsigned long long)off, gx_load_sym_name(ld, sym));
			m->st_prog[off / 8] = (int32_t)p;
		}
	}
	return 0;
}

/* Host policies: each variable of .struct_ops / .struct_ops.link becomes a
 * map of its bytes whose function pointers name programs, as libbpf's
 * struct_ops maps (only when the caller runs them: open opts' map_types). */
static int load_struct_ops(struct gx_load *ld)
{
	struct gx_bpf_object *obj = ld->obj;
	if (!map_type_known(ld, GX_BPF_MAP_STRUCT_OPS))
		return 0;
	for (size_t i = 1; i < ld->nsec; i++) {
		struct gx_lsec *s = &ld->secs[i];
		if (strcmp(s->name, ".struct_ops") && strcmp(s->name, ".struct_ops.link"))
			continue;
		int sec = gx_btf__find_by_name_kind(obj->btf, s->name, BTF_KIND_DATASEC);
		if (!s->data || sec <= 0)
			return lerr(ld, -EINVAL, "section '%s': no data or no BTF (compile with -g)", s->name);
		size_t first = obj->map_cnt;
		const char *vn;
		uint32_t vt;
		int err;
		for (uint32_t k = 0; !(err = gx_btf_datasec_var(obj->btf, (uint32_t)sec, k, &vn, &vt)); k++) {
			const Elf64_Sym *sym = find_object_sym(ld, i, vn);
			int64_t size = gx_btf__resolve_size(obj->btf, vt);
			if (!sym || size <= 0 || sym->st_value > s->size || (uint64_t)size > s->size - sym->st_value)
				return lerr(ld, -EINVAL, "struct_ops '%s': no symbol or bad extent in '%s'", vn, s->name);
			struct gx_bpf_map *m = new_map(ld);
			if (!m)
				return -ENOMEM;
			m->name = strdup(vn);
			m->init = malloc((size_t)size);
			m->st_prog = malloc((size_t)size / 8 * sizeof(*m->st_prog) + 1);
			if (!m->name || !m->init || !m->st_prog)
				return -ENOMEM;
			memcpy(m->init, (const char *)s->data + sym->st_value, (size_t)size);
			for (int64_t j = 0; j < size / 8; j++)
				m->st_prog[j] = -1;
			m->type = GX_BPF_MAP_STRUCT_OPS;
			m->key_size = 4;
			m->value_size = (uint32_t)size;
			m->max_entries = 1;
			m->btf_value_type_id = gx_btf__skip_mods(obj->btf, vt);
			m->sec_idx = (int)i;
			m->sym_off = sym->st_value;
		}
		if (err != -ENOENT)
			return lerr(ld, -EINVAL, "section '%s': bad BTF variable", s->name);
		err = struct_ops_relocs(ld, i, first);
		if (err)
			return err;
	}
	return 0;
}

static char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	size_t n = strlen(b);
	if (n > 6 && !strcmp(b + n - 6, ".bpf.o"))
		n -= 6;
	else if (n > 2 && !strcmp(b + n - 2, ".o"))
		n -= 2;
	return strndup(b, n);
}

static struct gx_bpf_object *open_mem(const void *buf, size_t len, const char *name,
				     const struct gx_bpf_open_opts *opts)
{
	struct gx_load ld = { 0 };
	int err = 0;
	ld.name = name;
	ld.o = *opts;
	ld.len = len;
	if (!buf || len < sizeof(Elf64_Ehdr)) {
		lerr(&ld, -EINVAL, "not an ELF file (%zu bytes)", len);
		errno = EINVAL;
		return NULL;
	}
	ld.obj = calloc(1, sizeof(*ld.obj));
	ld.buf = malloc(len);
	if (!ld.obj || !ld.buf || !(ld.obj->name = strdup(name))) {
		err = -ENOMEM;
		goto out;
	}
	memcpy(ld.buf, buf, len);
	if (elf_version(EV_CURRENT) == EV_NONE) {
		err = lerr(&ld, -EINVAL, "libelf: %s", elf_errmsg(-1));
		goto out;
	}
	ld.elf = elf_memory(ld.buf, len);
	if (!ld.elf || elf_kind(ld.elf) != ELF_K_ELF) {
		err = lerr(&ld, -EINVAL, "not an ELF file");
		goto out;
	}
	err = scan_sections(&ld);
	err = err ?: load_btf(&ld);
	err = err ?: load_maps(&ld);
	err = err ?: load_vars(&ld);
	err = err ?: load_funcs(&ld);
	err = err ?: load_progs(&ld);
	err = err ?: load_struct_ops(&ld);
	err = err ?: gx_load_relocate(&ld);
	if (!err && ld.obj->prog_cnt == 0)
		err = lerr(&ld, -ENOENT, "no programs (functions in %s sections)",
			   ld.o.sec_defs && ld.o.nr_sec_defs ? ld.o.sec_defs[0].prefix : "gdev/...");
out:
	if (ld.elf)
		elf_end(ld.elf);
	free(ld.buf);
	for (size_t i = 0; ld.secs && i < ld.nsec; i++)
		free(ld.secs[i].rel_at);
	free(ld.secs);
	free(ld.funcs);
	if (err) {
		gx_bpf_object__close(ld.obj);
		errno = -err;
		return NULL;
	}
	return ld.obj;
}

/* The caller's options, completed with zeros (unknown non-zero tail: -EINVAL). */
static int copy_opts(struct gx_bpf_open_opts *o, const struct gx_bpf_open_opts *opts)
{
	memset(o, 0, sizeof(*o));
	if (opts && (opts->sz < sizeof(size_t) || gx_opts_copy(o, sizeof(*o), opts, opts->sz)))
		return -EINVAL;
	o->sz = sizeof(*o);
	return 0;
}

GX_EXPORT struct gx_bpf_object *gx_bpf_object__open_mem(const void *buf, size_t len,
							const struct gx_bpf_open_opts *opts)
{
	struct gx_bpf_open_opts o;
	if (copy_opts(&o, opts)) {
		errno = EINVAL;
		return NULL;
	}
	return open_mem(buf, len, o.object_name ? o.object_name : "mem", &o);
}

GX_EXPORT struct gx_bpf_object *gx_bpf_object__open_file(const char *path,
							 const struct gx_bpf_open_opts *opts)
{
	struct gx_bpf_open_opts o;
	char *buf = NULL;
	size_t len = 0;
	if (!path || copy_opts(&o, opts)) {
		errno = EINVAL;
		return NULL;
	}
	int err = gx_read_file(path, &buf, &len, 64u << 20);
	if (err) {
		struct gx_load ld = { .name = path, .o = o };
		lerr(&ld, err, "%s", strerror(-err));
		errno = -err;
		return NULL;
	}
	char *bn = o.object_name ? strdup(o.object_name) : base_name(path);
	struct gx_bpf_object *obj = bn ? open_mem(buf, len, bn, &o) : NULL;
	int e = errno;
	free(bn);
	free(buf);
	errno = bn ? e : ENOMEM;
	return obj;
}
