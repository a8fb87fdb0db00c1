/* graph_exec.c — kernels run through CUDA graphs, as launches of their
 * kernels. A graph launch runs its kernel nodes without passing through
 * cuLaunchKernel, so a program that replays graphs (XLA runs each training
 * step as one) would show a handful of launches. When an exec is
 * instantiated (every variant), its graph is walked once — cuGraphGetNodes, kernel
 * nodes' parameters, child graphs recursively — into a list of (kernel,
 * nodes); each cuGraphLaunch[_ptsz] the driver accepts then raises
 * GX_EV_GRAPH_LAUNCH with that list: one lookup per graph launch. Changes
 * to an exec (cuGraphExecUpdate, cuGraphExec{Kernel,ChildGraph,}NodeSetParams)
 * give it a new list (a new gen, the old one's GX_EV_GRAPH_EXEC_DESTROY);
 * cuGraphExecDestroy frees it.
 *
 * Every exec gets its list at instantiation, subscriber or not (unless
 * GPUEXT_DISABLE): a tool attached later (`gpuext attach`, shim/live.c)
 * then counts the kernels of graphs made before it. That walk is a few
 * driver queries per node, once per instantiate or update, never per
 * launch.
 *
 * Costs: with no GX_EV_GRAPH_LAUNCH subscriber, one relaxed load per launch
 * call. Known limits: node types other than kernel and child graph
 * (conditional bodies, device-launched graphs) are not walked; concurrent
 * use of one exec from several threads (already unsafe for the driver) may
 * see a stale list. */
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "shim/graph_internal.h"
#include "shim/shim_ev_internal.h"
#include "shim/tables_internal.h"
#include "shim/tenancy_internal.h"

#define WALK_DEPTH 16

struct gnode {
	CUgraphNode node;
	CUgraphNode top; /* the exec's top-level node it comes from (itself, or a child graph node) */
	CUfunction func;
	int is_kernel;
};

struct gexec {
	CUgraphExec exec;
	unsigned long long gen;
	struct gnode *n;
	unsigned nr_n, cap_n;
	struct gx_graph_kernel *k;
	unsigned nr_k;
	UT_hash_handle hh;
};

static pthread_mutex_t exec_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gexec *execs;
static unsigned nr_execs; /* read without the lock: is there anything to free? */
static unsigned long long next_gen;

static bool want(void)
{
	return gx_ev_on(GX_EV_GRAPH_LAUNCH) && !gx_ev_nested();
}

/* Live attach (live.c) lists every exec from cuInit on, so that one made
 * before an attach can be told apart and its kernel nodes counted: a walk
 * per instantiate, nothing per launch. */
static bool track;

void gx_graph_exec_track(void)
{
	__atomic_store_n(&track, true, __ATOMIC_RELAXED);
}

unsigned long long gx_graph_exec_gen(void)
{
	return __atomic_load_n(&next_gen, __ATOMIC_RELAXED);
}

/* Lists are kept from instantiation whether or not anybody subscribes yet
 * (a tool may attach later, metrics count kernel nodes); GPUEXT_DISABLE
 * forwards only. */
static bool listing(void)
{
	return !gx_config.disabled && !gx_ev_nested();
}

