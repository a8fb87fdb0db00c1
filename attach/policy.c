/* policy.c — which device policies run, and where their PTX comes from.
 *
 * At the first module rewrite after cuInit: the objects are every device
 * object in GPUEXT_POLICY (colon-separated; host struct_ops objects there
 * belong to hostpolicy.c) then every tool in GPUEXT_TOOL (comma-separated:
 * $GPUEXT_TOOLS_DIR/NAME.bpf.o, else <shim dir>/../share/gpuext/tools/), at
 * most GX_PMERGE_MAX, duplicates dropped. Each object's bytes are hashed;
 * the JIT cache (gx_pcache.h) is looked up for (hash, version, JIT revision,
 * device sm, PTX ISA) in the user's cache folder, then in the read-only one
 * of the install (<shim dir>/../share/gpuext/cache, filled by `gpuext tools
 * prepare --shared`); on a miss libgxjit.so ($GPUEXT_JITLIB, else next to
 * the shim) is dlopen'ed — only then, so the shim itself never needs LLVM —
 * to verify and JIT, and the result is stored for the next run in the
 * user's folder. Cache entries and tool objects are found in shared places:
 * each is used only when it passes the trust rule of common/gx_trust.h
 * (docs/trust.md), else one line says which file and why. The
 * policies are joined (gx_pmerge.h): every hook site calls them in that
 * order. A policy that fails is one "gpuext: policy NAME: ...; running
 * without it" line and the others still attach; with none left the
 * application's modules are untouched. */
#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "attach/attach_internal.h"
#include "common/gx_trust.h"
#include "devbpf/gx_bpf.h"
#include "tools/gx_tools.h"

static pthread_mutex_t pol_lock = PTHREAD_MUTEX_INITIALIZER;
static int pol_state; /* 0 unknown, 1 active, -1 off/failed */
static struct gx_policy_list list; /* the attached policies */

static const char *self_dir(char *buf, size_t n)
{
	Dl_info di;
	if (!dladdr((void *)self_dir, &di) || !di.dli_fname)
		return NULL;
	snprintf(buf, n, "%s", di.dli_fname);
	return dirname(buf);
}

struct obj {
	char path[4096];
	char tag[GX_POL_NAME_MAX];
	char knobs[512];
	bool shared; /* found in the tools folder, not named by the user */
};


static int add_obj(struct obj *o, size_t *n, const char *path, const char *tag, const char *knobs, size_t kl,
		   bool shared)
{
	for (size_t i = 0; i < *n; i++)
		if (!strcmp(o[i].path, path)) {
			pr_warn("policy %s: listed twice; attached once", tag);
			return 0;
		}
	if (*n == GX_PMERGE_MAX) {
		pr_warn("policy %s: more than %d device policies; running without it", tag, GX_PMERGE_MAX);
		return 0;
	}
	snprintf(o[*n].path, sizeof(o[*n].path), "%s", path);
	snprintf(o[*n].tag, sizeof(o[*n].tag), "%s", tag);
	snprintf(o[*n].knobs, sizeof(o[*n].knobs), "%.*s", (int)kl, knobs ? knobs : "");
	o[*n].shared = shared;
	(*n)++;
	return 0;
}

/* "obj.bpf.o[,knobs]" → the object (path), and its knobs (after the comma);
 * host struct_ops objects (is_host_policy) are not ours. */
static void add_entry(struct obj *o, size_t *n, const char *p, size_t len, bool (*is_host_policy)(const char *))
{
	char path[4096], tag[GX_POL_NAME_MAX];
	const char *k = memchr(p, ',', len);
	snprintf(path, sizeof(path), "%.*s", (int)(k ? (size_t)(k - p) : len), p);
	if (path[0] && !(is_host_policy && is_host_policy(path))) {
		gx_policy_tag(path, tag, sizeof(tag));
		add_obj(o, n, path, tag, k ? k + 1 : NULL, k ? len - (size_t)(k + 1 - p) : 0, false);
	}
}

/* Issue 40's load-time variants of the shipped tools (docs/devbpf-perf.md,
 * "Issue 40"): the tool keeps its name (its data, tag and report), its
 * object is another build of the same source. An unknown value is the
 * default, with a warning. Each object has its own policy-cache key (the
 * key hashes the object), hence its own rewritten modules. */
