/* load.c — image → PTX for this device → rewritten PTX, or a reason to pass
 * the image through untouched. Never fails the application's load: every
 * problem ends in "passed through" and the original image. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attach/gx_attach.h"
#include "ptx-rewrite/gx_ptx.h"
#include "gpuext/gx_devrt.h"
#include "image/gx_image.h"
#include "shim/load_internal.h"
#include "shim/mcache_internal.h"
#include "shim/passes_env_internal.h"
#include "shim/stats_internal.h"

static unsigned module_seq;

unsigned gx_next_module_id(void)
{
	return __atomic_add_fetch(&module_seq, 1, __ATOMIC_RELAXED);
}

static int device_sm(CUdevice d, unsigned *sm)
{
	*sm = gx_dev_sm(d);
	return *sm ? 0 : -ENODEV;
}

/* The arch whose PTX we load: the current context's device, or for
 * libraries the lowest arch of all devices (a library is loaded into every
 * context, so its PTX must JIT on each). `hi` (may be NULL) gets the highest
 * arch among the devices considered. */
static int target_sm(bool all_devices, unsigned *sm, unsigned *hi)
{
	CUdevice d;
	if (!all_devices) {
		int r = REAL(cuCtxGetDevice)(&d) == CUDA_SUCCESS ? device_sm(d, sm) : -ENODEV;
		if (!r && hi)
			*hi = *sm;
		return r;
	}
	int n = 0;
	if (REAL(cuDeviceGetCount)(&n) != CUDA_SUCCESS || n <= 0)
		return -ENODEV;
	unsigned lo = UINT32_MAX, top = 0;
	for (int i = 0; i < n; i++) {
		CUdevice di;
		unsigned s;
		if (REAL(cuDeviceGet)(&di, i) == CUDA_SUCCESS && device_sm(di, &s) == 0) {
			lo = s < lo ? s : lo;
			top = s > top ? s : top;
		}
	}
	if (lo == UINT32_MAX)
		return -ENODEV;
	*sm = lo;
	if (hi)
		*hi = top;
	return 0;
}

/* dev_sm: the device arch the PTX is loaded for (part of the cache key). */
bool gx_prep_opts(struct gx_ptx_rewrite_opts *opts)
{
	*opts = (struct gx_ptx_rewrite_opts){ .sz = sizeof(*opts) };
	opts->hooks = gx_hooks_from_env(); /* GPUEXT_HOOKS: no-op stub hooks */
	gx_attach_opts(opts); /* device policy hooks, if one is attached (attach.c) */
	if (opts->hooks && !opts->policy_ptx)
		opts->stubs = gx_stubs_from_env(); /* GPUEXT_STUBS: what those hooks run */
	opts->flags = gx_ptx_flags_from_env(); /* A/B switches, part of the cache key */
	opts->mem_sample = gx_ptx_mem_sample_from_env(); /* memtrace's 1 in N, at the site */
	return gx_sched_rewrite_opts(opts) > 0; /* GPUEXT_SCHED / GPUEXT_PERSISTENT: copies */
}

static bool prep_rewrite(const char *ptx, size_t len, unsigned dev_sm, struct gx_ptx_rewrite_opts opts, bool persist,
			 struct gx_prep *p);

bool gx_prep_rewrite(const char *ptx, size_t len, unsigned dev_sm, struct gx_prep *p)
{
	struct gx_ptx_rewrite_opts opts;
	bool persist = gx_prep_opts(&opts);
	return prep_rewrite(ptx, len, dev_sm, opts, persist, p);
}

bool gx_prep_rewrite_live(const char *ptx, size_t len, unsigned dev_sm, struct gx_prep *p)
{
	struct gx_ptx_rewrite_opts opts;
	bool persist = gx_prep_opts(&opts);
	gx_attach_live_opts(&opts);
	persist |= gx_sched_live_opts(&opts) > 0; /* gpuext attach --sched: persistent copies too */
	if (!opts.policy_ptx) {
		snprintf(p->why, sizeof(p->why), "nothing attached");
		return false;
	}
	opts.stubs = 0;
	return prep_rewrite(ptx, len, dev_sm, opts, persist, p);
}