static int node_add(struct gexec *x, CUgraphNode node, CUgraphNode top, CUfunction f, int is_kernel)
{
	if (x->nr_n == x->cap_n) {
		unsigned cap = x->cap_n ? x->cap_n * 2 : 16;
		struct gnode *n = realloc(x->n, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		x->n = n, x->cap_n = cap;
	}
	x->n[x->nr_n++] = (struct gnode){ node, top, f, is_kernel };
	return 0;
}

/* The kernel nodes of g (and of its child graphs) into x; top: the node of
 * the exec's own graph they hang from (NULL: each node itself). */
static int walk(struct gexec *x, CUgraph g, CUgraphNode top, int depth)
{
	size_t n = 0;
	if (depth > WALK_DEPTH || REAL(cuGraphGetNodes)(g, NULL, &n) != CUDA_SUCCESS)
		return -EIO;
	if (!n)
		return 0;
	CUgraphNode *nodes = calloc(n, sizeof(*nodes));
	if (!nodes)
		return -ENOMEM;
	int ret = REAL(cuGraphGetNodes)(g, nodes, &n) == CUDA_SUCCESS ? 0 : -EIO;
	for (size_t i = 0; !ret && i < n; i++) {
		CUgraphNodeType t;
		if (REAL(cuGraphNodeGetType)(nodes[i], &t) != CUDA_SUCCESS)
			continue;
		if (t == CU_GRAPH_NODE_TYPE_KERNEL) {
			CUDA_KERNEL_NODE_PARAMS p = { 0 };
			if (REAL(cuGraphKernelNodeGetParams_v2)(nodes[i], &p) != CUDA_SUCCESS)
				continue;
			bool k = !p.func && p.kern;
			ret = node_add(x, nodes[i], top ? top : nodes[i], k ? (CUfunction)p.kern : p.func, k);
		} else if (t == CU_GRAPH_NODE_TYPE_GRAPH) {
			CUgraph child = NULL;
			if (REAL(cuGraphChildGraphNodeGetGraph)(nodes[i], &child) == CUDA_SUCCESS && child)
				ret = walk(x, child, top ? top : nodes[i], depth + 1);
		}
	}
	free(nodes);
	return ret;
}

static void kernels_free(struct gx_graph_kernel *k, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		free((char *)k[i].name);
	free(k);
}

/* x's kernel list from its nodes, with a new gen. */
static int kernels_build(struct gexec *x)
{
	struct gx_graph_kernel *k = calloc(x->nr_n ? x->nr_n : 1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	unsigned nk = 0;
	CUcontext c = NULL;
	REAL(cuCtxGetCurrent)(&c);
	for (unsigned i = 0; i < x->nr_n; i++) {
		unsigned j = 0;
		while (j < nk && k[j].func != x->n[i].func)
			j++;
		if (j == nk) {
			char name[512];
			k[nk].func = x->n[i].func;
			k[nk].is_kernel = x->n[i].is_kernel;
			if (x->n[i].func && !gx_tab_func_info(c, x->n[i].func, name, sizeof(name), NULL, NULL))
				k[nk].name = strdup(name);
			nk++;
		}
		k[j].nodes++;
	}
	kernels_free(x->k, x->nr_k);
	x->k = k;
	x->nr_k = nk;
	x->gen = __atomic_add_fetch(&next_gen, 1, __ATOMIC_RELAXED);
	return 0;
}

static void gexec_free(struct gexec *x)
{
	if (!x)
		return;
	kernels_free(x->k, x->nr_k);
	free(x->n);
	free(x);
}

static void raise_gone(CUgraphExec e, unsigned long long gen)
{
	if (!gen || !gx_ev_on(GX_EV_GRAPH_EXEC_DESTROY) || gx_ev_nested())
		return;
	struct gx_event ev = { .kind = GX_EV_GRAPH_EXEC_DESTROY };
	ev.glaunch.exec = e;
	ev.glaunch.gen = gen;
	gx_ev_raise(&ev);
}

/* Do a and b list the same kernels, node for node? */
static bool same_kernels(const struct gexec *a, const struct gexec *b)
{
	if (a->nr_k != b->nr_k || a->nr_n != b->nr_n)
		return false;
	for (unsigned i = 0; i < a->nr_k; i++)
		if (a->k[i].func != b->k[i].func || a->k[i].nodes != b->k[i].nodes ||
		    a->k[i].is_kernel != b->k[i].is_kernel)
			return false;
	return true;
}

/* Put x in the table as e's list (x NULL: drop e's), the old one freed. A
 * change that leaves the same kernels (XLA updates its command buffers'
 * execs with new buffer addresses, often every step) keeps the old gen: the
 * subscribers' per-list state (counts, the timing sample) goes on. */
static void gexec_replace(CUgraphExec e, struct gexec *x)
{
	struct gexec *old;
	pthread_mutex_lock(&exec_lock);
	HASH_FIND_PTR(execs, &e, old);
	if (old) {
		HASH_DEL(execs, old);
		nr_execs--;
		if (x && same_kernels(old, x)) {
			x->gen = old->gen;
			old->gen = 0; /* nothing went away */
		}
	}
	if (x) {
		x->exec = e;
		HASH_ADD_PTR(execs, exec, x);
		nr_execs++;
	}
	pthread_mutex_unlock(&exec_lock);
	if (old)
		raise_gone(e, old->gen);
	gexec_free(old);
}

/* A new list for exec e from graph g. */
static void instantiated(CUgraphExec e, CUgraph g)
{
	struct gexec *x = calloc(1, sizeof(*x));
	if (!x || walk(x, g, NULL, 0) || kernels_build(x)) {
		pr_debug("graph: cannot list the kernels of an exec; its launches count without them");
		gexec_free(x);
		gexec_replace(e, NULL);
		return;
	}
	gexec_replace(e, x);
}

static CUresult inst_done(CUresult rc, CUgraphExec *pe, CUgraph g)
{
	if (rc == CUDA_SUCCESS && pe && *pe && listing())
		instantiated(*pe, g);
	return rc;
}

GX_EXPORT CUresult cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
				      char *logBuffer, size_t bufferSize)
{
	return inst_done(REAL(cuGraphInstantiate)(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize), phGraphExec,
			 hGraph);
}

GX_EXPORT CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
					 char *logBuffer, size_t bufferSize)
{
	return inst_done(REAL(cuGraphInstantiate_v2)(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize),
			 phGraphExec, hGraph);
}

