/* jit_object.c — from a loaded object (gx_bpf.h) to a JIT module: the map
 * table in the object's index order, one function per program named
 * PREFIX+program, and the hook bindings ptx-rewrite needs. Also creates the
 * host maps of an object (shared memory when asked), with global data
 * initialized. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devbpf/gx_bpf.h"
#include "devbpf/jit_internal.h"
#include "common/gx_log.h"
#include "common/gx_util.h"
#include "gpuext/gx_hooks.h"

GX_EXPORT void gx_jit_object_maps_free(struct gx_map **maps, size_t n)
{
	for (size_t i = 0; maps && i < n; i++)
		gx_map__free(maps[i]);
	free(maps);
}

GX_EXPORT int gx_jit_object_maps(const struct gx_bpf_object *obj, unsigned map_flags,
				 unsigned nr_sms, struct gx_map ***out, size_t *nr_out)
{
	size_t n = gx_bpf_object__map_cnt(obj);
	struct gx_map **maps = calloc(n ? n : 1, sizeof(*maps));
	if (!maps)
		return gx_err(-ENOMEM);
	if (!nr_sms)
		nr_sms = 1;
	for (size_t i = 0; i < n; i++) {
		const struct gx_bpf_map *bm = gx_bpf_object__map_by_idx(obj, i);
		char name[GX_MAP_NAME_MAX];
		snprintf(name, sizeof(name), "%s.%s", gx_bpf_object__name(obj), gx_bpf_map__name(bm));
		struct gx_map_spec s = { .name = name,
					 .type = gx_bpf_map__type(bm),
					 .key_size = gx_bpf_map__key_size(bm),
					 .value_size = gx_bpf_map__value_size(bm),
					 .max_entries = gx_bpf_map__max_entries(bm) };
		if (s.type == GX_MAP_PERSM_ARRAY)
			s.nr_shards = nr_sms;
		else if (s.type == GX_MAP_PERWARP_ARRAY)
			s.nr_shards = nr_sms * GX_WARP_SLOTS_PER_SM;
		unsigned rec = gx_bpf_map__gx_flags(bm) & GX_BPF_MAP_F_RECORDS ? GX_MAP_F_RECORDS : 0;
		int ret = gx_map__create(&s, map_flags | rec, &maps[i]);
		if (ret) {
			pr_warn("jit: map '%s': cannot create (%s)\n", gx_bpf_map__name(bm),
				strerror(-ret));
			gx_jit_object_maps_free(maps, i);
			return gx_err(ret);
		}
		size_t sz = 0;
		const void *init = gx_bpf_map__initial_value(bm, &sz);
		if (init && s.type == GX_MAP_ARRAY && sz <= s.value_size)
			memcpy((void *)(uintptr_t)maps[i]->l.data, init, sz);
		else
			init = NULL, sz = 0;
		/* the verifier folded these bytes: nothing may change them now */
		if ((gx_bpf_map__gx_flags(bm) & GX_BPF_MAP_F_RDONLY) && (ret = gx_map__seal(maps[i], init, sz))) {
			gx_jit_object_maps_free(maps, i + 1);
			return gx_err(ret);
		}
	}
	*out = maps;
	*nr_out = n;
	return 0;
}

GX_EXPORT void gx_jit_bindings_free(struct gx_hook_binding *b, size_t n)
{
	for (size_t i = 0; b && i < n; i++) {
		free((char *)b[i].kernel_glob);
		free((char *)b[i].func);
	}
	free(b);
}

GX_EXPORT struct gx_jit *gx_jit_object(const struct gx_bpf_object *obj,
				       const struct gx_jit_object_opts *opts,
				       struct gx_hook_binding **bindings, size_t *nr_bindings,
				       char *err, size_t err_sz)
{
	size_t np = gx_bpf_object__prog_cnt(obj), nm = gx_bpf_object__map_cnt(obj), k = 0;
	struct gx_jit *j = NULL;
	if (!opts || opts->sz < sizeof(*opts) || (opts->target == GX_JIT_NATIVE && opts->nr_maps < nm)) {
		gx_jit_errf(err, err_sz, 0, "invalid arguments");
		errno = EINVAL;
		return NULL;
	}
	const char *prefix = opts->prefix ? opts->prefix : "gxp_";
	struct gx_jit_prog *progs = calloc(np ? np : 1, sizeof(*progs));
	struct gx_jit_map *maps = calloc(nm ? nm : 1, sizeof(*maps));
	char **names = calloc(np ? np : 1, sizeof(*names));
	struct gx_hook_binding *b = calloc(np ? np : 1, sizeof(*b));
	if (!progs || !maps || !names || !b) {
		errno = ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nm; i++) {
		const struct gx_bpf_map *bm = gx_bpf_object__map_by_idx(obj, i);
		maps[i] = (struct gx_jit_map){ .name = gx_bpf_map__name(bm),
					       .type = gx_bpf_map__type(bm),
					       .key_size = gx_bpf_map__key_size(bm),
					       .value_size = gx_bpf_map__value_size(bm),
					       .max_entries = gx_bpf_map__max_entries(bm),
					       .host = opts->maps ? opts->maps[i] : NULL };
	}
	for (size_t i = 0; i < np; i++) {
		const struct gx_bpf_prog *p = gx_bpf_object__prog_by_idx(obj, i);
		uint32_t hook = gx_bpf_prog__gdev_hook(p);
		if (opts->device_only && !hook)
			continue;
		size_t len = strlen(prefix) + strlen(gx_bpf_prog__name(p)) + 1;
		names[k] = malloc(len);
		if (!names[k]) {
			errno = ENOMEM;
			goto out;
		}
		snprintf(names[k], len, "%s%s", prefix, gx_bpf_prog__name(p));
		progs[k] = (struct gx_jit_prog){ .name = gx_bpf_prog__name(p), .func = names[k],
						 .insns = gx_bpf_prog__insns(p),
						 .nr_insns = gx_bpf_prog__insn_cnt(p) };
		const char *glob = gx_bpf_prog__attach_target(p);
		b[k].hook = hook;
		b[k].kernel_glob = glob && *glob ? strdup(glob) : NULL;
		b[k].func = strdup(names[k]);
		k++;
	}
	if (!k) {
		gx_jit_errf(err, err_sz, 0, "object %s has no %sprograms", gx_bpf_object__name(obj),
			    opts->device_only ? "device " : "");
		errno = ENOENT;
		goto out;
	}
	struct gx_jit_opts jo = { .sz = sizeof(jo), .target = opts->target, .maps = maps,
				  .nr_maps = nm, .define_devrt = opts->define_devrt,
				  .keep_text = opts->keep_text, .fold_geometry = gx_jit__fold_env() };
	j = gx_jit__new(progs, k, &jo, err, err_sz);
out:
	for (size_t i = 0; names && i < np; i++)
		free(names[i]);
	free(names);
	free(progs);
	free(maps);
	if (j && bindings) {
		*bindings = b;
		*nr_bindings = k;
	} else {
		int e = errno;
		gx_jit_bindings_free(b, k);
		errno = e;
	}
	return j;
}
