/* jitlib_open.c — find a symbol of libgxjit.so, the one library that links
 * LLVM 19. The shim and the gpuext CLI both stay free of LLVM (machines that
 * run applications often lack it) and reach the JIT only through here:
 * $GPUEXT_JITLIB, else libgxjit.so next to the calling object (the shim lives
 * in build/lib), else in ../lib beside it (the CLI lives in build/bin). */
#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attach/gx_attach.h"
#include "common/gx_util.h"

int gx_jitlib_build_lazy(const void *obj, size_t len, const char *name, unsigned sm,
			 struct gx_policy_desc *d, char *err, size_t en)
{
	gx_jitlib_build_fn fn = (gx_jitlib_build_fn)gx_jitlib_sym(GX_JITLIB_SYM, err, en);
	return fn ? fn(obj, len, name, sm, d, err, en) : -errno;
}

void gx_policy_tag(const char *path, char *tag, size_t n)
{
	const char *b = strrchr(path, '/');
	snprintf(tag, n, "%.63s", b ? b + 1 : path);
	char *dot = strstr(tag, ".bpf.o");
	if (dot)
		*dot = 0;
}

int gx_policy_build_file(const char *path, unsigned sm, struct gx_policy_desc *d, char *err, size_t en)
{
	char *obj = NULL, tag[GX_POL_NAME_MAX], why[512] = "";
	size_t len = 0;
	int ret = gx_read_file(path, &obj, &len, 64u << 20);
	if (ret) {
		snprintf(err, en, "%s: cannot read: %s", path, strerror(-ret));
		return ret;
	}
	gx_policy_tag(path, tag, sizeof(tag));
	ret = gx_jitlib_build_lazy(obj, len, tag, sm, d, why, sizeof(why));
	free(obj);
	if (ret)
		snprintf(err, en, "%s: %s", path, why);
	return ret;
}

void *gx_jitlib_sym(const char *sym, char *err, size_t en)
{
	return gx_jitlib_sym_in(GX_JITLIB_SONAME, sym, err, en);
}

void *gx_jitlib_sym_in(const char *soname, const char *sym, char *err, size_t en)
{
	char cand[2][4096];
	int nc = 0;
	const char *env = strcmp(soname, GX_JITLIB_SONAME) ? NULL : getenv("GPUEXT_JITLIB");
	if (env && *env) {
		snprintf(cand[nc++], sizeof(cand[0]), "%s", env);
	} else {
		Dl_info di;
		char self[4096];
		if (dladdr((void *)gx_jitlib_sym, &di) && di.dli_fname) {
			snprintf(self, sizeof(self), "%s", di.dli_fname);
			const char *dir = dirname(self);
			snprintf(cand[nc++], sizeof(cand[0]), "%s/%s", dir, soname);
			snprintf(cand[nc++], sizeof(cand[0]), "%s/../lib/%s", dir, soname);
		}
	}
	const char *why = "no candidate path";
	for (int i = 0; i < nc; i++) {
		/* Kept open for good: LLVM registers atexit handlers. */
		void *h = dlopen(cand[i], RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			why = dlerror();
			continue;
		}
		void *p = dlsym(h, sym);
		if (p)
			return p;
		snprintf(err, en, "%.300s has no %s", cand[i], sym);
		errno = ENOSYS;
		return NULL;
	}
	snprintf(err, en, "the JIT library cannot be loaded (%.300s); "
		 "run `gpuext tools prepare` where LLVM 19 is installed",
		 why ? why : "?");
	errno = ENOENT;
	return NULL;
}
