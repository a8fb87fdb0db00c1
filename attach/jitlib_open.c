/* jitlib_open.c — find a symbol of libgxjit.so, the one library that links
 * LLVM 19. The shim and the gpuext CLI both stay free of LLVM (machines that
 * run applications often lack it) and reach the JIT only through here:
 * $GPUEXT_JITLIB, else libgxjit.so next to the calling object (the shim lives
 * in build/lib), else in ../lib beside it (the CLI lives in build/bin).
 * Its code runs unverified in the process: the file is opened with the
 * trust rule of gx_trust.h (owned by this user or root, writable by nobody
 * else, not a symbolic link; docs/trust.md) and the checked file itself is
 * loaded, through /proc/self/fd/N, so it cannot be swapped in between. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attach/gx_attach.h"
#include "common/gx_trust.h"
#include "common/gx_util.h"
#include <unistd.h>

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

/* The libraries loaded so far, by the path asked for: each is loaded once,
 * from an fd kept open for good (LLVM registers atexit handlers, and the
 * name /proc/self/fd/N must never name another file in this process: the
 * dynamic loader matches names before it opens anything). */
static struct {
	char path[4096];
	void *h;
} loaded[4];
static pthread_mutex_t loaded_lock = PTHREAD_MUTEX_INITIALIZER;

/* dlopen path if it passes the trust rule; else NULL with why (the path
 * and the reason, e.g. "owned by uid 65534", for the caller's one line). */
static void *load_checked(const char *path, char *why, size_t n)
{
	void *h = NULL;
	pthread_mutex_lock(&loaded_lock);
	size_t i = 0;
	for (; i < GX_ARRAY_SIZE(loaded) && loaded[i].path[0]; i++)
		if (!strcmp(loaded[i].path, path)) {
			h = loaded[i].h;
			goto out;
		}
	char r[96];
	int fd = gx_open_trusted(path, O_RDONLY, GX_TRUST_ANY_OWNER, r, sizeof(r));
	if (fd < 0) { /* a refusal too: the caller's one line tells it */
		snprintf(why, n, "%.300s: %s", path, r);
		goto out;
	}
	char fdp[40];
	snprintf(fdp, sizeof(fdp), "/proc/self/fd/%d", fd);
	h = dlopen(fdp, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		snprintf(why, n, "%.300s: %s", path, e ? e : "dlopen failed");
		close(fd);
		goto out;
	}
	if (i < GX_ARRAY_SIZE(loaded)) {
		snprintf(loaded[i].path, sizeof(loaded[i].path), "%.4095s", path);
		loaded[i].h = h;
	} /* else: more paths than slots, the fd stays open all the same */
out:
	pthread_mutex_unlock(&loaded_lock);
	return h;
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
	char buf[400];
	for (int i = 0; i < nc; i++) {
		void *h = load_checked(cand[i], buf, sizeof(buf));
		if (!h) {
			why = buf;
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