static bool prep_rewrite(const char *ptx, size_t len, unsigned dev_sm, struct gx_ptx_rewrite_opts opts, bool persist,
			 struct gx_prep *p)
{
	/* The rewritten-module cache: same input, options, build and arch. */
	struct gx_mcache_key key;
	gx_mcache_key(ptx, len, &opts, dev_sm, &key);
	struct gx_mcache_entry ce = { 0 };
	if (gx_mcache_get(&key, &ce) == 0) {
		p->cached = true;
		p->ptx = ce.ptx, p->len = ce.len;
		p->nr_hooks = ce.nr_hooks, p->nr_persistent = ce.nr_persistent;
		if (ce.notes && ce.notes[0])
			pr_debug("module %u: rewriter notes: %s", p->id, ce.notes);
		if (persist && ce.nr_persistent)
			p->log = ce.notes; /* names the persistent copies: for gx_sched_module */
		else
			free(ce.notes);
		return true;
	}
	struct gx_ptx_rewrite_result res;
	memset(&res, 0, sizeof(res));
	/* Persistent copies, and kernels with memory sites: capped at the
	 * originals' registers (measured). */
	struct gx_ptx_kregs *kregs = NULL;
	size_t nkregs = 0;
	bool memcap = !persist && gx_ptx_opts_reg_cap(&opts, 0);
	if ((persist || memcap) && p->kregs) {
		opts.persist_regs = p->kregs; /* as its cubin states them */
		opts.nr_persist_regs = p->nkregs;
		pr_debug("module %u: the originals' registers as its cubin states them (%zu kernels)", p->id,
			 p->nkregs);
	} else if (persist || memcap) {
		int e = gx_kregs_probe(ptx, len, &kregs, &nkregs);
		if (e)
			pr_debug("module %u: original registers not measured (%s): its kernels not capped", p->id,
				 strerror(-e));
		else
			pr_debug("module %u: the originals' registers measured by a JIT (%zu kernels)", p->id, nkregs);
		opts.persist_regs = kregs;
		opts.nr_persist_regs = nkregs;
	}
	int ret = gx_ptx_rewrite(ptx, len, &opts, &res);
	gx_kregs_free(kregs, nkregs);
	if (ret < 0 || !res.ptx) {
		snprintf(p->why, sizeof(p->why), "rewrite failed: %.200s", res.err[0] ? res.err : "error");
		p->level = GX_LOG_WARN;
		gx_ptx_rewrite_result_free(&res);
		return false;
	}
	p->ptx = res.ptx;
	p->len = res.len;
	p->nr_hooks = res.nr_hooks;
	res.ptx = NULL;
	p->nr_persistent = res.nr_persistent;
	ce = (struct gx_mcache_entry){ .ptx = p->ptx, .len = p->len, .nr_hooks = p->nr_hooks,
				       .nr_persistent = p->nr_persistent, .notes = res.log };
	gx_mcache_put(&key, &ce);
	if (persist && res.nr_persistent) {
		p->log = res.log; /* names the persistent copies: for gx_sched_module */
		res.log = NULL;
	}
	const char *notes = p->log ? p->log : res.log;
	if (notes && notes[0])
		pr_debug("module %u: rewriter notes: %s", p->id, notes);
	gx_ptx_rewrite_result_free(&res);
	return true;
}

static bool keep_sass(bool rewritten, int has_sass, unsigned sm, const char *orig, size_t olen, struct gx_prep *p);

/* A module that reaches us as SASS only can still be rewritten when its
 * cubin carries its PTX (ptxas -lineinfo: Triton's and Inductor's cubins,
 * nvcc -lineinfo builds): the same kernels, JIT-compiled from that PTX with
 * the hooks in. Only when something asks for hooks: without them the
 * rewrite is the identity, and JIT-compiling it would cost start-up time
 * for nothing. Returns 1 with p->ptx set, 0 when not applicable (p->why
 * untouched), -1 on failure (p->why set). */
