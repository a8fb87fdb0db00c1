/* graph.c — kernel nodes of CUDA graphs. A node launches later, from the
 * graph, without passing through cuLaunchKernel: so the node's parameters
 * go through the same GX_EV_GRAPH_KERNEL_NODE subscribers (which may swap
 * the function or the geometry) when the node is added or updated. Legacy
 * (v1) parameter structs are widened to the v2 form for subscribers. */
#include <string.h>

#include "shim/graph_internal.h"
#include "shim/memlimit_internal.h"
#include "shim/shim_ev_internal.h"
#include "shim/tables_internal.h"

/* Fill ev from a v2 struct, run subscribers; *out gets the (maybe edited)
 * params. Returns a veto or CUDA_SUCCESS. */
static CUresult node_event(CUgraphNode node, CUgraphExec exec, const CUDA_KERNEL_NODE_PARAMS *in,
			   CUDA_KERNEL_NODE_PARAMS *out)
{
	struct gx_event ev = { .kind = GX_EV_GRAPH_KERNEL_NODE };
	char name[512];
	ev.graph.node = node;
	ev.graph.exec = exec;
	ev.graph.params = *in;
	CUcontext c = NULL;
	if (REAL(cuCtxGetCurrent)(&c) == CUDA_SUCCESS)
		ev.ctx = c;
	void *h = in->func ? (void *)in->func : (void *)in->kern;
	if (h && gx_tab_func_info(ev.ctx, h, name, sizeof(name), NULL, NULL) == 0)
		ev.graph.name = name;
	CUresult veto = gx_ev_raise(&ev);
	*out = ev.graph.params;
	return veto;
}

static bool want(void)
{
	return gx_ev_on(GX_EV_GRAPH_KERNEL_NODE) && !gx_ev_nested();
}

static void v1_to_v2(const CUDA_KERNEL_NODE_PARAMS_v1 *a, CUDA_KERNEL_NODE_PARAMS *b)
{
	memset(b, 0, sizeof(*b));
	b->func = a->func;
	b->gridDimX = a->gridDimX, b->gridDimY = a->gridDimY, b->gridDimZ = a->gridDimZ;
	b->blockDimX = a->blockDimX, b->blockDimY = a->blockDimY, b->blockDimZ = a->blockDimZ;
	b->sharedMemBytes = a->sharedMemBytes;
	b->kernelParams = a->kernelParams;
	b->extra = a->extra;
}

static void v2_to_v1(const CUDA_KERNEL_NODE_PARAMS *b, CUDA_KERNEL_NODE_PARAMS_v1 *a)
{
	a->func = b->func;
	a->gridDimX = b->gridDimX, a->gridDimY = b->gridDimY, a->gridDimZ = b->gridDimZ;
	a->blockDimX = b->blockDimX, a->blockDimY = b->blockDimY, a->blockDimZ = b->blockDimZ;
	a->sharedMemBytes = b->sharedMemBytes;
	a->kernelParams = b->kernelParams;
	a->extra = b->extra;
}

GX_EXPORT CUresult cuGraphAddKernelNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
					   size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
	if (!want() || !nodeParams)
		return REAL(cuGraphAddKernelNode_v2)(phGraphNode, hGraph, dependencies, numDependencies, nodeParams);
	CUDA_KERNEL_NODE_PARAMS p;
	CUresult veto = node_event(NULL, NULL, nodeParams, &p);
	if (veto != CUDA_SUCCESS)
		return veto;
	return REAL(cuGraphAddKernelNode_v2)(phGraphNode, hGraph, dependencies, numDependencies, &p);
}

GX_EXPORT CUresult cuGraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
					size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
	if (!want() || !nodeParams)
		return REAL(cuGraphAddKernelNode)(phGraphNode, hGraph, dependencies, numDependencies, nodeParams);
	CUDA_KERNEL_NODE_PARAMS w, p;
	CUDA_KERNEL_NODE_PARAMS_v1 q;
	v1_to_v2(nodeParams, &w);
	CUresult veto = node_event(NULL, NULL, &w, &p);
	if (veto != CUDA_SUCCESS)
		return veto;
	v2_to_v1(&p, &q);
	return REAL(cuGraphAddKernelNode)(phGraphNode, hGraph, dependencies, numDependencies, &q);
}

