/* real.c — finding and binding NVIDIA's libcuda.so.1.
 *
 * We ARE libcuda.so.1, so the real driver is found by path, never by soname:
 * GPUEXT_REAL_LIBCUDA if set, else LD_LIBRARY_PATH directories, the ld.so
 * cache and the usual driver folders. Any candidate that is this very file
 * (same device and inode, or exporting our marker symbol) is skipped, so we
 * never call ourselves. The driver is opened RTLD_LOCAL on the first
 * forwarded call only: loading the shim does nothing (NVML keeps working). */
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shim/gx_shim.h"

/* Exported so that a candidate can be recognised as a copy of the shim. */
GX_EXPORT const char gpuext_shim_marker[] = "gpuext libcuda shim";

static pthread_mutex_t real_lock = PTHREAD_MUTEX_INITIALIZER;
static void *real_handle;
static int real_state; /* 0: not tried, 1: loaded, -1: none found */
static char real_path[4096];

static struct stat self_st;
static bool self_st_ok;
static uintptr_t self_lo, self_hi;

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	uintptr_t me = (uintptr_t)data;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		if (me >= lo && me < hi) {
			/* Found our object: record its whole extent. */
			uintptr_t a = UINTPTR_MAX, b = 0;
			for (int j = 0; j < info->dlpi_phnum; j++) {
				const ElfW(Phdr) *q = &info->dlpi_phdr[j];
				if (q->p_type != PT_LOAD)
					continue;
				uintptr_t l = info->dlpi_addr + q->p_vaddr;
				if (l < a)
					a = l;
				if (l + q->p_memsz > b)
					b = l + q->p_memsz;
			}
			self_lo = a, self_hi = b;
			return 1;
		}
	}
	return 0;
}

static void self_identify(void)
{
	static bool done;
	if (done)
		return;
	done = true;
	Dl_info di;
	if (dladdr((void *)gpuext_shim_marker, &di) && di.dli_fname && stat(di.dli_fname, &self_st) == 0)
		self_st_ok = true;
	dl_iterate_phdr(phdr_cb, (void *)gpuext_shim_marker);
}

bool gx_is_ours(const void *addr)
{
	return (uintptr_t)addr >= self_lo && (uintptr_t)addr < self_hi;
}

static bool is_self_file(const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return true; /* not there: skip it too */
	return self_st_ok && st.st_dev == self_st.st_dev && st.st_ino == self_st.st_ino;
}

static bool try_open(const char *path, bool explicit_path)
{
	if (is_self_file(path)) {
		if (explicit_path)
			pr_warn("GPUEXT_REAL_LIBCUDA=%s is the shim itself or missing; ignored", path);
		return false;
	}
	/* Opened as DIR/./NAME: the loader then records a name that differs
	 * from what an application would pass for the same file, so a later
	 * dlopen(DIR/NAME) by the application still consults LD_AUDIT (see
	 * audit.c) instead of matching our handle by name; without an audit
	 * module it still finds this same object (by device and inode). */
	char alt[4200];
	const char *slash = strrchr(path, '/');
	if (slash)
		snprintf(alt, sizeof(alt), "%.*s/./%s", (int)(slash - path), path, slash + 1);
	else
		snprintf(alt, sizeof(alt), "%s", path);
	void *h = dlopen(alt, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		pr_warn("cannot load the real driver %s: %s", path, dlerror());
		return false;
	}
	void *marker = dlsym(h, "gpuext_shim_marker");
	if (marker) {
		/* Another copy of the shim: loading it would loop back here. */
		pr_warn("%s is a copy of the gpuext shim; skipped", path);
		dlclose(h);
		return false;
	}
	real_handle = h;
	snprintf(real_path, sizeof(real_path), "%s", path);
	return true;
}