static int prep_cubin_ptx(const struct gx_image *im, unsigned sm, struct gx_prep *p)
{
	struct gx_ptx_rewrite_opts opts;
	gx_prep_opts(&opts);
	const struct gx_image_entry *e = (opts.hooks || opts.persistent) ? gx_image_pick_sass(im, sm) : NULL;
	void *cubin = NULL;
	size_t clen = 0, budget = gx_image_budget(im->extent);
	if (!e || gx_image_entry_data(e, &budget, &cubin, &clen))
		return 0;
	char *ptx = NULL;
	size_t len = 0;
	int r = gx_image_cubin_ptx(cubin, clen, &ptx, &len);
	if (!r) /* on failure none: measured by a JIT if a cap needs them */
		gx_kregs_from_cubin(cubin, clen, &p->kregs, &p->nkregs);
	free(cubin);
	if (r)
		return 0;
	if (strstr(ptx, GDEV_DEVRT_SYMBOL)) {
		/* built by gpuext-ptxas: the hooks are in already, and the
		 * device runtime finds its __gx_devrt at the first launch */
		free(ptx);
		snprintf(p->why, sizeof(p->why), "its cubin was compiled with the hooks in (gpuext-ptxas)");
		return -1;
	}
	p->sm = e->sm;
	p->from_cubin = true;
	r = gx_prep_rewrite(ptx, len, sm, p) ? 1 : -1;
	if (r > 0)
		gx_jit_async_judge(ptx, len, p);
	if (r > 0 && p->nr_persistent && !keep_sass(true, 1, e->sm, ptx, len, p)) {
		p->from_cubin = false;
		r = -1; /* p->why says why */
	}
	free(ptx);
	if (r > 0 && !p->nr_hooks && !p->nr_persistent) {
		/* Nothing hooked in it: the cubin itself is the better load. */
		gx_prep_free(p);
		p->from_cubin = false;
		snprintf(p->why, sizeof(p->why), "SASS only; the PTX its cubin carries has nothing to hook");
		return -1;
	}
	return r;
}

/* Under a tool, policy or schedule policy, the originals of a module stay
 * the code the driver would run without us wherever the rewrite leaves
 * them as they were. A JIT of the same PTX is not the same code: through
 * cuLink (the cubin route, cubin.c) it is compiled as relocatable code, and
 * an image with SASS for the device ran NVIDIA's SASS natively. The kernels
 * then get other registers, and a library that sizes its launches by them
 * changes its plans: cuFFT under --sched adaptive, with no kernel of its
 * selected too, reported a 128,000-byte work area it needs none of and
 * failed a plan (GPU run 91). So:
 *  - nothing to change (no hook site, no persistent copy): the image loads
 *    as it came (it also spares the JIT at start);
 *  - persistent copies and no tool hook (a schedule policy alone: its
 *    gdev/sched hooks are in the copies' loops only): the image loads as it
 *    came and the copies beside it in a module of their own (p->side), when
 *    the module has no variables, which the two modules would each have
 *    their own of (cuFFT's modules keep table pointers the host sets in
 *    .global variables). A module with variables loads as it came, without
 *    copies, unless the policy's kernels= selected some of its kernels:
 *    then one rewritten module, loaded as PTX (p->ptx_load: the driver's
 *    whole-module JIT, as natively), not through the cubin route. Even
 *    that reload changed cuFFT's plans (GPU run 92: PTX-only modules with
 *    copies, loaded whole), so it is only done when asked for by name.
 * Without hooks or copies asked for, the identity reload stays as it was.
 * `orig`: the PTX the rewrite started from. */
static bool keep_sass(bool rewritten, int has_sass, unsigned sm, const char *orig, size_t olen, struct gx_prep *p)
{
	if (!rewritten)
		return false;
	struct gx_ptx_rewrite_opts opts;
	gx_prep_opts(&opts);
	if (!opts.hooks && !opts.persistent)
		return true;
	/* a schedule policy's hooks are in the copies' loops only: the
	 * originals are unchanged when no other hook is asked for */
	if (p->nr_hooks && (opts.hooks & ~GDEV_HOOKS_SCHED))
		return true;
	unsigned vars = 0;
	if (p->nr_persistent) {
		char err[160];
		struct gx_ptx_module *m = gx_ptx_module__parse(orig, olen, err, sizeof(err));
		struct gx_ptx_stats st = { .vars = 1 }; /* unparsed: assume it has some */
		if (m) {
			gx_ptx_module__stats(m, &st);
			gx_ptx_module__free(m);
		}
		vars = st.vars;
		if (!vars) {
			p->side = true;
			return true;
		}
		if (opts.persist_kernels) {
			p->ptx_load = true; /* one module, its originals JIT'd whole */
			return true;
		}
	}
	gx_prep_free(p);
	if (p->nr_persistent)
		snprintf(p->why, sizeof(p->why),
			 "%u module variable%s its copies could not share (select its kernels with kernels= to "
			 "schedule them)",
			 vars, vars == 1 ? "" : "s");
	else if (has_sass)
		snprintf(p->why, sizeof(p->why), "has SASS for sm_%u and nothing to change in its PTX", sm);
	else
		snprintf(p->why, sizeof(p->why), "nothing to change in its PTX");
	p->nr_persistent = 0;
	return false;
}