GX_EXPORT CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
	if (!want() || !nodeParams)
		return REAL(cuGraphKernelNodeSetParams_v2)(hNode, nodeParams);
	CUDA_KERNEL_NODE_PARAMS p;
	CUresult veto = node_event(hNode, NULL, nodeParams, &p);
	if (veto != CUDA_SUCCESS)
		return veto;
	return REAL(cuGraphKernelNodeSetParams_v2)(hNode, &p);
}

GX_EXPORT CUresult cuGraphKernelNodeSetParams(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
	if (!want() || !nodeParams)
		return REAL(cuGraphKernelNodeSetParams)(hNode, nodeParams);
	CUDA_KERNEL_NODE_PARAMS w, p;
	CUDA_KERNEL_NODE_PARAMS_v1 q;
	v1_to_v2(nodeParams, &w);
	CUresult veto = node_event(hNode, NULL, &w, &p);
	if (veto != CUDA_SUCCESS)
		return veto;
	v2_to_v1(&p, &q);
	return REAL(cuGraphKernelNodeSetParams)(hNode, &q);
}

GX_EXPORT CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec hGraphExec, CUgraphNode hNode,
						     const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
	if (!want() || !nodeParams)
		return gx_graph_exec_kernel_set(REAL(cuGraphExecKernelNodeSetParams_v2)(hGraphExec, hNode, nodeParams),
						hGraphExec, hNode, nodeParams ? nodeParams->func : NULL,
						nodeParams ? nodeParams->kern : NULL);
	CUDA_KERNEL_NODE_PARAMS p;
	CUresult veto = node_event(hNode, hGraphExec, nodeParams, &p);
	if (veto != CUDA_SUCCESS)
		return veto;
	return gx_graph_exec_kernel_set(REAL(cuGraphExecKernelNodeSetParams_v2)(hGraphExec, hNode, &p), hGraphExec,
					hNode, p.func, p.kern);
}

GX_EXPORT CUresult cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
						  const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
	if (!want() || !nodeParams)
		return gx_graph_exec_kernel_set(REAL(cuGraphExecKernelNodeSetParams)(hGraphExec, hNode, nodeParams),
						hGraphExec, hNode, nodeParams ? nodeParams->func : NULL, NULL);
	CUDA_KERNEL_NODE_PARAMS w, p;
	CUDA_KERNEL_NODE_PARAMS_v1 q;
	v1_to_v2(nodeParams, &w);
	CUresult veto = node_event(hNode, hGraphExec, &w, &p);
	if (veto != CUDA_SUCCESS)
		return veto;
	v2_to_v1(&p, &q);
	return gx_graph_exec_kernel_set(REAL(cuGraphExecKernelNodeSetParams)(hGraphExec, hNode, &q), hGraphExec, hNode,
					q.func, NULL);
}

/* The generic node API (cuGraphAddNode & co, CUDA 12.2+): kernel nodes go
 * through the same subscribers; other node types are not touched (some,
 * like memory-allocation nodes, return values in the caller's struct). */
static bool kernel_node(const CUgraphNodeParams *p)
{
	return p && p->type == CU_GRAPH_NODE_TYPE_KERNEL && want();
}

static CUresult generic_event(CUgraphNode node, CUgraphExec exec, const CUgraphNodeParams *in, CUgraphNodeParams *out)
{
	CUDA_KERNEL_NODE_PARAMS k, e;
	_Static_assert(sizeof(k) == sizeof(in->kernel), "kernel node params v2/v3 layouts differ");
	memcpy(&k, &in->kernel, sizeof(k));
	CUresult veto = node_event(node, exec, &k, &e);
	*out = *in;
	memcpy(&out->kernel, &e, sizeof(e));
	return veto;
}

/* Memory nodes count against the tenant's budget (memlimit.c). */
CUresult gx_ml_graph_node(CUgraphNodeParams *p, CUresult (*add)(void *), void *arg);
static bool mem_node(const CUgraphNodeParams *p)
{
	return GX_ML_ON() && p && (p->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC || p->type == CU_GRAPH_NODE_TYPE_MEM_FREE);
}