static const char *tool_object(const char *tool)
{
	size_t nv;
	const struct gx_tool_variant *v = gx_tool_variants(&nv);
	for (size_t i = 0; i < nv; i++) {
		const char *e = strcmp(v[i].tool, tool) ? NULL : getenv(v[i].env);
		if (e && !strcmp(e, v[i].val)) {
			pr_info("policy %s: %s=%s: object %s", tool, v[i].env, e, v[i].object);
			return v[i].object;
		}
	}
	/* none matched: a variable of this tool's set to a value no variant
	 * has (0 and the defaults' names mean the default) */
	const char *warned = NULL;
	for (size_t i = 0; i < nv; i++) {
		const char *e = strcmp(v[i].tool, tool) ? NULL : getenv(v[i].env);
		if (!e || !*e || !strcmp(e, "0") || !strcmp(e, "16384") || !strcmp(e, "first") ||
		    (warned && !strcmp(warned, v[i].env)))
			continue;
		pr_warn("policy %s: %s=%s: not a value this tool knows; running its default", tool, v[i].env, e);
		warned = v[i].env;
	}
	return tool;
}

/* The device policy objects, in order: the schedule policy (blocksched),
 * GPUEXT_POLICY's, then the tools. */
static size_t object_list(const struct gx_policy_names *pn, bool (*is_host_policy)(const char *), struct obj *o)
{
	size_t n = 0;
	char path[4096], tag[GX_POL_NAME_MAX];
	if (pn->sched && *pn->sched)
		add_entry(o, &n, pn->sched, strlen(pn->sched), NULL);
	for (const char *p = pn->policy; p && *p;) {
		const char *c = strchr(p, ':');
		size_t len = c ? (size_t)(c - p) : strlen(p);
		add_entry(o, &n, p, len, is_host_policy);
		p = c ? c + 1 : NULL;
	}
	const char *d = getenv("GPUEXT_TOOLS_DIR");
	char sd[4096], td[4200], why[96];
	const char *base = d && *d ? d : self_dir(sd, sizeof(sd));
	if (base && pn->tool && *pn->tool) {
		snprintf(td, sizeof(td), d && *d ? "%s" : "%s/../share/gpuext/tools", base);
		if (gx_dir_trusted(td, GX_TRUST_ANY_OWNER, why, sizeof(why)) == -EPERM) {
			pr_warn("policy: not using the tools folder %s: %s; running without the tools", td, why);
			return n;
		}
	}
	for (const char *t = pn->tool; t && *t;) {
		const char *c = strchr(t, ',');
		size_t len = c ? (size_t)(c - t) : strlen(t);
		snprintf(tag, sizeof(tag), "%.*s", (int)(len < sizeof(tag) ? len : sizeof(tag) - 1), t);
		if (!tag[0]) {
		} else if (strchr(tag, '/') || strchr(tag, '.')) {
			pr_warn("policy: GPUEXT_TOOL=%s: not a tool name", tag);
		} else if (!base) {
			pr_warn("policy %s: cannot find the tools folder; running without it", tag);
		} else {
			const char *obj = tool_object(tag);
			if (d && *d)
				snprintf(path, sizeof(path), "%s/%s.bpf.o", base, obj);
			else
				snprintf(path, sizeof(path), "%s/../share/gpuext/tools/%s.bpf.o", base, obj);
			add_obj(o, &n, path, tag, NULL, 0, true);
		}
		t = c ? c + 1 : NULL;
	}
	return n;
}


/* The arch the policy is JIT'd for: the lowest of all the process's
 * devices, so the one build links into modules for any of them (PTX for an
 * older arch JITs on a newer one; several GPUs of one arch, the usual host,
 * change nothing). */
static unsigned cur_sm(void)
{
	CUdevice d;
	int n = 0;
	unsigned lo = 0;
	if (CU(cuDeviceGetCount)(&n) == CUDA_SUCCESS)
		for (int i = 0; i < n; i++) {
			unsigned s = CU(cuDeviceGet)(&d, i) == CUDA_SUCCESS ? gx_attach_env->dev_sm(d) : 0;
			if (s && (!lo || s < lo))
				lo = s;
		}
	if (lo)
		return lo;
	if (CU(cuCtxGetDevice)(&d) != CUDA_SUCCESS && CU(cuDeviceGet)(&d, 0) != CUDA_SUCCESS)
		return 0;
	return gx_attach_env->dev_sm(d);
}