/* Common start of gx_prepare*: the module's number, and GPUEXT_DISABLE. */
static bool prep_start(struct gx_prep *p)
{
	if (!p->id)
		p->id = gx_next_module_id();
	p->level = GX_LOG_INFO;
	gx_config_load();
	if (gx_config.disabled) {
		snprintf(p->why, sizeof(p->why), "GPUEXT_DISABLE is set");
		p->level = GX_LOG_DEBUG;
		return false;
	}
	return true;
}

bool gx_prepare(const char *api, const void *img, size_t avail, bool all_devices, struct gx_prep *p)
{
	(void)api;
	if (!prep_start(p))
		return false;
	if (!img) {
		snprintf(p->why, sizeof(p->why), "no image");
		return false;
	}
	struct gx_image im;
	char err[200] = "";
	if (gx_image_parse(img, avail, &im, err, sizeof(err)) < 0) {
		snprintf(p->why, sizeof(p->why), "unrecognised image: %.200s", err[0] ? err : "parse error");
		p->level = GX_LOG_WARN;
		return false;
	}
	unsigned sm, sm_hi;
	if (target_sm(all_devices, &sm, &sm_hi) < 0) {
		snprintf(p->why, sizeof(p->why), "no current device to pick PTX for");
		gx_image_free(&im);
		return false;
	}
	int has_sass = 0;
	const struct gx_image_entry *e = gx_image_pick_ptx(&im, sm, &has_sass);
	if (!e) {
		/* -rdc: the linked image is SASS only, its units carry PTX. The
		 * link yields SASS for one arch (running on that major arch): a
		 * library shared by devices of several major archs keeps its
		 * original image. */
		int r = gx_prepare_rdc(&im, sm, sm / 10 != sm_hi / 10, p);
		if (!r)
			r = prep_cubin_ptx(&im, sm, p);
		if (r) {
			gx_image_free(&im);
			return r > 0;
		}
		/* has_sass: SASS that runs on this device; the module may still be
		 * SASS-only for another arch (then the driver's own error follows). */
		bool any_sass = has_sass;
		for (size_t i = 0; i < im.nr_entries && !any_sass; i++)
			any_sass = im.entries[i].kind == GX_ENTRY_ELF;
		snprintf(p->why, sizeof(p->why), "%s, no PTX for sm_%u (%s%s)",
			 any_sass ? "SASS only" : "no usable code", sm, gx_image_kind_name(im.kind),
			 any_sass && !has_sass ? ", no SASS for this device either" : "");
		gx_image_free(&im);
		return false;
	}
	void *raw = NULL;
	size_t len = 0;
	p->sm = e->sm;
	/* Stored PTX is used in place (the rewriter and the cache take a
	 * length): no copy of a module that may be megabytes. */
	if (e->comp == GX_COMP_NONE && e->raw_size <= e->size && !(e->flags & GX_FATBIN_F_ENCODED)) {
		const char *text = e->data;
		len = strnlen(text, e->raw_size);
		gx_image_free(&im); /* entries point into the application's image, which stays */
		bool rw = gx_prep_rewrite(text, len, sm, p);
		if (rw)
			gx_jit_async_judge(text, len, p);
		return keep_sass(rw, has_sass, sm, text, len, p);
	}
	size_t budget = gx_image_budget(im.extent);
	int ret = gx_image_entry_data(e, &budget, &raw, &len);
	gx_image_free(&im);
	if (ret == -E2BIG) {
		snprintf(p->why, sizeof(p->why),
			 "the PTX entry decompresses to more than max(256 MiB, 64 x the image's size)");
		p->level = GX_LOG_WARN;
		return false;
	}
	if (ret < 0) {
		snprintf(p->why, sizeof(p->why), "cannot extract the PTX entry (error %d)", ret);
		p->level = GX_LOG_WARN;
		return false;
	}
	bool rw = gx_prep_rewrite(raw, len, sm, p);
	if (rw)
		gx_jit_async_judge(raw, len, p);
	bool ok = keep_sass(rw, has_sass, sm, raw, len, p);
	free(raw);
	return ok;
}

bool gx_prepare_ptx(const char *api, const char *ptx, size_t len, struct gx_prep *p)
{
	(void)api;
	if (!prep_start(p))
		return false;
	if (!ptx) {
		snprintf(p->why, sizeof(p->why), "no PTX");
		return false;
	}
	const char *t = strstr(ptx, ".target sm_");
	p->sm = t ? (unsigned)strtoul(t + 11, NULL, 10) : 0;
	unsigned dev_sm = 0;
	if (target_sm(false, &dev_sm, NULL) < 0)
		dev_sm = 0;
	return gx_prep_rewrite(ptx, len, dev_sm, p);
}

