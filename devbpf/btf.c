/* btf.c — the little of BTF that loading a policy object needs, read
 * without libbpf: the one BTF reader of device and host policies (the
 * loader, the host executor's struct_ops checks, the verifier corpus).
 *
 * Why not libbpf: the shim loads host policies through this loader and must
 * run on machines without libbpf.so (the H200 test machine has none, and
 * Debian's libbpf.a is not PIC). Needed: DATASEC variables (map
 * definitions in .maps, the struct_ops variable), struct members and
 * function prototypes, names, type sizes and the __uint/__type encodings of
 * BTF-defined maps. The input is untrusted: the header, every type's extent,
 * name and the ids it refers to are checked once at parse time, and every
 * getter checks its id or offset again. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "devbpf/btf_internal.h"
#include "common/gx_util.h"

#define MAX_DEPTH 32

static const struct btf_type *type_at(const struct gx_btf *b, uint32_t id)
{
	return b && id && id < b->ntypes ? (const struct btf_type *)(b->types + b->off[id]) : NULL;
}

GX_EXPORT uint32_t gx_btf__type_cnt(const struct gx_btf *b)
{
	return b ? b->ntypes : 0;
}
GX_EXPORT const struct btf_type *gx_btf__type_by_id(const struct gx_btf *b, uint32_t id)
{
	return type_at(b, id);
}

GX_EXPORT const char *gx_btf__name_by_offset(const struct gx_btf *b, uint32_t off)
{
	if (!b || off >= b->str_len)
		return "";
	const char *s = b->strs + off;
	return memchr(s, 0, b->str_len - off) ? s : "";
}

/* Bytes after struct btf_type, or -1 for an unknown kind. */
static size_t extra(const struct btf_type *t)
{
	uint32_t vlen = BTF_INFO_VLEN(t->info);
	switch (BTF_INFO_KIND(t->info)) {
	case BTF_KIND_INT:
		return 4;
	case BTF_KIND_ARRAY:
		return sizeof(struct btf_array);
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION:
		return vlen * sizeof(struct btf_member);
	case BTF_KIND_ENUM:
		return vlen * sizeof(struct btf_enum);
	case BTF_KIND_FUNC_PROTO:
		return vlen * sizeof(struct btf_param);
	case BTF_KIND_VAR:
		return sizeof(struct btf_var);
	case BTF_KIND_DATASEC:
		return vlen * sizeof(struct btf_var_secinfo);
	case BTF_KIND_DECL_TAG:
		return 4;
	case BTF_KIND_ENUM64:
		return vlen * 12;
	case BTF_KIND_PTR:
	case BTF_KIND_FWD:
	case BTF_KIND_TYPEDEF:
	case BTF_KIND_VOLATILE:
	case BTF_KIND_CONST:
	case BTF_KIND_RESTRICT:
	case BTF_KIND_FUNC:
	case BTF_KIND_FLOAT:
	case BTF_KIND_TYPE_TAG:
		return 0;
	}
	return (size_t)-1;
}

static bool name_ok(const struct gx_btf *b, uint32_t off)
{
	return off < b->str_len;
}

/* The names and type ids a type refers to exist. */
static bool type_ok(const struct gx_btf *b, const struct btf_type *t)
{
	uint32_t vlen = BTF_INFO_VLEN(t->info), n = b->ntypes;
	if (!name_ok(b, t->name_off))
		return false;
	switch (BTF_INFO_KIND(t->info)) {
	case BTF_KIND_PTR:
	case BTF_KIND_TYPEDEF:
	case BTF_KIND_VOLATILE:
	case BTF_KIND_CONST:
	case BTF_KIND_RESTRICT:
	case BTF_KIND_FUNC:
	case BTF_KIND_VAR:
	case BTF_KIND_DECL_TAG:
	case BTF_KIND_TYPE_TAG:
		return t->type < n;
	case BTF_KIND_ARRAY: {
		const struct btf_array *a = (const void *)(t + 1);
		return a->type < n && a->index_type < n;
	}
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION: {
		const struct btf_member *m = (const void *)(t + 1);
		for (uint32_t i = 0; i < vlen; i++)
			if (!name_ok(b, m[i].name_off) || m[i].type >= n)
				return false;
		return true;
	}
	case BTF_KIND_FUNC_PROTO: {
		const struct btf_param *p = (const void *)(t + 1);
		for (uint32_t i = 0; i < vlen; i++)
			if (!name_ok(b, p[i].name_off) || p[i].type >= n)
				return false;
		return t->type < n;
	}
	case BTF_KIND_DATASEC: {
		const struct btf_var_secinfo *v = (const void *)(t + 1);
		for (uint32_t i = 0; i < vlen; i++)
			if (v[i].type >= n)
				return false;
		return true;
	}
	}
	return true;
}