/* Path of libcuda.so.1 in /etc/ld.so.cache (new format), or 0. */
static int ld_cache_lookup(const char *soname, char *out, size_t outlen)
{
	static const char magic[] = "glibc-ld.so.cache1.1";
	int fd = open("/etc/ld.so.cache", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct stat st;
	int found = 0;
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
				for (uint32_t i = 0; i < nlibs && ent + 24 <= sz; i++, ent += 24) {
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
					if (!strcmp(key, soname) && !strstr(val, "/stubs/") && !is_self_file(val)) {
						snprintf(out, outlen, "%s", val);
						found = 1;
						break;
					}
				}
			}
			munmap((void *)m, sz);
		}
	}
	close(fd);
	return found;
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

static void real_load_locked(void)
{
	self_identify();
	const char *env = getenv("GPUEXT_REAL_LIBCUDA");
	if (env && *env) {
		if (!try_open(env, true))
			pr_warn("the real driver named by GPUEXT_REAL_LIBCUDA could not be loaded");
		goto out;
	}
	const char *llp = getenv("LD_LIBRARY_PATH");
	if (llp) {
		char *dup = strdup(llp), *save = NULL;
		for (char *d = dup ? strtok_r(dup, ":", &save) : NULL; d; d = strtok_r(NULL, ":", &save)) {
			char p[4096];
			if (strstr(d, "/stubs"))
				continue;
			snprintf(p, sizeof(p), "%s/libcuda.so.1", d);
			if (access(p, R_OK) == 0 && !is_self_file(p) && try_open(p, false))
				break;
		}
		free(dup);
		if (real_handle)
			goto out;
	}
	char p[4096];
	if (ld_cache_lookup("libcuda.so.1", p, sizeof(p)) && try_open(p, false))
		goto out;
	for (size_t i = 0; i < GX_ARRAY_SIZE(std_paths); i++)
		if (access(std_paths[i], R_OK) == 0 && !is_self_file(std_paths[i]) && try_open(std_paths[i], false))
			goto out;
out:
	if (real_handle) {
		pr_info("real driver: %s", real_path);
		__atomic_store_n(&real_state, 1, __ATOMIC_RELEASE);
	} else {
		pr_warn("no real libcuda.so.1 found (set GPUEXT_REAL_LIBCUDA=/path/to/libcuda.so.1); "
			"CUDA calls will fail");
		__atomic_store_n(&real_state, -1, __ATOMIC_RELEASE);
	}
}

void *gx_real_handle(void)
{
	int s = __atomic_load_n(&real_state, __ATOMIC_ACQUIRE);
	if (s == 0) {
		pthread_mutex_lock(&real_lock);
		if (real_state == 0)
			real_load_locked();
		pthread_mutex_unlock(&real_lock);
		s = real_state;
	}
	return s > 0 ? real_handle : NULL;
}

const char *gx_real_path(void)
{
	return gx_real_handle() ? real_path : NULL;
}

void *gx_real_sym(unsigned i)
{
	void *h = gx_real_handle();
	if (!h || i >= GX_NR_SYMS)
		return NULL;
	void *p = dlsym(h, gx_sym_names[i]);
	return p && !gx_is_ours(p) ? p : NULL;
}

static CUresult gx_unresolved(void)
{
	return CUDA_ERROR_NOT_FOUND;
}

static CUresult gx_nodriver(void)
{
	return CUDA_ERROR_NOT_INITIALIZED;
}

void *gx_resolve_slot(unsigned i)
{
	if (i >= GX_NR_SYMS)
		return (void *)gx_unresolved;
	void *p = gx_real_sym(i);
	if (!p) {
		if (gx_real_handle()) {
			pr_info("%s: not in the real driver; calls return CUDA_ERROR_NOT_FOUND", gx_sym_names[i]);
			p = (void *)gx_unresolved;
		} else {
			p = (void *)gx_nodriver;
		}
	}
	__atomic_store_n(&gx_slots[i], p, __ATOMIC_RELEASE);
	return p;
}

int gx_sym_find(const char *name)
{
	if (!name)
		return -1;
	int lo = 0, hi = GX_NR_SYMS - 1;
	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		int c = strcmp(name, gx_sym_names[mid]);
		if (!c)
			return mid;
		if (c < 0)
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	return -1;
}

__attribute__((constructor)) static void real_init(void)
{
	gx_lock_register(&real_lock, GX_LOCK_REAL);
}
