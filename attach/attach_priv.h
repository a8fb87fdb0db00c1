/* attach_priv.h — what policy.c and devrt.c share inside attach/. */
#ifndef GX_ATTACH_PRIV_H
#define GX_ATTACH_PRIV_H

#include "attach/gx_attach.h"
#include "common/gx_log.h"
#include "common/gx_util.h"

/* The process's host table, latched by the first gx_attach_rewrite_opts(). */
extern const struct gx_attach_host *gx_attach_env;
/* A real driver function: CU(cuMemAlloc_v2)(&p, n). */
#define CU(name) (gx_attach_env->cu->name)

/* devrt.c, used by policy.c: the runtime of n joined policies (n <=
 * GX_PMERGE_MAX, descriptions relocated by gx_pset_build). */
int gx_devrt_start(const struct gx_policy_desc *d, const char *const *tags, size_t n);
/* Make sure the current context has its device maps (before a rewrite). */
int gx_devrt_ctx_ready(void);

#endif
