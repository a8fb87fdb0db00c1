/* hostpolicy_internal.h — host struct_ops policies in the shim (hostpolicy.c). */
#ifndef SHIM_HOSTPOLICY_INTERNAL_H
#define SHIM_HOSTPOLICY_INTERNAL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shim/shim_internal.h"

/* Attach the struct_ops entries of GPUEXT_POLICY (after cuInit succeeded). */
void gx_hostpolicy_init(void);
/* Is this file a host (struct_ops) policy object? Device-policy code skips
 * these entries of GPUEXT_POLICY. */
bool gx_hostpolicy_is_struct_ops(const char *path);
/* A device policy's gdev_mem_prefetch(addr, len), drained from the runtime
 * ring of `ctx` (devrt.c): the memory policy decides what to bring, issued
 * on the context's prefetch stream (or sent to gpuext.ko as a hint). No-op
 * without a host memory policy. Callable from any thread. */
void gx_hostpolicy_device_prefetch(CUcontext ctx, CUdevice dev, uint64_t addr, uint64_t len);
/* The scheduling policy's task_launch (shim/tenant.c asks it before each
 * launch of a tenant): whether there is one, and its decision (0, or
 * -ENOENT: none, or disabled — launches follow the runtime's default). */
struct gpu_tenant;
struct gpu_launch;
struct gx_hx_gate;
bool gx_hostpolicy_has_launch(void);
int gx_hostpolicy_launch(const struct gpu_tenant *t, const struct gpu_launch *l, struct gx_hx_gate *g);
/* Live attach (shim/live.c, docs/attach.md): load host policy entries
 * ("PATH[,knobs]") into an executor made now, or into the one attached
 * live already (one mem and one sched policy). 0, or -errno with a reason
 * in err (-EBUSY: host policies from the process's start, or gpuext.ko).
 * `names` gets the names attached now. */
int gx_hostpolicy_live_attach(const char *const *entries, unsigned nr, char *names, size_t nn, char *err, size_t en);
/* Is `name` a host policy attached live? */
bool gx_hostpolicy_live_has(const char *name);
/* The names attached live ("" if none). */
void gx_hostpolicy_live_list(char *names, size_t nn);
/* Detach `name` (one attached live; NULL: all): the executor's summary
 * into msg; the other policy of a pair is reloaded alone. 0 or -ENOENT. */
int gx_hostpolicy_live_detach(const char *name, char *msg, size_t n);
#endif