char *gx_prep_carried_ptx(const void *img, size_t avail, bool all_devices, size_t *len)
{
	struct gx_image im;
	char err[200];
	unsigned sm;
	char *ptx = NULL;
	if (!img || target_sm(all_devices, &sm, NULL) < 0 || gx_image_parse(img, avail, &im, err, sizeof(err)) < 0)
		return NULL;
	const struct gx_image_entry *e = gx_image_pick_sass(&im, sm);
	void *cubin = NULL;
	size_t clen = 0, budget = gx_image_budget(im.extent);
	/* stored entries only: no decompression at every load of every program */
	if (e && e->comp == GX_COMP_NONE && !gx_image_entry_data(e, &budget, &cubin, &clen)) {
		if (gx_image_cubin_ptx(cubin, clen, &ptx, len) || strstr(ptx, GDEV_DEVRT_SYMBOL)) {
			free(ptx);
			ptx = NULL;
		}
		free(cubin);
	}
	gx_image_free(&im);
	return ptx;
}

void gx_prep_free(struct gx_prep *p)
{
	free(p->ptx);
	p->ptx = NULL;
	free(p->carried);
	p->carried = NULL;
	free(p->log);
	p->log = NULL;
	gx_kregs_free(p->kregs, p->nkregs);
	p->kregs = NULL;
	p->nkregs = 0;
}

void gx_log_cubin(const struct gx_prep *p, char *buf, size_t n)
{
	if (p->cubin == GX_CUBIN_JIT)
		snprintf(buf, n, "; cubin: JIT-compiled in %.1f ms, stored", p->jit_ms);
	else if (p->cubin == GX_CUBIN_CACHED)
		snprintf(buf, n, "; cubin: cached");
	else if (n)
		buf[0] = 0;
}

void gx_log_reloaded(const char *api, const struct gx_prep *p)
{
	char how[96];
	gx_stats_module(GX_STATS_MOD_REWRITTEN, NULL);
	if (p->nr_hooks && p->nr_persistent)
		snprintf(how, sizeof(how), "%u hooks, %u kernels with persistent copies", p->nr_hooks, p->nr_persistent);
	else if (p->nr_persistent)
		snprintf(how, sizeof(how), "%u kernels with persistent copies", p->nr_persistent);
	else if (p->nr_hooks)
		snprintf(how, sizeof(how), "%u hooks", p->nr_hooks);
	else
		snprintf(how, sizeof(how), "identity");
	if (p->rdc_units) {
		pr_info("module %u (%s): rewritten (%s), reloaded from sm_%u PTX of %u -rdc units, JIT-linked (%zu bytes "
			"of cubin%s)",
			p->id, api, how, p->sm, p->rdc_units, p->len, p->cached ? ", from the module cache" : "");
		return;
	}
	char cub[80];
	gx_log_cubin(p, cub, sizeof(cub));
	pr_info("module %u (%s): rewritten (%s), reloaded from sm_%u PTX%s (%zu bytes%s)%s", p->id, api, how, p->sm,
		p->from_cubin ? " carried by its cubin (-lineinfo)" : "", p->len,
		p->cached ? ", from the module cache" : "", cub);
}

void gx_log_side(const char *api, const struct gx_prep *p)
{
	gx_stats_module(GX_STATS_MOD_REWRITTEN, NULL);
	pr_info("module %u (%s): loaded as it came (its kernels run as without gpuext); %u kernels with persistent copies in a "
		"module of their own beside it, from sm_%u PTX (%zu bytes%s)",
		p->id, api, p->nr_persistent, p->sm, p->len, p->cached ? ", from the module cache" : "");
}

void gx_log_passed(const char *api, const struct gx_prep *p)
{
	gx_stats_module(GX_STATS_MOD_PASSED, p->why);
	gx_log(p->level, "module %u (%s): passed through: %s", p->id, api, p->why);
}

void gx_log_fallback(const char *api, const struct gx_prep *p, CUresult rc)
{
	char b[96];
	gx_stats_module(GX_STATS_MOD_FELL_BACK, NULL);
	pr_warn("module %u (%s): passed through: the driver rejected the rewritten PTX: %s; loaded the original",
		p->id, api, gx_cu_errname(rc, b, sizeof(b)));
}