static int jit_build(const char *buf, size_t len, const char *tag, unsigned sm, struct gx_policy_desc *d,
		     char *err, size_t en)
{
	char why[400];
	gx_jitlib_build_fn fn = (gx_jitlib_build_fn)gx_jitlib_sym(GX_JITLIB_SYM, why, sizeof(why));
	if (!fn) {
		int e = -errno;
		snprintf(err, en, "not in the JIT cache and %s", why);
		return e;
	}
	return fn(buf, len, tag, sm, d, err, en);
}

/* Where entries are looked up: the user's folder, then the install's
 * read-only one; stores go to the user's folder only. */
struct cache_dirs {
	char dir[2][4096];
	size_t nr;
	bool store; /* dir[0] is the user's, to be written after a JIT */
};

static void cache_dirs(struct cache_dirs *c)
{
	char why[96], sd[4096];
	memset(c, 0, sizeof(*c));
	if (!gx_cache_dir(c->dir[0], sizeof(c->dir[0]))) {
		int r = gx_dir_trusted(c->dir[0], GX_TRUST_ANY_OWNER, why, sizeof(why));
		if (r == -EPERM)
			pr_warn("policy cache: not using %s: %s", c->dir[0], why);
		else
			c->store = true, c->nr = 1; /* -ENOENT: created by the first store */
	}
	if (self_dir(sd, sizeof(sd))) {
		char *p = c->dir[c->nr], rp[PATH_MAX];
		snprintf(p, sizeof(c->dir[0]), "%.4000s/../share/gpuext/cache", sd);
		if (realpath(p, rp)) /* the log names it without lib/.. */
			snprintf(p, sizeof(c->dir[0]), "%s", rp);
		int r = gx_dir_trusted(p, GX_TRUST_ANY_OWNER, why, sizeof(why));
		if (r == -EPERM)
			pr_warn("policy cache: not using %s: %s", p, why);
		else if (!r)
			c->nr++;
	}
}

/* One object: its description from the cache or the JIT; 0 or -errno (logged). */
static int desc_load(const struct obj *o, unsigned sm, const struct cache_dirs *c, struct gx_policy_desc *d)
{
	char err[512] = "";
	char *buf = NULL;
	size_t len = 0;
	int ret;
	if (o->shared) { /* a tool: found in a shared folder */
		char why[96];
		ret = gx_read_trusted(o->path, GX_TRUST_ANY_OWNER, &buf, &len, 64u << 20, why, sizeof(why));
		if (ret == -EPERM) {
			pr_warn("policy %s: not using %s: %s; running without it", o->tag, o->path, why);
			return ret;
		}
	} else {
		ret = gx_read_file(o->path, &buf, &len, 64u << 20);
	}
	if (ret) {
		pr_warn("policy %s: cannot read %s: %s; running without it", o->tag, o->path, strerror(-ret));
		return ret;
	}
	uint64_t h = gx_pcache_key(buf, len);
	ret = -ENOENT;
	for (size_t i = 0; i < c->nr && ret; i++) {
		ret = gx_pcache_load(c->dir[i], h, sm, d, err, sizeof(err));
		if (!ret)
			pr_info("policy %s: from the JIT cache (%s, sm_%u)", o->tag, c->dir[i], sm);
		else if (ret == -EINVAL)
			pr_warn("policy %s: %s; JIT'ing again", o->tag, err);
		else if (ret == -EPERM)
			pr_warn("policy %s: not using %s; JIT'ing again", o->tag, err);
	}
	if (ret) {
		err[0] = 0;
		ret = jit_build(buf, len, o->tag, sm, d, err, sizeof(err));
		if (!ret) {
			pr_info("policy %s: verified and JIT'd for sm_%u", o->tag, sm);
			if (c->store && gx_pcache_store(c->dir[0], d, 0))
				pr_debug("policy %s: cannot write the JIT cache in %s", o->tag, c->dir[0]);
		}
	}
	free(buf);
	if (!ret && o->knobs[0] && (ret = gx_pdesc_set_knobs(d, o->knobs, err, sizeof(err))))
		gx_pdesc_free(d);
	else if (!ret && o->knobs[0])
		pr_info("policy %s: knobs %s", o->tag, o->knobs);
	if (ret)
		pr_warn("policy %s: %s; running without it", o->tag, err[0] ? err : strerror(-ret));
	return ret;
}