struct add_args {
	CUgraphNode *n;
	CUgraph g;
	const CUgraphNode *d;
	const CUgraphEdgeData *e;
	size_t nd;
	CUgraphNodeParams *p;
};

static CUresult add_v2(void *a)
{
	struct add_args *x = a;
	return REAL(cuGraphAddNode_v2)(x->n, x->g, x->d, x->e, x->nd, x->p);
}

static CUresult add_v1(void *a)
{
	struct add_args *x = a;
	return REAL(cuGraphAddNode)(x->n, x->g, x->d, x->nd, x->p);
}

GX_EXPORT CUresult cuGraphAddNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
				     const CUgraphEdgeData *dependencyData, size_t numDependencies,
				     CUgraphNodeParams *nodeParams)
{
	if (mem_node(nodeParams)) {
		struct add_args a = { phGraphNode, hGraph, dependencies, dependencyData, numDependencies, nodeParams };
		return gx_ml_graph_node(nodeParams, add_v2, &a);
	}
	if (!kernel_node(nodeParams))
		return REAL(cuGraphAddNode_v2)(phGraphNode, hGraph, dependencies, dependencyData, numDependencies,
					       nodeParams);
	CUgraphNodeParams p;
	CUresult veto = generic_event(NULL, NULL, nodeParams, &p);
	if (veto != CUDA_SUCCESS)
		return veto;
	return REAL(cuGraphAddNode_v2)(phGraphNode, hGraph, dependencies, dependencyData, numDependencies, &p);
}

GX_EXPORT CUresult cuGraphAddNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
				  size_t numDependencies, CUgraphNodeParams *nodeParams)
{
	if (mem_node(nodeParams)) {
		struct add_args a = { phGraphNode, hGraph, dependencies, NULL, numDependencies, nodeParams };
		return gx_ml_graph_node(nodeParams, add_v1, &a);
	}
	if (!kernel_node(nodeParams))
		return REAL(cuGraphAddNode)(phGraphNode, hGraph, dependencies, numDependencies, nodeParams);
	CUgraphNodeParams p;
	CUresult veto = generic_event(NULL, NULL, nodeParams, &p);
	if (veto != CUDA_SUCCESS)
		return veto;
	return REAL(cuGraphAddNode)(phGraphNode, hGraph, dependencies, numDependencies, &p);
}

GX_EXPORT CUresult cuGraphNodeSetParams(CUgraphNode hNode, CUgraphNodeParams *nodeParams)
{
	if (!kernel_node(nodeParams))
		return REAL(cuGraphNodeSetParams)(hNode, nodeParams);
	CUgraphNodeParams p;
	CUresult veto = generic_event(hNode, NULL, nodeParams, &p);
	if (veto != CUDA_SUCCESS)
		return veto;
	return REAL(cuGraphNodeSetParams)(hNode, &p);
}

/* After the driver's call: the exec's kernel list follows (graph_exec.c). */
static CUresult exec_node_set(CUresult rc, CUgraphExec e, CUgraphNode n, const CUgraphNodeParams *p)
{
	if (p && p->type == CU_GRAPH_NODE_TYPE_KERNEL)
		return gx_graph_exec_kernel_set(rc, e, n, p->kernel.func, p->kernel.kern);
	if (p && p->type == CU_GRAPH_NODE_TYPE_GRAPH)
		return gx_graph_exec_child_set(rc, e, n, p->graph.graph);
	return rc;
}

GX_EXPORT CUresult cuGraphExecNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode, CUgraphNodeParams *nodeParams)
{
	if (!kernel_node(nodeParams))
		return exec_node_set(REAL(cuGraphExecNodeSetParams)(hGraphExec, hNode, nodeParams), hGraphExec, hNode,
				     nodeParams);
	CUgraphNodeParams p;
	CUresult veto = generic_event(hNode, hGraphExec, nodeParams, &p);
	if (veto != CUDA_SUCCESS)
		return veto;
	return exec_node_set(REAL(cuGraphExecNodeSetParams)(hGraphExec, hNode, &p), hGraphExec, hNode, &p);
}
