/* object.c — getters and life cycle of gx_bpf_object / prog / map (the
 * parsing lives in loader.c, relocation in reloc.c). */
#include <stdlib.h>
#include <string.h>

#include "devbpf/bpf_internal.h"
#include "devbpf/btf_internal.h"
#include "common/gx_util.h"

GX_EXPORT void gx_bpf_object__close(struct gx_bpf_object *obj)
{
	if (!obj)
		return;
	for (size_t i = 0; i < obj->prog_cnt; i++) {
		struct gx_bpf_prog *p = &obj->progs[i];
		gx_bpf_prog_clear_verdict(p);
		free(p->name);
		free(p->sec_name);
		free(p->insns);
	}
	for (size_t i = 0; i < obj->map_cnt; i++) {
		free(obj->maps[i].name);
		free(obj->maps[i].init);
		free(obj->maps[i].st_prog);
	}
	for (size_t i = 0; i < obj->var_cnt; i++)
		free(obj->vars[i].name);
	free(obj->vars);
	free(obj->progs);
	free(obj->maps);
	gx_btf_free(obj->btf);
	free(obj->name);
	free(obj);
}

GX_EXPORT const char *gx_bpf_object__name(const struct gx_bpf_object *obj) { return obj->name; }
GX_EXPORT size_t gx_bpf_object__prog_cnt(const struct gx_bpf_object *obj) { return obj->prog_cnt; }
GX_EXPORT size_t gx_bpf_object__map_cnt(const struct gx_bpf_object *obj) { return obj->map_cnt; }
GX_EXPORT const struct gx_btf *gx_bpf_object__btf(const struct gx_bpf_object *obj) { return obj->btf; }

GX_EXPORT struct gx_bpf_prog *gx_bpf_object__prog_by_idx(const struct gx_bpf_object *obj, size_t idx)
{
	if (idx >= obj->prog_cnt) {
		errno = ENOENT;
		return NULL;
	}
	return &obj->progs[idx];
}

GX_EXPORT struct gx_bpf_map *gx_bpf_object__map_by_idx(const struct gx_bpf_object *obj, size_t idx)
{
	if (idx >= obj->map_cnt) {
		errno = ENOENT;
		return NULL;
	}
	return &obj->maps[idx];
}

GX_EXPORT struct gx_bpf_prog *gx_bpf_object__find_prog(const struct gx_bpf_object *obj, const char *name)
{
	for (size_t i = 0; name && i < obj->prog_cnt; i++)
		if (!strcmp(obj->progs[i].name, name))
			return &obj->progs[i];
	errno = ENOENT;
	return NULL;
}

GX_EXPORT size_t gx_bpf_object__var_cnt(const struct gx_bpf_object *obj)
{
	return obj ? obj->var_cnt : 0;
}

GX_EXPORT int gx_bpf_object__var(const struct gx_bpf_object *obj, size_t idx, const char **name, size_t *map,
				 uint32_t *off, uint32_t *size)
{
	if (!obj || idx >= obj->var_cnt)
		return gx_err(-ENOENT);
	const struct gx_bpf_var *v = &obj->vars[idx];
	*name = v->name;
	*map = v->map;
	*off = v->off;
	*size = v->size;
	return 0;
}

GX_EXPORT struct gx_bpf_map *gx_bpf_object__find_map(const struct gx_bpf_object *obj, const char *name)
{
	for (size_t i = 0; name && i < obj->map_cnt; i++)
		if (!strcmp(obj->maps[i].name, name))
			return &obj->maps[i];
	errno = ENOENT;
	return NULL;
}

GX_EXPORT struct gx_bpf_prog *gx_bpf_object__next_prog(const struct gx_bpf_object *obj,
						       const struct gx_bpf_prog *prev)
{
	size_t i = prev ? (size_t)(prev - obj->progs) + 1 : 0;
	return i < obj->prog_cnt ? &obj->progs[i] : NULL;
}

GX_EXPORT struct gx_bpf_map *gx_bpf_object__next_map(const struct gx_bpf_object *obj,
						     const struct gx_bpf_map *prev)
{
	size_t i = prev ? (size_t)(prev - obj->maps) + 1 : 0;
	return i < obj->map_cnt ? &obj->maps[i] : NULL;
}