int gx_policy_list_load(const struct gx_policy_names *pn, unsigned sm, bool (*is_host_policy)(const char *),
			struct gx_policy_list *pl)
{
	struct obj objs[GX_PMERGE_MAX];
	struct cache_dirs cd;
	char err[512] = "";
	memset(pl, 0, sizeof(*pl));
	size_t n = object_list(pn, is_host_policy, objs);
	if (n)
		cache_dirs(&cd);
	for (size_t i = 0; i < n; i++) {
		struct gx_policy_desc *d = &pl->desc[pl->nr];
		if (desc_load(&objs[i], sm, &cd, d))
			continue;
		/* the first is used as it is; later ones move beside it */
		if (pl->nr && gx_pdesc_relocate(d, (unsigned)pl->nr, err, sizeof(err))) {
			pr_warn("%s; running without it", err);
			gx_pdesc_free(d);
			continue;
		}
		snprintf(pl->tag[pl->nr], sizeof(pl->tag[0]), "%s", objs[i].tag);
		pl->nr++;
	}
	if (pl->nr && gx_pset_join(pl->desc, pl->nr, &pl->set)) {
		pr_warn("policy %s: out of memory; running without it", pl->tag[0]);
		gx_policy_list_free(pl);
		return -ENOMEM;
	}
	return 0;
}

void gx_policy_list_free(struct gx_policy_list *pl)
{
	gx_pset_free(&pl->set);
	for (size_t k = 0; k < pl->nr; k++)
		gx_pdesc_free(&pl->desc[k]);
	memset(pl, 0, sizeof(*pl));
}

/* A host table of an older shim has no sched field. */
static const char *host_sched(const struct gx_attach_host *h)
{
	return h && h->sz > offsetof(struct gx_attach_host, sched) ? h->sched : NULL;
}

static void pol_load(void)
{
	pol_state = -1;
	const struct gx_attach_host *h = gx_attach_env;
	struct gx_policy_names pn = {.sched = host_sched(h), .policy = h->policy, .tool = h->tool};
	if (gx_policy_list_load(&pn, cur_sm(), h->is_host_policy, &list) || !list.nr)
		return;
	const char *tp[GX_PMERGE_MAX];
	for (size_t k = 0; k < list.nr; k++)
		tp[k] = list.tag[k];
	if (gx_devrt_start(list.desc, tp, list.nr)) {
		pr_warn("policy %s: cannot start the runtime; running without it", list.tag[0]);
		gx_policy_list_free(&list);
		return;
	}
	if (list.nr > 1) {
		char all[GX_PMERGE_MAX * (GX_POL_NAME_MAX + 2)] = "";
		for (size_t k = 0; k < list.nr; k++)
			snprintf(all + strlen(all), sizeof(all) - strlen(all), "%s%s", k ? ", " : "", list.tag[k]);
		pr_info("policy: %zu device policies, called in this order at shared hooks: %s", list.nr, all);
	}
	pol_state = 1;
}

const struct gx_attach_host *gx_attach_env;

static struct gx_policy_list *live; /* attached live now, or NULL */

int gx_attach_policy_var(const char *tag, const char *name, void *out, size_t size)
{
	int ret = -ENODEV;
	pthread_mutex_lock(&pol_lock);
	/* from the start, or attached live (a schedule policy: gpuext attach --sched) */
	struct gx_policy_list *l = pol_state == 1 ? &list : live;
	for (size_t k = 0; l && k < l->nr; k++)
		if (!strcmp(l->tag[k], tag))
			ret = gx_pdesc_get_var(&l->desc[k], name, out, size);
	pthread_mutex_unlock(&pol_lock);
	return ret;
}

int gx_attach_start(const struct gx_attach_host *host)
{
	if (!host || (!host->policy && !host->tool && !host_sched(host)))
		return 0;
	pthread_mutex_lock(&pol_lock);
	if (!pol_state) {
		gx_attach_env = host;
		pol_load();
	}
	int st = pol_state;
	pthread_mutex_unlock(&pol_lock);
	return st == 1;
}

void gx_attach_rewrite_opts(const struct gx_attach_host *host, struct gx_ptx_rewrite_opts *opts)
{
	if (!gx_attach_start(host) || gx_devrt_ctx_ready())
		return;
	opts->hooks |= list.set.hooks;
	opts->policy_ptx = list.set.ptx;
	opts->policy_len = list.set.ptx_len;
	opts->bindings = list.set.binds;
	opts->bind_samples = list.set.samples;
	opts->nr_bindings = list.set.nr_binds;
}

/* ---- live attach (gx_attach.h) ----
 * Lists loaded for a live attach are kept (a few, by their names): a module
 * load racing with a detach may still read one, and the next attach of the
 * same tools needs neither the cache nor the JIT again. */
