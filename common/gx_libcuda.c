/* gx_libcuda.c — the candidates for NVIDIA's libcuda.so.1 (gx_libcuda.h). */
#include "common/gx_libcuda.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/gx_util.h"

int gx_ldcache_each(const char *soname, gx_libcuda_fn fn, void *arg)
{
	static const char magic[] = "glibc-ld.so.cache1.1";
	int fd = open("/etc/ld.so.cache", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct stat st;
	int ret = 0;
	if (fstat(fd, &st) == 0 && st.st_size > 48 && st.st_size < (1 << 28)) {
		size_t sz = st.st_size;
		const char *m = mmap(NULL, sz, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m != MAP_FAILED) {
			const char *hdr = memmem(m, sz, magic, sizeof(magic) - 1);
			if (hdr && (size_t)(hdr - m) + 48 <= sz) {
				size_t base = hdr - m;
				uint32_t nlibs;
				memcpy(&nlibs, hdr + 20, 4);
				size_t ent = base + 48;
				for (uint32_t i = 0; !ret && i < nlibs && ent + 24 <= sz; i++, ent += 24) {
					uint32_t k, v;
					int32_t fl;
					memcpy(&fl, m + ent, 4);
					/* 64-bit x86 entries only (FLAG_X8664_LIB64); skip /lib32 etc. */
					if ((fl & 0xff00) != 0x0300)
						continue;
					memcpy(&k, m + ent + 4, 4);
					memcpy(&v, m + ent + 8, 4);
					if (base + k >= sz || base + v >= sz)
						continue;
					const char *key = m + base + k, *val = m + base + v;
					if (!memchr(key, 0, sz - (base + k)) || !memchr(val, 0, sz - (base + v)))
						continue;
					if (!strcmp(key, soname))
						ret = fn(val, false, arg);
				}
			}
			munmap((void *)m, sz);
		}
	}
	close(fd);
	return ret;
}

static const char *const std_paths[] = {
	"/usr/lib/x86_64-linux-gnu/libcuda.so.1",
	"/usr/lib/x86_64-linux-gnu/nvidia/current/libcuda.so.1",
	"/usr/local/nvidia/lib64/libcuda.so.1",
	"/usr/local/nvidia/lib/libcuda.so.1",
	"/usr/lib64/libcuda.so.1",
	"/usr/lib/libcuda.so.1",
	"/usr/lib/wsl/lib/libcuda.so.1",
	"/run/opengl-driver/lib/libcuda.so.1",
};

struct ldc_filter {
	gx_libcuda_fn fn;
	void *arg;
};

static int ldcache_cand(const char *path, bool explicit_path, void *arg)
{
	const struct ldc_filter *f = arg;
	if (strstr(path, "/stubs/") || access(path, R_OK))
		return 0;
	return f->fn(path, explicit_path, f->arg);
}

int gx_libcuda_candidates(gx_libcuda_fn fn, void *arg)
{
	const char *env = getenv("GPUEXT_REAL_LIBCUDA");
	if (env && *env)
		return fn(env, true, arg);
	int ret = 0;
	const char *llp = getenv("LD_LIBRARY_PATH");
	if (llp) {
		char *dup = strdup(llp), *save = NULL;
		for (char *d = dup ? strtok_r(dup, ":", &save) : NULL; d && !ret; d = strtok_r(NULL, ":", &save)) {
			char p[4096];
			if (strstr(d, "/stubs"))
				continue;
			snprintf(p, sizeof(p), "%s/libcuda.so.1", d);
			if (access(p, R_OK) == 0)
				ret = fn(p, false, arg);
		}
		free(dup);
		if (ret)
			return ret;
	}
	struct ldc_filter f = { fn, arg };
	ret = gx_ldcache_each("libcuda.so.1", ldcache_cand, &f);
	for (size_t i = 0; !ret && i < GX_ARRAY_SIZE(std_paths); i++)
		if (access(std_paths[i], R_OK) == 0)
			ret = fn(std_paths[i], false, arg);
	return ret;
}
