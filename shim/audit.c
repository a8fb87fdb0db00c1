/* audit.c — optional LD_AUDIT module (gpuext-run --audit). LD_LIBRARY_PATH
 * only affects searches by name; a program that dlopens
 * "/usr/lib/x86_64-linux-gnu/libcuda.so.1" by absolute path would bypass
 * the shim. The dynamic linker asks this module about every search, and we
 * answer the shim's path for any libcuda.so[.1] — except when the shim itself
 * is the one loading (it opens the real driver by path). */
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char shim_path[4096];
static uintptr_t *shim_cookie;

__attribute__((visibility("default"))) unsigned int la_version(unsigned int version)
{
	const char *d = getenv("TRITON_LIBCUDA_PATH"); /* set by gpuext-run to the shim's folder */
	if (d && *d)
		snprintf(shim_path, sizeof(shim_path), "%s/libcuda.so.1", d);
	return version < LAV_CURRENT ? version : LAV_CURRENT;
}

__attribute__((visibility("default"))) unsigned int la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie)
{
	(void)lmid;
	if (shim_path[0] && map->l_name && !strcmp(map->l_name, shim_path))
		shim_cookie = cookie;
	return 0;
}

static int is_libcuda(const char *name)
{
	const char *b = strrchr(name, '/');
	b = b ? b + 1 : name;
	return !strcmp(b, "libcuda.so.1") || !strcmp(b, "libcuda.so");
}

__attribute__((visibility("default"))) char *la_objsearch(const char *name, uintptr_t *cookie, unsigned int flag)
{
	if (!shim_path[0] || flag != LA_SER_ORIG || !strchr(name, '/') || !is_libcuda(name))
		return (char *)name;
	if (cookie && cookie == shim_cookie)
		return (char *)name; /* the shim opening the real driver */
	if (!strcmp(name, shim_path))
		return (char *)name;
	return shim_path;
}
