/* tenancy_internal.h — the shim's side of tenant scheduling (tenant.c): launches
 * of this process gated against the other tenants of the GPU. */
#ifndef SHIM_TENANCY_INTERNAL_H
#define SHIM_TENANCY_INTERNAL_H

#include "common/gx_tls.h"
#include "shim/shim_internal.h"

/* After gx_hostpolicy_init, at cuInit: on when this process is a tenant
 * (GPUEXT_TENANT*) or the scheduling policy has task_launch. */
void gx_tenancy_init(void);
/* A host policy was attached or detached live: ask its task_launch, or no
 * longer (tenant.c). */
void gx_tenancy_policy_changed(void);

/* Set by tenant.c's launch callback on this thread when the launch about to
 * go should be tracked; launch.c then calls gx_tenancy_launched with the
 * driver's result, right after the real launch. */
extern __thread int gx_tenancy_track GX_TLS_IE;
void gx_tenancy_launched(CUresult rc);

/* Graph launches (graph_exec.c) of a tenant with a GPU share: held by the
 * share and the window like a kernel launch, then tracked as one launch
 * whose GPU time is the graph's (docs/limits.md). gx_tenancy_graphs is the
 * one branch a cuGraphLaunch pays when this process is no tenant; when
 * gx_tenancy_graph_launch returns true, call gx_tenancy_launched with the
 * driver's result right after the real launch. */
extern bool gx_tenancy_graphs;
#define GX_TENANCY_GRAPHS() __builtin_expect(__atomic_load_n(&gx_tenancy_graphs, __ATOMIC_RELAXED), 0)
bool gx_tenancy_graph_launch(CUstream s);

/* ---- between tenant.c and tenant_done.c ---- */
#include "tenant/gx_tenant.h"
#define GX_TENANCY_MAX_DEVS 64
uint64_t gx_tenancy_now(void); /* CLOCK_MONOTONIC ns, the table's clock */
/* Record a completion event after the launch just made on s; 0, or -errno
 * (not tracked: no room, or the event could not be recorded). */
int gx_tenancy_track_launch(CUcontext ctx, CUstream s, struct gx_tn *tn, uint64_t now);
/* The completion thread: started with the first tenant entry (polling every
 * interval_ns, 0: by class), stopped at exit, forgotten in a forked child. */
int gx_tenancy_poller_start(struct gx_tn *tn, uint64_t interval_ns);
void gx_tenancy_poller_stop(void);
void gx_tenancy_poller_forget(void);
/* A launch went into a stream being captured: the completion thread makes
 * no driver call for a while (a query from another thread during a capture
 * in global mode could invalidate it). */
void gx_tenancy_capturing(void);
/* A context is being destroyed: its pending launches count as complete. */
void gx_tenancy_ctx_gone(CUcontext ctx);

#endif
