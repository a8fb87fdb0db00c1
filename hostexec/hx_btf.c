/* hx_btf.c — the little of BTF the executor needs, read without libbpf.
 *
 * Why not libbpf: the executor lives in the shim's plugin, which must run
 * on machines without libbpf.so (the H200 test machine has none, and
 * Debian's libbpf.a is not PIC). Needed: DATASEC variables (map
 * definitions in .maps, knobs and stats in .rodata/.bss/.data, the
 * struct_ops variable in .struct_ops.link), struct names, type sizes and
 * the __uint/__type encodings of BTF-defined maps. Every offset is checked
 * against the buffer. */
#include <errno.h>
#include <linux/btf.h>
#include <stdlib.h>
#include <string.h>
#include "hostexec/hx_btf.h"

static const struct btf_type *type_at(const struct hx_btf *b, uint32_t id)
{
	return id && id < b->ntypes ? (const struct btf_type *)(b->types + b->off[id]) : NULL;
}

const struct btf_type *hx_btf_type(const struct hx_btf *b, uint32_t id) { return type_at(b, id); }

const char *hx_btf_name(const struct hx_btf *b, uint32_t off)
{
	if (off >= b->str_len)
		return "";
	const char *s = b->strs + off;
	return memchr(s, 0, b->str_len - off) ? s : "";
}

static size_t extra(const struct btf_type *t)
{
	uint32_t vlen = BTF_INFO_VLEN(t->info);
	switch (BTF_INFO_KIND(t->info)) {
	case BTF_KIND_INT: return 4;
	case BTF_KIND_ARRAY: return sizeof(struct btf_array);
	case BTF_KIND_STRUCT: case BTF_KIND_UNION: return vlen * sizeof(struct btf_member);
	case BTF_KIND_ENUM: return vlen * sizeof(struct btf_enum);
	case BTF_KIND_FUNC_PROTO: return vlen * sizeof(struct btf_param);
	case BTF_KIND_VAR: return sizeof(struct btf_var);
	case BTF_KIND_DATASEC: return vlen * sizeof(struct btf_var_secinfo);
	case BTF_KIND_DECL_TAG: return 4;
	case 19 /* ENUM64 */: return vlen * 12;
	case BTF_KIND_PTR: case BTF_KIND_FWD: case BTF_KIND_TYPEDEF: case BTF_KIND_VOLATILE:
	case BTF_KIND_CONST: case BTF_KIND_RESTRICT: case BTF_KIND_FUNC: case BTF_KIND_FLOAT:
	case 18 /* TYPE_TAG */:
		return 0;
	}
	return (size_t)-1;
}

int hx_btf_parse(struct hx_btf *b, const void *data, size_t len)
{
	const struct btf_header *h = data;
	memset(b, 0, sizeof(*b));
	if (len < sizeof(*h) || h->magic != BTF_MAGIC || h->hdr_len < sizeof(*h) || h->hdr_len > len)
		return -EINVAL;
	uint64_t tend = (uint64_t)h->hdr_len + h->type_off + h->type_len;
	uint64_t send = (uint64_t)h->hdr_len + h->str_off + h->str_len;
	if (tend > len || send > len || !h->str_len)
		return -EINVAL;
	b->types = (const uint8_t *)data + h->hdr_len + h->type_off;
	b->types_len = h->type_len;
	b->strs = (const char *)data + h->hdr_len + h->str_off;
	b->str_len = h->str_len;
	size_t cap = 64, n = 1;
	b->off = malloc(cap * sizeof(*b->off));
	if (!b->off)
		return -ENOMEM;
	b->off[0] = 0;
	for (size_t p = 0; p < b->types_len;) {
		if (p + sizeof(struct btf_type) > b->types_len)
			goto bad;
		const struct btf_type *t = (const void *)(b->types + p);
		size_t x = extra(t);
		if (x == (size_t)-1 || p + sizeof(*t) + x > b->types_len)
			goto bad;
		if (n == cap) {
			cap *= 2;
			uint32_t *no = realloc(b->off, cap * sizeof(*no));
			if (!no) {
				free(b->off);
				b->off = NULL;
				return -ENOMEM;
			}
			b->off = no;
		}
		b->off[n++] = (uint32_t)p;
		p += sizeof(*t) + x;
	}
	b->ntypes = (uint32_t)n;
	return 0;
bad:
	free(b->off);
	b->off = NULL;
	return -EINVAL;
}

void hx_btf_free(struct hx_btf *b)
{
	free(b->off);
	memset(b, 0, sizeof(*b));
}

