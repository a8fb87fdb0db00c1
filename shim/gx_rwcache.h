/* gx_rwcache.h — rewritten PTX kept in the process, so a module loaded in
 * several contexts (one per GPU, or several on one GPU) is rewritten once
 * per device architecture. Key: two 64-bit hashes and the length of the
 * PTX text, the arch it is rewritten for, and the bytes of the rewrite
 * options (hooks, policy code and bindings — pointers that identify the
 * policy build for that arch, so a different build is a different key).
 * Bounded by GPUEXT_RWCACHE_MB (default 256; 0 turns the cache off); the
 * oldest entries go first. Thread-safe; its lock is registered for fork. */
#ifndef GX_RWCACHE_H
#define GX_RWCACHE_H

#include <stddef.h>
#include <stdint.h>

struct gx_rwc_key {
	uint64_t h1, h2;
	size_t len;
	unsigned sm;
};

void gx_rwc_key(struct gx_rwc_key *k, const void *ptx, size_t len, unsigned sm, const void *opts, size_t opts_len);
/* A malloc'd, NUL-terminated copy of the cached rewrite: 0, or -ENOENT. */
int gx_rwc_get(const struct gx_rwc_key *k, char **ptx, size_t *len, unsigned *nr_hooks);
void gx_rwc_put(const struct gx_rwc_key *k, const char *ptx, size_t len, unsigned nr_hooks);
/* Counters, for tests and the debug log. */
void gx_rwc_stats(unsigned long *hits, unsigned long *misses, size_t *entries, size_t *bytes);
void gx_rwc_clear(void);

#endif
