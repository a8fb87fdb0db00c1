/* audit.c — optional LD_AUDIT module (gpuext-run --audit). LD_LIBRARY_PATH
 * only affects searches by name; a program that dlopens
 * "/usr/lib/x86_64-linux-gnu/libcuda.so.1" (or the versioned file behind it,
 * "/usr/local/nvidia/lib64/libcuda.so.580.159.04") by absolute path would
 * bypass the shim. The dynamic linker asks this module about every search,
 * and we answer the shim's path for any path naming the driver — except when
 * the shim itself is the one loading (it opens the real driver by path).
 *
 * "Naming the driver": the file name is libcuda.so, libcuda.so.1 or
 * libcuda.so.<version>, or the path is a symbolic link whose final target
 * has such a name (drivers are installed as a chain of links ending at the
 * versioned file; a program may hold any link of it). */
#include <dlfcn.h>
#include <link.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char shim_path[4096];
static struct stat shim_st;
static bool shim_st_ok;
static uintptr_t *shim_cookie;

__attribute__((visibility("default"))) unsigned int la_version(unsigned int version)
{
	const char *d = getenv("TRITON_LIBCUDA_PATH"); /* set by gpuext-run to the shim's folder */
	if (d && *d) {
		snprintf(shim_path, sizeof(shim_path), "%s/libcuda.so.1", d);
		shim_st_ok = stat(shim_path, &shim_st) == 0;
	}
	return version < LAV_CURRENT ? version : LAV_CURRENT;
}

/* libcuda.so, libcuda.so.1, libcuda.so.580.159.04: "libcuda.so" then
 * nothing or a dot and version characters. */
static bool driver_file_name(const char *path)
{
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	if (strncmp(b, "libcuda.so", 10))
		return false;
	b += 10;
	if (!*b)
		return true;
	if (*b != '.' || !b[1])
		return false;
	for (b++; *b; b++)
		if (!((*b >= '0' && *b <= '9') || *b == '.'))
			return false;
	return true;
}

static bool same_file_as_shim(const char *path)
{
	struct stat st;
	return shim_st_ok && stat(path, &st) == 0 && st.st_dev == shim_st.st_dev && st.st_ino == shim_st.st_ino;
}

__attribute__((visibility("default"))) unsigned int la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie)
{
	(void)lmid;
	if (!shim_path[0] || shim_cookie || !map->l_name || !*map->l_name)
		return 0;
	/* The shim, however the loader named it (a link of its folder, ...). */
	if (!strcmp(map->l_name, shim_path) || (driver_file_name(map->l_name) && same_file_as_shim(map->l_name)))
		shim_cookie = cookie;
	return 0;
}

static bool names_driver(const char *name)
{
	if (driver_file_name(name))
		return true;
	char real[PATH_MAX];
	return realpath(name, real) && driver_file_name(real);
}

__attribute__((visibility("default"))) char *la_objsearch(const char *name, uintptr_t *cookie, unsigned int flag)
{
	if (!shim_path[0] || flag != LA_SER_ORIG || !strchr(name, '/'))
		return (char *)name;
	if (cookie && cookie == shim_cookie)
		return (char *)name; /* the shim opening the real driver */
	if (!strcmp(name, shim_path) || !names_driver(name) || same_file_as_shim(name))
		return (char *)name;
	return shim_path;
}