/* Skip typedef/const/volatile/restrict/type tags. */
uint32_t hx_btf_skip_mods(const struct hx_btf *b, uint32_t id)
{
	for (int i = 0; i < 32; i++) {
		const struct btf_type *t = type_at(b, id);
		if (!t)
			return 0;
		switch (BTF_INFO_KIND(t->info)) {
		case BTF_KIND_TYPEDEF: case BTF_KIND_VOLATILE: case BTF_KIND_CONST:
		case BTF_KIND_RESTRICT: case 18:
			id = t->type;
			continue;
		}
		return id;
	}
	return 0;
}

int64_t hx_btf_size(const struct hx_btf *b, uint32_t id)
{
	for (int depth = 0; depth < 32; depth++) {
		id = hx_btf_skip_mods(b, id);
		const struct btf_type *t = type_at(b, id);
		if (!t)
			return -EINVAL;
		switch (BTF_INFO_KIND(t->info)) {
		case BTF_KIND_INT: case BTF_KIND_STRUCT: case BTF_KIND_UNION: case BTF_KIND_ENUM:
		case BTF_KIND_FLOAT: case 19: case BTF_KIND_DATASEC:
			return t->size;
		case BTF_KIND_PTR:
			return 8;
		case BTF_KIND_ARRAY: {
			const struct btf_array *a = (const void *)(t + 1);
			int64_t es = hx_btf_size(b, a->type);
			return es < 0 ? es : es * (int64_t)a->nelems;
		}
		default:
			return -EINVAL;
		}
	}
	return -EINVAL;
}

uint32_t hx_btf_find_datasec(const struct hx_btf *b, const char *name)
{
	for (uint32_t id = 1; id < b->ntypes; id++) {
		const struct btf_type *t = type_at(b, id);
		if (BTF_INFO_KIND(t->info) == BTF_KIND_DATASEC && !strcmp(hx_btf_name(b, t->name_off), name))
			return id;
	}
	return 0;
}

int hx_btf_datasec_var(const struct hx_btf *b, uint32_t sec, int i, const char **name, uint32_t *type,
		       uint32_t *offset, uint32_t *size)
{
	const struct btf_type *t = type_at(b, sec);
	if (!t || i < 0 || (uint32_t)i >= BTF_INFO_VLEN(t->info))
		return -ENOENT;
	const struct btf_var_secinfo *vs = (const void *)(t + 1);
	const struct btf_type *v = type_at(b, vs[i].type);
	if (!v || BTF_INFO_KIND(v->info) != BTF_KIND_VAR)
		return -EINVAL;
	*name = hx_btf_name(b, v->name_off);
	*type = v->type;
	*offset = vs[i].offset;
	*size = vs[i].size;
	return 0;
}

/* BTF-defined map: struct { int (*type)[N]; typeof(K) *key; ... }. */
int hx_btf_map_def(const struct hx_btf *b, uint32_t type, struct hx_btf_map *m)
{
	const struct btf_type *t = type_at(b, hx_btf_skip_mods(b, type));
	memset(m, 0, sizeof(*m));
	if (!t || BTF_INFO_KIND(t->info) != BTF_KIND_STRUCT)
		return -EINVAL;
	const struct btf_member *mem = (const void *)(t + 1);
	for (uint32_t i = 0; i < BTF_INFO_VLEN(t->info); i++) {
		const char *mn = hx_btf_name(b, mem[i].name_off);
		const struct btf_type *pt = type_at(b, hx_btf_skip_mods(b, mem[i].type));
		if (!pt || BTF_INFO_KIND(pt->info) != BTF_KIND_PTR)
			return -EINVAL;
		const struct btf_type *at = type_at(b, hx_btf_skip_mods(b, pt->type));
		uint32_t val = 0;
		if (at && BTF_INFO_KIND(at->info) == BTF_KIND_ARRAY)
			val = ((const struct btf_array *)(at + 1))->nelems;
		if (!strcmp(mn, "type")) m->type = val;
		else if (!strcmp(mn, "max_entries")) m->max_entries = val;
		else if (!strcmp(mn, "map_flags")) m->map_flags = val;
		else if (!strcmp(mn, "key_size")) m->key_size = val;
		else if (!strcmp(mn, "value_size")) m->value_size = val;
		else if (!strcmp(mn, "key") || !strcmp(mn, "value")) {
			int64_t s = hx_btf_size(b, pt->type);
			if (s <= 0 || s > 65536)
				return -EINVAL;
			if (mn[0] == 'k') m->key_size = (uint32_t)s;
			else m->value_size = (uint32_t)s;
		} else {
			return -EOPNOTSUPP; /* pinning, inner maps, ... */
		}
	}
	return 0;
}
