/* stats_internal.h — the per-process stats file (shim/stats.c). */
#ifndef GX_STATS_INTERNAL_H
#define GX_STATS_INTERNAL_H
#include <stdint.h>

#include "gpuext/gx_stats.h"

/* A module load ended so (why: the passed-through reason, or NULL). */
void gx_stats_module(enum gx_stats_module outcome, const char *why);
/* A tracked launch took ns from its call to its completion (tenants). */
void gx_stats_latency(uint64_t ns);
/* From a background thread: publish the file if GPUEXT_STATS_MS passed. */
void gx_stats_tick(void);
/* This process as a tenant into f (tenant_done.c): 0, or -ENOENT if none. */
int gx_tenancy_stats(struct gx_stats_file *f);
/* Host policies' counts into f (hostpolicy.c). */
void gx_hostpolicy_stats(struct gx_stats_file *f);

#endif
