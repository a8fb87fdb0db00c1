/* gx_libcuda — where NVIDIA's libcuda.so.1 may be, in the order the shim
 * tries it (shim/real.c) and `gpuext doctor` reports it (cli/doctor.c).
 * Only paths: opening a candidate, and recognising a copy of the shim, is
 * each caller's. No dlopen here, no logging. */
#ifndef GX_LIBCUDA_H
#define GX_LIBCUDA_H

#include <stdbool.h>

/* Called per candidate; return nonzero to stop the walk (that value is
 * then the walk's result). `explicit_path`: the path is GPUEXT_REAL_LIBCUDA,
 * tried alone and possibly missing. */
typedef int (*gx_libcuda_fn)(const char *path, bool explicit_path, void *arg);

/* The candidates: GPUEXT_REAL_LIBCUDA alone when set; else libcuda.so.1 in
 * each LD_LIBRARY_PATH folder (not a stubs folder), then the ld.so
 * cache's entries (x86-64, not in a stubs folder), then the usual driver folders. Only
 * readable files are offered, except the explicit one. Returns the last
 * callback's nonzero value, or 0 when no callback stopped the walk. */
int gx_libcuda_candidates(gx_libcuda_fn fn, void *arg);

/* Each x86-64 entry of /etc/ld.so.cache (the new format, what `ldconfig -p`
 * lists) for soname, in the cache's order: what the dynamic loader finds
 * for a program whose LD_LIBRARY_PATH does not name it. fn's
 * explicit_path is false. Returns as gx_libcuda_candidates. */
int gx_ldcache_each(const char *soname, gx_libcuda_fn fn, void *arg);

#endif
