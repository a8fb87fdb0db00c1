/* jitlib_open.c — find a symbol of libgxjit.so, the one library that links
 * LLVM 19. The shim and the gpuext CLI both stay free of LLVM (machines that
 * run applications often lack it) and reach the JIT only through here:
 * $GPUEXT_JITLIB, else libgxjit.so next to the calling object (the shim lives
 * in build/lib), else in ../lib beside it (the CLI lives in build/bin).
 * Its code runs unverified in the process: the file is opened with the
 * trust rule of gx_trust.h (owned by this user or root, writable by nobody
 * else, not a symbolic link; docs/trust.md) in a folder of the same rule,
 * so it cannot be swapped between the check and the load. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

/* The libraries loaded so far, by the path asked for: each is loaded once
 * and kept (LLVM registers atexit handlers). */
static struct {
	char path[4096];
	void *h;
} loaded[4];
static pthread_mutex_t loaded_lock = PTHREAD_MUTEX_INITIALIZER;
static void (*loaded_hook)(void);

void gx_jitlib_set_loaded_hook(void (*fn)(void))
{
	pthread_mutex_lock(&loaded_lock);
	loaded_hook = fn;
	pthread_mutex_unlock(&loaded_lock);
}

/* dlopen path if it and its folder pass the trust rule; else NULL with why
 * (the path and the reason, e.g. "owned by uid 65534", for the caller's one
 * line). The library is loaded by its real path, not through /proc/self/fd:
 * its $ORIGIN RPATH must name its folder (the JIT add-on's LLVM sits in
 * gpuext-llvm/ beside it). The folder's check keeps others from swapping the
 * file between the check and the load; the loaded file's inode is compared
 * with the checked one all the same. */
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
	char r[96], real[PATH_MAX], dir[PATH_MAX];
	int fd = gx_open_trusted(path, O_RDONLY, GX_TRUST_ANY_OWNER, r, sizeof(r));
	if (fd < 0) { /* a refusal too: the caller's one line tells it */
		snprintf(why, n, "%.300s: %s", path, r);
		goto out;
	}
	struct stat st, lst;
	if (fstat(fd, &st) || !realpath(path, real)) {
		snprintf(why, n, "%.300s: %s", path, strerror(errno));
		goto close;
	}
	snprintf(dir, sizeof(dir), "%s", real);
	if (gx_dir_trusted(dirname(dir), GX_TRUST_ANY_OWNER, r, sizeof(r))) {
		snprintf(why, n, "%.280s: its folder: %.80s", path, r);
		goto close;
	}
	h = dlopen(real, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		snprintf(why, n, "%.300s: %s", path, e ? e : "dlopen failed");
		goto close;
	}
	struct link_map *lm = NULL;
	if (dlinfo(h, RTLD_DI_LINKMAP, &lm) || !lm || stat(lm->l_name, &lst) || lst.st_dev != st.st_dev ||
	    lst.st_ino != st.st_ino) {
		snprintf(why, n, "%.300s: the file loaded is not the file checked", path);
		dlclose(h);
		h = NULL;
		goto close;
	}
	if (i < GX_ARRAY_SIZE(loaded)) {
		snprintf(loaded[i].path, sizeof(loaded[i].path), "%.4095s", path);
		loaded[i].h = h;
	}
	if (loaded_hook)
		loaded_hook();
close:
	close(fd);
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
			/* in an executable (the CLI) dli_fname is argv[0], maybe bare */
			ssize_t k = 0;
			if (di.dli_fname[0] != '/')
				k = readlink("/proc/self/exe", self, sizeof(self) - 1);
			if (k > 0)
				self[k] = 0;
			else
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
