/* gx_policy.h — device policies attached to the application (the shim's
 * side of devbpf): GPUEXT_POLICY / GPUEXT_TOOL select policy objects; their
 * verified PTX comes from the JIT cache (or libgxjit.so on a miss); every
 * module the shim rewrites gets its hooks; every context gets device maps
 * and a `struct gx_devrt`; a background thread drains rings and flushes maps
 * into the host copies under /dev/shm/gpuext-$UID/ (or $GPUEXT_SHM_DIR).
 * Any failure logs one line and the application runs without the policy. */
#ifndef GX_POLICY_H
#define GX_POLICY_H

#include "ptx-rewrite/gx_ptx.h"
#include "shim/gx_shim.h"

/* Fill hooks/policy/bindings for a module about to be rewritten (no-op when
 * no policy is active or it failed). Called by load.c's rewrite(). */
void gx_policy_rewrite_opts(struct gx_ptx_rewrite_opts *opts);

/* devrt.c, used by policy.c: the runtime of n joined policies (n <=
 * GX_PMERGE_MAX, descriptions relocated by gx_pset_build). */
struct gx_policy_desc;
int gx_devrt_start(const struct gx_policy_desc *d, const char *const *tags, size_t n);
/* Make sure the current context has its device maps (before a rewrite). */
int gx_devrt_ctx_ready(void);

#endif