GX_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags)
{
	return inst_done(REAL(cuGraphInstantiateWithFlags)(phGraphExec, hGraph, flags), phGraphExec, hGraph);
}

GX_EXPORT CUresult cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
						CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
	return inst_done(REAL(cuGraphInstantiateWithParams)(phGraphExec, hGraph, instantiateParams), phGraphExec,
			 hGraph);
}

GX_EXPORT CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *phGraphExec, CUgraph hGraph,
						     CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
	return inst_done(REAL(cuGraphInstantiateWithParams_ptsz)(phGraphExec, hGraph, instantiateParams), phGraphExec,
			 hGraph);
}

/* Before a launch: e's kernel list into ev (one lookup per graph launch),
 * and GX_EV_GRAPH_LAUNCH_PRE to its subscribers (a timing event recorded
 * before the graph: attach/devrt.c samples graph launches' GPU time). */
static __attribute__((noinline)) void launching(struct gx_event *ev, CUgraphExec e, CUstream s)
{
	struct gexec *x;
	memset(ev, 0, sizeof(*ev));
	ev->kind = GX_EV_GRAPH_LAUNCH_PRE;
	ev->glaunch.exec = e;
	ev->glaunch.stream = s;
	pthread_mutex_lock(&exec_lock);
	HASH_FIND_PTR(execs, &e, x);
	if (x) {
		ev->glaunch.gen = x->gen;
		ev->glaunch.nr_kernels = x->nr_k;
		ev->glaunch.nodes = x->nr_n;
		ev->glaunch.kernels = x->k;
	}
	pthread_mutex_unlock(&exec_lock);
	if (gx_ev_on(GX_EV_GRAPH_LAUNCH_PRE))
		gx_ev_raise(ev);
}

/* A launch the driver accepted: its kernel list to the subscribers. */
static __attribute__((noinline)) void launched(struct gx_event *ev)
{
	ev->kind = GX_EV_GRAPH_LAUNCH;
	gx_ev_raise(ev);
}

GX_EXPORT CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
	bool tracked = GX_TENANCY_GRAPHS() && gx_tenancy_graph_launch(hStream);
	bool w = want();
	struct gx_event ev;
	if (w)
		launching(&ev, hGraphExec, hStream);
	CUresult rc = REAL(cuGraphLaunch)(hGraphExec, hStream);
	if (tracked)
		gx_tenancy_launched(rc);
	if (w && rc == CUDA_SUCCESS)
		launched(&ev);
	return rc;
}

GX_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
	bool tracked = GX_TENANCY_GRAPHS() && gx_tenancy_graph_launch(hStream ? hStream : CU_STREAM_PER_THREAD);
	bool w = want();
	struct gx_event ev;
	if (w)
		launching(&ev, hGraphExec, hStream ? hStream : CU_STREAM_PER_THREAD);
	CUresult rc = REAL(cuGraphLaunch_ptsz)(hGraphExec, hStream);
	if (tracked)
		gx_tenancy_launched(rc);
	if (w && rc == CUDA_SUCCESS)
		launched(&ev);
	return rc;
}

static bool any(void)
{
	return __atomic_load_n(&nr_execs, __ATOMIC_RELAXED) != 0;
}

