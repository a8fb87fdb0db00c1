/* policy.c — which device policy runs, and where its PTX comes from.
 *
 * At the first module rewrite after cuInit: read GPUEXT_POLICY (a .bpf.o
 * path; colon-separated lists are accepted but only the first object is
 * attached — device programs of several objects would need one map index
 * space) or GPUEXT_TOOL (a shipped tool: $GPUEXT_TOOLS_DIR/NAME.bpf.o, else
 * <shim dir>/../share/gpuext/tools/NAME.bpf.o). The object's bytes are
 * hashed; the JIT cache (gx_pcache.h) is looked up for (hash, version,
 * device sm, PTX ISA); on a miss libgxjit.so ($GPUEXT_JITLIB, else next to
 * the shim) is dlopen'ed — only then, so the shim itself never needs LLVM —
 * to verify and JIT, and the result is stored for the next run. Every
 * failure is one "gpuext: policy ..." line and the application runs without
 * the policy, its modules untouched. */
#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devbpf/tools/gx_pcache.h"
#include "shim/gx_hostpolicy.h"
#include "shim/gx_policy.h"

static pthread_mutex_t pol_lock = PTHREAD_MUTEX_INITIALIZER;
static int pol_state; /* 0 unknown, 1 active, -1 off/failed */
static struct gx_policy_desc pol;
static struct gx_hook_binding *binds;
static unsigned pol_hooks;

static const char *self_dir(char *buf, size_t n)
{
	Dl_info di;
	if (!dladdr((void *)self_dir, &di) || !di.dli_fname)
		return NULL;
	snprintf(buf, n, "%s", di.dli_fname);
	return dirname(buf);
}

static int object_path(char *out, size_t n, char *tag, size_t tn)
{
	const char *p = gx_config.policy, *t = gx_config.tool;
	/* Host struct_ops objects in the list belong to shim/hostpolicy.c. */
	while (p && *p) {
		const char *c = strchr(p, ':'), *k = memchr(p, ',', c ? (size_t)(c - p) : strlen(p));
		snprintf(out, n, "%.*s", (int)(k ? k - p : c ? c - p : (long)strlen(p)), p);
		if (!gx_hostpolicy_is_struct_ops(out))
			break;
		p = c ? c + 1 : NULL;
	}
	if (p && *p) {
		const char *colon = strchr(p, ':');
		size_t len = colon ? (size_t)(colon - p) : strlen(p);
		if (colon)
			pr_warn("policy: GPUEXT_POLICY lists several objects; attaching only the first (%.*s)",
				(int)len, p);
		snprintf(out, n, "%.*s", (int)len, p);
		const char *b = memrchr(out, '/', strlen(out));
		snprintf(tag, tn, "%.63s", b ? b + 1 : out);
		char *dot = strstr(tag, ".bpf.o");
		if (dot)
			*dot = 0;
		return 0;
	}
	if (!t || !*t)
		return -ENOENT;
	if (strchr(t, '/')) {
		pr_warn("policy: GPUEXT_TOOL=%s: not a tool name", t);
		return -EINVAL;
	}
	snprintf(tag, tn, "%s", t);
	const char *d = getenv("GPUEXT_TOOLS_DIR");
	char sd[4096];
	if (d && *d)
		snprintf(out, n, "%s/%s.bpf.o", d, t);
	else if ((d = self_dir(sd, sizeof(sd))))
		snprintf(out, n, "%s/../share/gpuext/tools/%s.bpf.o", d, t);
	else
		return -ENOENT;
	return 0;
}

static unsigned cur_sm(void)
{
	CUdevice d;
	int maj = 0, min = 0;
	if (REAL(cuCtxGetDevice)(&d) != CUDA_SUCCESS &&
	    REAL(cuDeviceGet)(&d, 0) != CUDA_SUCCESS)
		return 0;
	REAL(cuDeviceGetAttribute)(&maj, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d);
	REAL(cuDeviceGetAttribute)(&min, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d);
	return maj > 0 ? (unsigned)(maj * 10 + min) : 0;
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

static void pol_load(void)
{
	char path[4096], tag[GX_POL_NAME_MAX], err[512] = "", dir[4096];
	if (gx_config.disabled || object_path(path, sizeof(path), tag, sizeof(tag))) {
		pol_state = -1;
		return;
	}
	char *buf = NULL;
	size_t len = 0;
	int ret = gx_read_file(path, &buf, &len, 64u << 20);
	if (ret) {
		pr_warn("policy %s: cannot read %s: %s; running without it", tag, path, strerror(-ret));
		pol_state = -1;
		return;
	}
	unsigned sm = cur_sm();
	uint64_t h = gx_pcache_hash(buf, len);
	bool have_dir = gx_pcache_dir(dir, sizeof(dir)) == 0;
	ret = have_dir ? gx_pcache_load(dir, h, sm, &pol, err, sizeof(err)) : -ENOENT;
	if (ret == -EINVAL)
		pr_warn("policy %s: %s; JIT'ing again", tag, err);
	if (!ret) {
		pr_info("policy %s: from the JIT cache (%s, sm_%u)", tag, dir, sm);
	} else {
		ret = jit_build(buf, len, tag, sm, &pol, err, sizeof(err));
		if (!ret) {
			pr_info("policy %s: verified and JIT'd for sm_%u", tag, sm);
			if (have_dir && gx_pcache_store(dir, &pol))
				pr_debug("policy %s: cannot write the JIT cache in %s", tag, dir);
		}
	}
	free(buf);
	if (ret) {
		pr_warn("policy %s: %s; running without it", tag, err[0] ? err : strerror(-ret));
		pol_state = -1;
		return;
	}
	binds = calloc(pol.nr_progs, sizeof(*binds));
	if (!binds || gx_devrt_start(&pol, tag)) {
		pr_warn("policy %s: cannot start the runtime; running without it", tag);
		free(binds);
		binds = NULL;
		gx_pdesc_free(&pol);
		pol_state = -1;
		return;
	}
	for (size_t i = 0; i < pol.nr_progs; i++) {
		binds[i].hook = pol.progs[i].hook;
		binds[i].kernel_glob = pol.progs[i].glob[0] ? pol.progs[i].glob : NULL;
		binds[i].func = pol.progs[i].func;
		pol_hooks |= pol.progs[i].hook;
	}
	pol_state = 1;
}

void gx_policy_rewrite_opts(struct gx_ptx_rewrite_opts *opts)
{
	gx_config_load();
	if ((!gx_config.policy && !gx_config.tool) || gx_config.disabled)
		return;
	pthread_mutex_lock(&pol_lock);
	if (!pol_state)
		pol_load();
	int st = pol_state;
	pthread_mutex_unlock(&pol_lock);
	if (st != 1 || gx_devrt_ctx_ready())
		return;
	opts->hooks |= pol_hooks;
	opts->policy_ptx = pol.ptx;
	opts->policy_len = pol.ptx_len;
	opts->bindings = binds;
	opts->nr_bindings = pol.nr_progs;
}