GX_EXPORT const char *gx_bpf_prog__name(const struct gx_bpf_prog *p) { return p->name; }
GX_EXPORT const char *gx_bpf_prog__section_name(const struct gx_bpf_prog *p) { return p->sec_name; }
GX_EXPORT enum gx_bpf_hook gx_bpf_prog__hook(const struct gx_bpf_prog *p) { return p->sec ? p->sec->hook : GX_BPF_HOOK_UNSPEC; }
GX_EXPORT uint32_t gx_bpf_prog__gdev_hook(const struct gx_bpf_prog *p) { return p->sec ? p->sec->gdev_hook : 0; }
GX_EXPORT const char *gx_bpf_prog__attach_target(const struct gx_bpf_prog *p) { return p->attach_target ? p->attach_target : ""; }
GX_EXPORT const struct gx_bpf_sec_def *gx_bpf_prog__sec_def(const struct gx_bpf_prog *p) { return p->sec; }
GX_EXPORT const struct bpf_insn *gx_bpf_prog__insns(const struct gx_bpf_prog *p) { return p->insns; }
GX_EXPORT size_t gx_bpf_prog__insn_cnt(const struct gx_bpf_prog *p) { return p->insn_cnt; }
GX_EXPORT struct gx_bpf_object *gx_bpf_prog__object(const struct gx_bpf_prog *p) { return p->obj; }
GX_EXPORT uint32_t gx_bpf_prog__stack_depth(const struct gx_bpf_prog *p) { return p->stack_depth; }
GX_EXPORT bool gx_bpf_prog__verified(const struct gx_bpf_prog *p) { return p->verified; }
GX_EXPORT const char *gx_bpf_prog__verifier_msg(const struct gx_bpf_prog *p) { return p->vmsg ? p->vmsg : ""; }

GX_EXPORT bool gx_bpf_prog__insn_varying(const struct gx_bpf_prog *p, size_t idx)
{
	return p->varying && idx < p->insn_cnt && p->varying[idx];
}

GX_EXPORT int gx_bpf_prog__verify_stats(const struct gx_bpf_prog *p, struct gx_bpf_verify_stats *st)
{
	if (!st)
		return gx_err(-EINVAL);
	*st = p->stats;
	return 0;
}

GX_EXPORT const char *gx_bpf_map__name(const struct gx_bpf_map *m) { return m->name; }
GX_EXPORT enum gx_bpf_map_type gx_bpf_map__type(const struct gx_bpf_map *m) { return m->type; }
GX_EXPORT uint32_t gx_bpf_map__key_size(const struct gx_bpf_map *m) { return m->key_size; }
GX_EXPORT uint32_t gx_bpf_map__value_size(const struct gx_bpf_map *m) { return m->value_size; }
GX_EXPORT uint32_t gx_bpf_map__max_entries(const struct gx_bpf_map *m) { return m->max_entries; }
GX_EXPORT uint32_t gx_bpf_map__map_flags(const struct gx_bpf_map *m) { return m->map_flags; }
GX_EXPORT uint32_t gx_bpf_map__gx_flags(const struct gx_bpf_map *m) { return m->gx_flags; }
GX_EXPORT size_t gx_bpf_map__idx(const struct gx_bpf_map *m) { return m->idx; }
GX_EXPORT uint32_t gx_bpf_map__btf_key_type_id(const struct gx_bpf_map *m) { return m->btf_key_type_id; }
GX_EXPORT uint32_t gx_bpf_map__btf_value_type_id(const struct gx_bpf_map *m) { return m->btf_value_type_id; }

GX_EXPORT const char *gx_bpf_map__type_str(enum gx_bpf_map_type t)
{
	switch (t) {
	case GX_BPF_MAP_HASH: return "hash";
	case GX_BPF_MAP_ARRAY: return "array";
	case GX_BPF_MAP_PERSM_ARRAY: return "persm_array";
	case GX_BPF_MAP_RINGBUF: return "ringbuf";
	case GX_BPF_MAP_PERWARP_ARRAY: return "perwarp_array";
	case GX_BPF_MAP_LRU_HASH: return "lru_hash";
	case GX_BPF_MAP_STRUCT_OPS: return "struct_ops";
	}
	return "unknown";
}

GX_EXPORT struct gx_bpf_prog *gx_bpf_map__struct_ops_prog(const struct gx_bpf_map *m, uint32_t off)
{
	if (!m->st_prog || off % 8 || off / 8 >= m->value_size / 8 || m->st_prog[off / 8] < 0) {
		errno = ENOENT;
		return NULL;
	}
	return &m->obj->progs[m->st_prog[off / 8]];
}

GX_EXPORT const void *gx_bpf_map__initial_value(const struct gx_bpf_map *m, size_t *size)
{
	if (!m->init) {
		errno = EINVAL;
		return NULL;
	}
	if (size)
		*size = m->value_size;
	return m->init;
}

GX_EXPORT int gx_bpf_map__set_initial_value(struct gx_bpf_map *m, const void *data, size_t size)
{
	if (!(m->gx_flags & GX_BPF_MAP_F_INTERNAL) || size != m->value_size || !m->init)
		return gx_err(-EINVAL);
	memcpy(m->init, data, size);
	/* Verdicts may depend on .rodata contents: verify again. */
	for (size_t i = 0; i < m->obj->prog_cnt; i++)
		gx_bpf_prog_clear_verdict(&m->obj->progs[i]);
	return 0;
}

GX_EXPORT int gx_bpf_prog__interp(const struct gx_bpf_prog *p, uint64_t ctx,
				  const struct gx_bpf_interp_opts *opts, uint64_t *ret)
{
	return gx_bpf_interp_run(p->insns, p->insn_cnt, ctx, opts, ret);
}