GX_EXPORT CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
	if (any())
		gexec_replace(hGraphExec, NULL);
	return REAL(cuGraphExecDestroy)(hGraphExec);
}

static CUresult update_done(CUresult rc, CUgraphExec e, CUgraph g)
{
	if (rc == CUDA_SUCCESS && listing())
		instantiated(e, g);
	return rc;
}

GX_EXPORT CUresult cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphNode *hErrorNode_out,
				     CUgraphExecUpdateResult *updateResult_out)
{
	return update_done(REAL(cuGraphExecUpdate)(hGraphExec, hGraph, hErrorNode_out, updateResult_out), hGraphExec,
			   hGraph);
}

GX_EXPORT CUresult cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphExecUpdateResultInfo *resultInfo)
{
	return update_done(REAL(cuGraphExecUpdate_v2)(hGraphExec, hGraph, resultInfo), hGraphExec, hGraph);
}

/* A copy of e's list to change (NULL: none, or no memory). */
static struct gexec *gexec_copy(CUgraphExec e)
{
	struct gexec *x, *y = NULL;
	pthread_mutex_lock(&exec_lock);
	HASH_FIND_PTR(execs, &e, x);
	if (x && (y = calloc(1, sizeof(*y))) && (y->n = malloc((x->nr_n ? x->nr_n : 1) * sizeof(*y->n)))) {
		memcpy(y->n, x->n, x->nr_n * sizeof(*y->n));
		y->nr_n = y->cap_n = x->nr_n;
	} else if (y) {
		free(y);
		y = NULL;
	}
	pthread_mutex_unlock(&exec_lock);
	return y;
}

CUresult gx_graph_exec_kernel_set(CUresult rc, CUgraphExec e, CUgraphNode node, CUfunction f, CUkernel k)
{
	if (rc != CUDA_SUCCESS || !any())
		return rc;
	struct gexec *y = gexec_copy(e);
	if (!y)
		return rc;
	bool changed = false;
	for (unsigned i = 0; i < y->nr_n; i++)
		if (y->n[i].node == node) {
			bool is_k = !f && k;
			changed |= y->n[i].func != (is_k ? (CUfunction)k : f);
			y->n[i].func = is_k ? (CUfunction)k : f;
			y->n[i].is_kernel = is_k;
		}
	if (changed && !kernels_build(y))
		gexec_replace(e, y);
	else
		gexec_free(y);
	return rc;
}

CUresult gx_graph_exec_child_set(CUresult rc, CUgraphExec e, CUgraphNode node, CUgraph child)
{
	if (rc != CUDA_SUCCESS || !any())
		return rc;
	struct gexec *y = gexec_copy(e);
	if (!y)
		return rc;
	unsigned k = 0;
	for (unsigned i = 0; i < y->nr_n; i++)
		if (y->n[i].top != node)
			y->n[k++] = y->n[i];
	y->nr_n = k;
	if (!walk(y, child, node, 1) && !kernels_build(y))
		gexec_replace(e, y);
	else
		gexec_free(y);
	return rc;
}

GX_EXPORT CUresult cuGraphExecChildGraphNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode, CUgraph childGraph)
{
	return gx_graph_exec_child_set(REAL(cuGraphExecChildGraphNodeSetParams)(hGraphExec, hNode, childGraph),
				       hGraphExec, hNode, childGraph);
}

/* Debug/test entry point, exported: the kernel list of an exec (up to max
 * entries into k; names stay valid until the exec changes). Returns the
 * number of distinct kernels, or -ENOENT. */
GX_EXPORT int gx_shim_graph_exec_kernels(CUgraphExec e, struct gx_graph_kernel *k, unsigned max, unsigned *nodes)
{
	struct gexec *x;
	int n = -ENOENT;
	pthread_mutex_lock(&exec_lock);
	HASH_FIND_PTR(execs, &e, x);
	if (x) {
		n = (int)x->nr_k;
		for (unsigned i = 0; i < x->nr_k && i < max; i++)
			k[i] = x->k[i];
		if (nodes)
			*nodes = x->nr_n;
	}
	pthread_mutex_unlock(&exec_lock);
	return n;
}

__attribute__((constructor)) static void graph_exec_init(void)
{
	gx_lock_register(&exec_lock, GX_LOCK_TABLES + 2);
}