#define LIVE_LISTS 4
static struct live_list {
	char key[8400];
	struct gx_policy_list pl;
	bool used;
} live_lists[LIVE_LISTS];
static unsigned live_next;

static size_t names_count(const struct gx_policy_names *pn)
{
	size_t n = pn->sched && *pn->sched ? 1 : 0;
	for (const char *p = pn->policy; p && *p; p = strchr(p, ':') ? strchr(p, ':') + 1 : NULL)
		n++;
	for (const char *t = pn->tool; t && *t; t = strchr(t, ',') ? strchr(t, ',') + 1 : NULL)
		n++;
	return n;
}

int gx_attach_live_start(const struct gx_attach_host *host, const struct gx_policy_names *pn, const char *dir,
			 char *names, size_t nn, char *err, size_t en)
{
	char key[sizeof(live_lists[0].key)];
	int ret = 0;
	snprintf(key, sizeof(key), "%s|%s|%s", pn->sched ? pn->sched : "", pn->policy ? pn->policy : "",
		 pn->tool ? pn->tool : "");
	pthread_mutex_lock(&pol_lock);
	if (pol_state == 1) {
		snprintf(err, en, "device policies were attached at its start (GPUEXT_TOOL/GPUEXT_POLICY); "
				  "they cannot be changed while it runs");
		ret = -EBUSY;
		goto out;
	}
	if (live) {
		snprintf(err, en, "policies are attached already; detach them first");
		ret = -EBUSY;
		goto out;
	}
	gx_attach_env = host;
	struct live_list *l = NULL;
	for (unsigned i = 0; i < LIVE_LISTS && !l; i++)
		if (live_lists[i].used && !strcmp(live_lists[i].key, key))
			l = &live_lists[i];
	if (!l) {
		l = &live_lists[live_next++ % LIVE_LISTS];
		if (l->used)
			gx_policy_list_free(&l->pl);
		l->used = false;
		size_t want = names_count(pn);
		if (gx_policy_list_load(pn, cur_sm(), host->is_host_policy, &l->pl) || l->pl.nr != want) {
			snprintf(err, en, "%zu of %zu policies could be loaded (the process log says why)",
				 l->pl.nr, want);
			gx_policy_list_free(&l->pl);
			ret = -ENOENT;
			goto out;
		}
		snprintf(l->key, sizeof(l->key), "%s", key);
		l->used = true;
	}
	const char *tp[GX_PMERGE_MAX];
	names[0] = 0;
	for (size_t k = 0; k < l->pl.nr; k++) {
		tp[k] = l->pl.tag[k];
		snprintf(names + strlen(names), nn - strlen(names), "%s%s", k ? "," : "", l->pl.tag[k]);
	}
	gx_map_shm_dir_set(dir);
	if ((ret = gx_devrt_start(l->pl.desc, tp, l->pl.nr))) {
		gx_map_shm_dir_set(NULL);
		snprintf(err, en, "cannot start the device runtime (%s)", strerror(-ret));
		goto out;
	}
	live = &l->pl;
out:
	pthread_mutex_unlock(&pol_lock);
	return ret;
}

void gx_attach_live_opts(struct gx_ptx_rewrite_opts *opts)
{
	pthread_mutex_lock(&pol_lock);
	struct gx_policy_list *l = live;
	pthread_mutex_unlock(&pol_lock);
	if (!l)
		return;
	/* the list outlives this attach (kept in live_lists) */
	opts->hooks |= l->set.hooks;
	opts->policy_ptx = l->set.ptx;
	opts->policy_len = l->set.ptx_len;
	opts->bindings = l->set.binds;
	opts->bind_samples = l->set.samples;
	opts->nr_bindings = l->set.nr_binds;
}

int gx_attach_live_ctx_ready(void)
{
	return gx_attach_live_on() ? gx_devrt_ctx_ready() : -ENODEV;
}

bool gx_attach_live_on(void)
{
	pthread_mutex_lock(&pol_lock);
	bool on = live != NULL;
	pthread_mutex_unlock(&pol_lock);
	return on;
}

void gx_attach_live_stop(bool keep_device)
{
	pthread_mutex_lock(&pol_lock);
	bool on = live != NULL;
	live = NULL;
	pthread_mutex_unlock(&pol_lock);
	if (!on)
		return;
	gx_devrt_stop(keep_device);
	gx_map_shm_dir_set(NULL);
}
