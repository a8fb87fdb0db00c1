/* jitlib.c — gx_jitlib_build: .bpf.o bytes → verified, JIT'd policy
 * description (gx_pcache.h). The one entry point of libgxjit.so, which the
 * shim dlopens only on a cache miss (so applications on machines without
 * LLVM run from the cache), and of `gpuext tools prepare`. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devbpf/gx_bpf.h"
#include "attach/gx_attach.h"
#include "common/gx_util.h"

struct vlog {
	char *err;
	size_t n;
	int got;
};

static void first_line(void *user, const char *line)
{
	struct vlog *v = user;
	if (!v->got && strstr(line, "insn")) {
		snprintf(v->err, v->n, "%s", line);
		v->got = 1;
	}
}

static int fill_maps(const struct gx_bpf_object *obj, struct gx_policy_desc *d, struct gx_jit_map *jm)
{
	d->nr_maps = gx_bpf_object__map_cnt(obj);
	d->maps = calloc(d->nr_maps ? d->nr_maps : 1, sizeof(*d->maps));
	if (!d->maps)
		return -ENOMEM;
	for (size_t i = 0; i < d->nr_maps; i++) {
		const struct gx_bpf_map *bm = gx_bpf_object__map_by_idx(obj, i);
		struct gx_pol_map *m = &d->maps[i];
		snprintf(m->name, sizeof(m->name), "%s.%s", gx_bpf_object__name(obj), gx_bpf_map__name(bm));
		m->type = gx_bpf_map__type(bm);
		m->key_size = gx_bpf_map__key_size(bm);
		m->value_size = gx_bpf_map__value_size(bm);
		m->max_entries = gx_bpf_map__max_entries(bm);
		m->gx_flags = gx_bpf_map__gx_flags(bm) & (GX_BPF_MAP_F_INTERNAL | GX_BPF_MAP_F_RDONLY | GX_BPF_MAP_F_RECORDS);
		size_t sz = 0;
		const void *init = gx_bpf_map__initial_value(bm, &sz);
		if (init && sz && sz <= m->value_size) {
			if (!(m->init = malloc(sz)))
				return -ENOMEM;
			memcpy(m->init, init, sz);
			m->init_len = sz;
		}
		jm[i] = (struct gx_jit_map){ .name = gx_bpf_map__name(bm), .type = m->type,
					     .key_size = m->key_size, .value_size = m->value_size,
					     .max_entries = m->max_entries };
	}
	size_t nv = gx_bpf_object__var_cnt(obj);
	d->vars = calloc(nv ? nv : 1, sizeof(*d->vars));
	if (!d->vars)
		return -ENOMEM;
	for (size_t i = 0; i < nv; i++) {
		const char *name;
		size_t map;
		uint32_t off, size;
		if (gx_bpf_object__var(obj, i, &name, &map, &off, &size) || strlen(name) >= GX_POL_NAME_MAX)
			continue;
		struct gx_pol_var *v = &d->vars[d->nr_vars++];
		snprintf(v->name, sizeof(v->name), "%s", name);
		v->map = (unsigned)map;
		v->off = off;
		v->size = size;
	}
	return 0;
}

GX_EXPORT int gx_jitlib_build(const void *objbuf, size_t len, const char *name, unsigned sm,
			      struct gx_policy_desc *d, char *err, size_t err_sz)
{
	memset(d, 0, sizeof(*d));
	snprintf(err, err_sz, "error");
	struct gx_bpf_open_opts oo = { .sz = sizeof(oo), .object_name = name };
	struct gx_bpf_object *obj = gx_bpf_object__open_mem(objbuf, len, &oo);
	if (!obj) {
		int e = errno ? errno : EINVAL;
		snprintf(err, err_sz, "%s: not a loadable policy object (%s)", name, strerror(e));
		return -e;
	}
	struct vlog v = { err, err_sz, 0 };
	struct gx_bpf_verify_opts vo = { .sz = sizeof(vo), .quiet = true, .log = first_line, .log_user = &v };
	int ret = gx_bpf_object__verify(obj, &vo);
	if (ret) {
		for (struct gx_bpf_prog *p = NULL; !v.got && (p = gx_bpf_object__next_prog(obj, p));)
			if (*gx_bpf_prog__verifier_msg(p)) {
				snprintf(err, err_sz, "%s", gx_bpf_prog__verifier_msg(p));
				v.got = 1;
			}
		if (!v.got)
			snprintf(err, err_sz, "%s: verifier error %d", name, ret);
		gx_bpf_object__close(obj);
		return ret < 0 ? ret : -EINVAL;
	}
	size_t np = gx_bpf_object__prog_cnt(obj), nm = gx_bpf_object__map_cnt(obj);
	struct gx_jit_prog *jp = calloc(np ? np : 1, sizeof(*jp));
	struct gx_jit_map *jm = calloc(nm ? nm : 1, sizeof(*jm));
	char (*fn)[96] = calloc(np ? np : 1, sizeof(*fn));
	d->progs = calloc(np ? np : 1, sizeof(*d->progs));
	ret = -ENOMEM;
	if (!jp || !jm || !fn || !d->progs || fill_maps(obj, d, jm))
		goto out;
	size_t nj = 0;
	for (size_t i = 0; i < np; i++) {
		const struct gx_bpf_prog *p = gx_bpf_object__prog_by_idx(obj, i);
		const struct gx_bpf_sec_def *sd = gx_bpf_prog__sec_def(p);
		if (!sd || !(sd->flags & GX_BPF_SEC_DEVICE) || !gx_bpf_prog__gdev_hook(p))
			continue;
		snprintf(fn[nj], sizeof(fn[nj]), "gxp_%s", gx_bpf_prog__name(p));
		jp[nj] = (struct gx_jit_prog){ .name = gx_bpf_prog__name(p), .func = fn[nj],
					       .insns = gx_bpf_prog__insns(p),
					       .nr_insns = gx_bpf_prog__insn_cnt(p) };
		struct gx_pol_prog *pp = &d->progs[nj];
		snprintf(pp->func, sizeof(pp->func), "%s", fn[nj]);
		pp->hook = gx_bpf_prog__gdev_hook(p);
		const char *g = gx_bpf_prog__attach_target(p);
		snprintf(pp->glob, sizeof(pp->glob), "%s", g && strcmp(g, "*") ? g : "");
		nj++;
	}
	d->nr_progs = nj;
	if (!nj) {
		snprintf(err, err_sz, "%s: no device programs (gdev/... sections)", name);
		ret = -ENOENT;
		goto out;
	}
	char cpu[16];
	d->sm = sm;
	d->ptxver = GX_PCACHE_PTXVER;
	snprintf(cpu, sizeof(cpu), "sm_%u", gx_pcache_jit_sm(sm));
	struct gx_jit_opts jo = { .sz = sizeof(jo), .target = GX_JIT_PTX, .maps = jm, .nr_maps = nm,
				  .cpu = cpu, .features = "+ptx80", .fold_geometry = gx_jit__fold_env() };
	struct gx_jit *j = gx_jit__new(jp, nj, &jo, err, err_sz);
	if (!j) {
		ret = errno ? -errno : -EINVAL;
		goto out;
	}
	size_t pl = 0;
	const char *ptx = gx_jit__ptx(j, &pl);
	d->ptx = ptx ? strndup(ptx, pl) : NULL;
	d->ptx_len = d->ptx ? strlen(d->ptx) : 0;
	gx_jit__free(j);
	ret = d->ptx ? 0 : -ENOMEM;
	snprintf(d->name, sizeof(d->name), "%s", gx_bpf_object__name(obj));
	d->hash = gx_pcache_key(objbuf, len);
out:
	free(jp);
	free(jm);
	free(fn);
	gx_bpf_object__close(obj);
	if (ret) {
		if (ret == -ENOMEM)
			snprintf(err, err_sz, "%s: out of memory", name);
		gx_pdesc_free(d);
	} else {
		err[0] = 0;
	}
	return ret;
}
