/* mcache_internal.h — the rewritten-module cache: a second start of an application
 * skips parsing and rewriting its PTX (the driver's own JIT cache,
 * ~/.nv/ComputeCache, then skips the JIT of the identical rewritten text).
 *
 *   $GPUEXT_CACHE_DIR (default $XDG_CACHE_HOME/gpuext, ~/.cache/gpuext)
 *     /modules/<32 hex digits>.gxmod    one rewritten PTX per key
 *
 * Key: a 128-bit hash of the input PTX, the rewrite options (hooks,
 * persistent transform, policy PTX and bindings, PTX ISA limit), gpuext's
 * version and build id, and the device arch. Files are mode 0600 in a 0700
 * folder, written to a temporary name and renamed; entries are checked
 * (header, sizes, hash of the content) and a corrupt one is ignored with one
 * log line and removed. The folder is capped (GPUEXT_CACHE_MAX_MB, default
 * 256): the least recently used entries go first. GPUEXT_CACHE=0 turns the
 * cache off. A folder not owned by the user, or writable by others, is not
 * used (someone else could plant code there).
 *
 * Beside each rewritten PTX, its compiled cubin (cubin.c, cubin_entry.h):
 *     /modules/<32 hex digits>.gxcubin  keyed by the rewritten PTX, the
 *                                       device arch and the driver version
 * so that a second start loads SASS and the driver JITs nothing. After the
 * user's folder, entries are read from the install's read-only cache,
 * $GPUEXT_SHARED_CACHE_DIR or <shim dir>/../share/gpuext/cache/modules
 * (docs/cache.md): owned by root or the user, not writable by others. */
#ifndef SHIM_MCACHE_INTERNAL_H
#define SHIM_MCACHE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gx_ptx_rewrite_opts;

struct gx_mcache_key {
	uint64_t h[2];
};

void gx_mcache_key(const char *ptx, size_t len, const struct gx_ptx_rewrite_opts *opts, unsigned dev_sm,
		   struct gx_mcache_key *k);
/* What an entry holds: the rewritten PTX and what the rewriter said. */
struct gx_mcache_entry {
	char *ptx;              /* NUL-terminated */
	size_t len;
	unsigned nr_hooks;
	unsigned nr_persistent;
	char *notes;            /* the rewriter's notes (res.log), or NULL */
};

/* 0 on a hit (e->ptx and e->notes malloc'd, the caller frees them); -ENOENT
 * on a miss or when the cache is off; another -errno for an entry that was
 * corrupt (logged, removed). */
int gx_mcache_get(const struct gx_mcache_key *k, struct gx_mcache_entry *e);
/* Store; 0 or -errno (failures are logged once at info, never fatal). */
int gx_mcache_put(const struct gx_mcache_key *k, const struct gx_mcache_entry *e);

/* The folder: 0 the user's (made when `create`), 1 the install's read-only
 * one. 0 or -errno (-ENOENT: none; -EACCES/-EPERM: refused, logged once). */
int gx_mcache_dir(int which, char *buf, size_t n, bool create);
/* The key of a rewritten PTX's cubin for a device arch and driver version. */
/* nopic: compiled with CU_JIT_POSITION_INDEPENDENT_CODE=0 (GPUEXT_CUBIN_PIC=0, cubin.c) */
/* Which compiler made a cubin (each has its own keys): ptxas (whole, the
 * default), the driver's linker, the linker without PIC (GPUEXT_CUBIN_PIC=0). */
enum { GX_CUBIN_BY_LINK, GX_CUBIN_BY_LINK_NOPIC, GX_CUBIN_BY_PTXAS };
void gx_mcache_cubin_key(const char *ptx, size_t len, unsigned sm, int driver, unsigned by, struct gx_mcache_key *k);
/* The content hash the entries' headers record. */
uint64_t gx_mcache_content_hash(const void *buf, size_t len);
/* GPUEXT_CACHE_MAX_MB in bytes: no entry is larger. */
size_t gx_mcache_cap(void);
/* Evict least recently used entries of both kinds over GPUEXT_CACHE_MAX_MB. */
void gx_mcache_enforce_cap(const char *dir);

#endif
