/* real.c — finding and binding NVIDIA's libcuda.so.1.
 *
 * We ARE libcuda.so.1, so the real driver is found by path, never by soname:
 * GPUEXT_REAL_LIBCUDA if set, else LD_LIBRARY_PATH directories, the ld.so
 * cache and the usual driver folders (common/gx_libcuda.c, shared with
 * `gpuext doctor`). Any candidate that is this very file
 * (same device and inode, or exporting our marker symbol) is skipped, so we
 * never call ourselves. The driver is opened RTLD_LOCAL on the first
 * forwarded call only: loading the shim does nothing (NVML keeps working). */
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/gx_libcuda.h"
#include "shim/shim_internal.h"

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

/* One candidate of gx_libcuda_candidates(): skip ourselves, stop at the
 * first that loads. */
static int real_candidate(const char *path, bool explicit_path, void *arg)
{
	(void)arg;
	if (!explicit_path && is_self_file(path))
		return 0;
	return try_open(path, explicit_path);
}

static void real_load_locked(void)
{
	self_identify();
	if (!gx_libcuda_candidates(real_candidate, NULL)) {
		const char *env = getenv("GPUEXT_REAL_LIBCUDA");
		if (env && *env)
			pr_warn("the real driver named by GPUEXT_REAL_LIBCUDA could not be loaded");
	}
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
