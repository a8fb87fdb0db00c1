/* graph_app.c — CUDA graphs through the shim, for tests/attach/test_graphs.sh:
 * a graph of 3 kernel nodes (k, k, k2) and a child graph of one (late),
 * instantiated and launched 10 times: 40 kernel nodes run. Then the exec's
 * kernel list follows cuGraphExecKernelNodeSetParams, cuGraphExecUpdate and
 * cuGraphExecDestroy (the shim's gx_shim_graph_exec_kernels says what it
 * holds). argv: PTX file (entry_refs.ptx: kernels k, k2, late), launches,
 * mode ("plain", "changes", or "live STOPFILE": after the first launches,
 * one graph launch every 2 ms until STOPFILE exists, for a tool attached
 * meanwhile with `gpuext attach`; the exec was instantiated before it). */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/gx_util.h"
#include "gpuext/gx_events.h"

static int fail(const char *what, CUresult rc)
{
	printf("not ok - graph_app: %s (%d)\n", what, (int)rc);
	return 1;
}

static CUresult add_kernel(CUgraphNode *n, CUgraph g, CUfunction f)
{
	CUDA_KERNEL_NODE_PARAMS p = {
		.func = f, .gridDimX = 2, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 32, .blockDimY = 1, .blockDimZ = 1
	};
	static void *args[2];
	p.kernelParams = args;
	return cuGraphAddKernelNode_v2(n, g, NULL, 0, &p);
}

typedef int (*kernels_fn)(CUgraphExec, struct gx_graph_kernel *, unsigned, unsigned *);

/* "name:nodes,..." of an exec's kernel list, by kernel order of the list. */
static void list(kernels_fn get, CUgraphExec e, char *out, size_t n)
{
	struct gx_graph_kernel k[8];
	unsigned nodes = 0;
	int nk = get ? get(e, k, 8, &nodes) : -1;
	size_t at = (size_t)snprintf(out, n, "%d/%u", nk, nodes);
	for (int i = 0; i < nk && i < 8 && at < n; i++)
		at += (size_t)snprintf(out + at, n - at, " %s:%u", k[i].name ? k[i].name : "?", k[i].nodes);
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	char *ptx;
	size_t n;
	if (gx_read_file(argv[1], &ptx, &n, 1 << 20))
		return 2;
	int launches = atoi(argv[2]);
	CUresult rc;
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction k, k2, late;
	if ((rc = cuInit(0)) || (rc = cuDeviceGet(&dev, 0)) || (rc = cuDevicePrimaryCtxRetain(&ctx, dev)) ||
	    (rc = cuCtxSetCurrent(ctx)))
		return fail("init", rc);
	if ((rc = cuModuleLoadData(&mod, ptx)) || (rc = cuModuleGetFunction(&k, mod, "k")) ||
	    (rc = cuModuleGetFunction(&k2, mod, "k2")) || (rc = cuModuleGetFunction(&late, mod, "late")))
		return fail("module", rc);
	CUgraph g, child;
	CUgraphNode n1, n2, n3, nc, nl;
	if ((rc = cuGraphCreate(&g, 0)) || (rc = cuGraphCreate(&child, 0)) || (rc = add_kernel(&n1, g, k)) ||
	    (rc = add_kernel(&n2, g, k)) || (rc = add_kernel(&n3, g, k2)) || (rc = add_kernel(&nl, child, late)) ||
	    (rc = cuGraphAddChildGraphNode(&nc, g, NULL, 0, child)))
		return fail("graph", rc);
	CUgraphExec e;
	if ((rc = cuGraphInstantiateWithFlags(&e, g, 0)))
		return fail("cuGraphInstantiateWithFlags", rc);
	for (int i = 0; i < launches; i++)
		if ((rc = cuGraphLaunch(e, NULL)))
			return fail("cuGraphLaunch", rc);
	printf("ok - graph_app: %d graph launches of 4 kernel nodes\n", launches);
	if (argc > 4 && !strcmp(argv[3], "live")) {
		printf("# graph_app: ready, pid %d\n", (int)getpid());
		fflush(stdout);
		long more = 0;
		while (access(argv[4], F_OK)) {
			if ((rc = cuGraphLaunch(e, NULL)))
				return fail("cuGraphLaunch", rc);
			more++;
			usleep(2000);
		}
		printf("ok - graph_app: %ld more graph launches while live\n", more);
	}

	kernels_fn get = (kernels_fn)dlsym(RTLD_DEFAULT, "gx_shim_graph_exec_kernels");
	if (argc > 3 && !strcmp(argv[3], "changes") && get) {
		char b[256];
		list(get, e, b, sizeof(b));
		printf("%s - graph_app: the exec's kernels at instantiation (%s)\n",
		       !strcmp(b, "3/4 k:2 k2:1 late:1") ? "ok" : "not ok", b);
		/* an update to the same graph (XLA's new buffer addresses), then
		 * as many launches again: the same list goes on */
		CUgraphExecUpdateResultInfo same;
		if ((rc = cuGraphExecUpdate_v2(e, g, &same)))
			return fail("cuGraphExecUpdate (same graph)", rc);
		for (int i = 0; i < launches; i++)
			if ((rc = cuGraphLaunch(e, NULL)))
				return fail("cuGraphLaunch", rc);
		list(get, e, b, sizeof(b));
		printf("%s - graph_app: cuGraphExecUpdate to the same graph: the same kernels (%s)\n",
		       !strcmp(b, "3/4 k:2 k2:1 late:1") ? "ok" : "not ok", b);
		CUDA_KERNEL_NODE_PARAMS p = { .func = k2,
					      .gridDimX = 1,
					      .gridDimY = 1,
					      .gridDimZ = 1,
					      .blockDimX = 32,
					      .blockDimY = 1,
					      .blockDimZ = 1 };
		if ((rc = cuGraphExecKernelNodeSetParams_v2(e, n1, &p)))
			return fail("cuGraphExecKernelNodeSetParams", rc);
		list(get, e, b, sizeof(b));
		printf("%s - graph_app: cuGraphExecKernelNodeSetParams: a k node now runs k2 (%s)\n",
		       !strcmp(b, "3/4 k2:2 k:1 late:1") ? "ok" : "not ok", b);
		CUgraph g2;
		CUgraphNode m;
		CUgraphExecUpdateResultInfo info;
		if ((rc = cuGraphCreate(&g2, 0)) || (rc = add_kernel(&m, g2, late)) ||
		    (rc = add_kernel(&m, g2, late)) || (rc = cuGraphExecUpdate_v2(e, g2, &info)))
			return fail("cuGraphExecUpdate", rc);
		list(get, e, b, sizeof(b));
		printf("%s - graph_app: cuGraphExecUpdate: the new graph's kernels (%s)\n",
		       !strcmp(b, "1/2 late:2") ? "ok" : "not ok", b);
		if ((rc = cuGraphLaunch(e, NULL)))
			return fail("cuGraphLaunch", rc);
	}
	if ((rc = cuGraphExecDestroy(e)))
		return fail("cuGraphExecDestroy", rc);
	if (get)
		printf("%s - graph_app: cuGraphExecDestroy frees the exec's list\n",
		       get(e, NULL, 0, NULL) == -ENOENT ? "ok" : "not ok");
	cuGraphDestroy(g);
	cuGraphDestroy(child);
	usleep(100000);
	return 0;
}
