/* gx_persist.h — GPUEXT_PERSISTENT: kernels launched as persistent workers
 * (persist.c). */
#ifndef GX_PERSIST_H
#define GX_PERSIST_H

#include <stdbool.h>
#include <stddef.h>

struct gx_ptx_rewrite_opts;

/* enum gx_work_mode from GPUEXT_PERSISTENT (1/dynamic, static), -1 if off. */
int gx_persist_mode(void);
/* Before a rewrite: in persistent mode, ask for transformed copies (and
 * start following launches). Returns 1 if opts was changed. */
int gx_persist_rewrite_opts(struct gx_ptx_rewrite_opts *opts);
/* A module/library was loaded from PTX rewritten with `log` (the rewriter's
 * notes): remember its kernels that have a persistent copy. */
void gx_persist_module(void *handle, bool is_library, const char *log);

/* The copies named in a rewriter log ("persistent: K: copy C transformed
 * (work descriptor: parameter N ...)"); malloc'd array of malloc'd strings.
 * 0 or -ENOMEM (then *out holds the *n complete records). */
struct gx_persist_kernel {
	char *name, *copy;
	unsigned nparams;
};
int gx_persist_parse_log(const char *log, struct gx_persist_kernel **out, size_t *n);
/* Forget everything (tests). */
void gx_persist_reset(void);

#endif