int gx_btf_parse(const void *data, size_t len, struct gx_btf **out)
{
	struct btf_header h;
	*out = NULL;
	if (!data || len < sizeof(h) || len > UINT32_MAX)
		return -EINVAL;
	memcpy(&h, data, sizeof(h));
	if (h.magic != BTF_MAGIC || h.version != BTF_VERSION || h.hdr_len < sizeof(h) || h.hdr_len > len)
		return -EINVAL;
	uint64_t tend = (uint64_t)h.hdr_len + h.type_off + h.type_len;
	uint64_t send = (uint64_t)h.hdr_len + h.str_off + h.str_len;
	if (tend > len || send > len || !h.str_len || (h.hdr_len + h.type_off) % 4 || h.type_len % 4)
		return -EINVAL;
	struct gx_btf *b = calloc(1, sizeof(*b));
	size_t cap = 64, n = 1;
	if (!b || !(b->raw = malloc(len)) || !(b->off = malloc(cap * sizeof(*b->off)))) {
		gx_btf_free(b);
		return -ENOMEM;
	}
	memcpy(b->raw, data, len); /* malloc'ed: the types are 4-byte aligned */
	b->types = b->raw + h.hdr_len + h.type_off;
	b->types_len = h.type_len;
	b->strs = (const char *)b->raw + h.hdr_len + h.str_off;
	b->str_len = h.str_len;
	b->off[0] = 0;
	int err = -EINVAL;
	if (b->strs[0] || b->strs[b->str_len - 1])
		goto bad;
	for (size_t p = 0; p < b->types_len;) {
		if (p + sizeof(struct btf_type) > b->types_len)
			goto bad;
		const struct btf_type *t = (const void *)(b->types + p);
		size_t x = extra(t);
		if (x == (size_t)-1 || p + sizeof(*t) + x > b->types_len)
			goto bad;
		if (n == cap) {
			uint32_t *no = realloc(b->off, 2 * cap * sizeof(*no));
			if (!no) {
				err = -ENOMEM;
				goto bad;
			}
			b->off = no, cap *= 2;
		}
		b->off[n++] = (uint32_t)p;
		p += sizeof(*t) + x;
	}
	b->ntypes = (uint32_t)n;
	for (uint32_t id = 1; id < b->ntypes; id++)
		if (!type_ok(b, type_at(b, id)))
			goto bad;
	*out = b;
	return 0;
bad:
	gx_btf_free(b);
	return err;
}

void gx_btf_free(struct gx_btf *b)
{
	if (!b)
		return;
	free(b->off);
	free(b->raw);
	free(b);
}

/* Skip typedef/const/volatile/restrict/type tags. */
GX_EXPORT uint32_t gx_btf__skip_mods(const struct gx_btf *b, uint32_t id)
{
	for (int i = 0; i < MAX_DEPTH; i++) {
		const struct btf_type *t = type_at(b, id);
		if (!t)
			return 0;
		switch (BTF_INFO_KIND(t->info)) {
		case BTF_KIND_TYPEDEF:
		case BTF_KIND_VOLATILE:
		case BTF_KIND_CONST:
		case BTF_KIND_RESTRICT:
		case BTF_KIND_TYPE_TAG:
			id = t->type;
			continue;
		}
		return id;
	}
	return 0;
}

/* As libbpf's btf__resolve_size: at most UINT32_MAX bytes. */
static int64_t resolve_size(const struct gx_btf *b, uint32_t id, int depth)
{
	for (; depth < MAX_DEPTH; depth++) {
		const struct btf_type *t = type_at(b, id);
		if (!t)
			return -EINVAL;
		switch (BTF_INFO_KIND(t->info)) {
		case BTF_KIND_INT:
		case BTF_KIND_STRUCT:
		case BTF_KIND_UNION:
		case BTF_KIND_ENUM:
		case BTF_KIND_FLOAT:
		case BTF_KIND_ENUM64:
		case BTF_KIND_DATASEC:
			return t->size;
		case BTF_KIND_PTR:
			return 8;
		case BTF_KIND_TYPEDEF:
		case BTF_KIND_VOLATILE:
		case BTF_KIND_CONST:
		case BTF_KIND_RESTRICT:
		case BTF_KIND_TYPE_TAG:
		case BTF_KIND_VAR:
			id = t->type;
			continue;
		case BTF_KIND_ARRAY: {
			const struct btf_array *a = (const void *)(t + 1);
			int64_t es = resolve_size(b, a->type, depth + 1);
			if (es < 0)
				return es;
			if (a->nelems && es > UINT32_MAX / a->nelems)
				return -E2BIG;
			return es * (int64_t)a->nelems;
		}
		default:
			return -EINVAL;
		}
	}
	return -EINVAL;
}

GX_EXPORT int64_t gx_btf__resolve_size(const struct gx_btf *b, uint32_t id)
{
	return resolve_size(b, id, 0);
}

GX_EXPORT int gx_btf__find_by_name_kind(const struct gx_btf *b, const char *name, uint32_t kind)
{
	for (uint32_t id = 1; name && id < gx_btf__type_cnt(b); id++) {
		const struct btf_type *t = type_at(b, id);
		if (BTF_INFO_KIND(t->info) == kind && !strcmp(gx_btf__name_by_offset(b, t->name_off), name))
			return (int)id;
	}
	return -ENOENT;
}

int gx_btf_datasec_var(const struct gx_btf *b, uint32_t sec, uint32_t i, const char **name, uint32_t *type)
{
	const struct btf_type *t = type_at(b, sec);
	if (!t || BTF_INFO_KIND(t->info) != BTF_KIND_DATASEC || i >= BTF_INFO_VLEN(t->info))
		return -ENOENT;
	const struct btf_var_secinfo *vs = (const void *)(t + 1);
	const struct btf_type *v = type_at(b, vs[i].type);
	if (!v || BTF_INFO_KIND(v->info) != BTF_KIND_VAR)
		return -EINVAL;
	*name = gx_btf__name_by_offset(b, v->name_off);
	*type = v->type;
	return 0;
}
