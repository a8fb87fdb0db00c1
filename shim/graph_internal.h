/* graph_internal.h — graph_exec.c's hooks for the exec-changing wrappers of
 * graph.c: after the driver's call, an exec's kernel list follows the
 * change. Each returns rc. */
#ifndef SHIM_GRAPH_INTERNAL_H
#define SHIM_GRAPH_INTERNAL_H

#include "shim/shim_internal.h"

/* cuGraphExecKernelNodeSetParams* / cuGraphExecNodeSetParams (kernel): node
 * now runs f (or, f NULL, the CUkernel k). */
CUresult gx_graph_exec_kernel_set(CUresult rc, CUgraphExec e, CUgraphNode node, CUfunction f, CUkernel k);
/* cuGraphExecChildGraphNodeSetParams / cuGraphExecNodeSetParams (child
 * graph): node now runs the graph child. */
CUresult gx_graph_exec_child_set(CUresult rc, CUgraphExec e, CUgraphNode node, CUgraph child);
/* List every exec from now on, subscribed to GX_EV_GRAPH_LAUNCH or not
 * (live.c, at cuInit). */
void gx_graph_exec_track(void);
/* The last kernel-list gen handed out: lists made later have a greater one. */
unsigned long long gx_graph_exec_gen(void);

#endif
