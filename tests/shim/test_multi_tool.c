/* test_multi_tool.c — a device tool (GPUEXT_TOOL) with contexts on two GPUs,
 * against the tools' fake driver (memory semantics): each context gets its
 * own device maps, and destroying a context that is not the calling
 * thread's current one leaves the thread's current context as it was (the
 * runtime's last flush works inside the dying context, then gives the
 * thread its own back). Run by tests/shim/test_multi.sh. */
#include <cuda.h>
#include <stdio.h>
#include <string.h>

#include "tests/gx_test.h"

static const char PTX[] = ".version 8.0\n.target sm_80\n.address_size 64\n"
			  ".visible .entry k(.param .u64 p)\n{\n\tret;\n}\n";

static int load_launch(CUmodule *m)
{
	CUfunction f;
	CUdeviceptr p = 0;
	void *args[] = { &p };
	return cuModuleLoadData(m, PTX) == CUDA_SUCCESS && cuModuleGetFunction(&f, *m, "k") == CUDA_SUCCESS &&
	       cuLaunchKernel(f, 2, 1, 1, 32, 1, 1, 0, NULL, args, NULL) == CUDA_SUCCESS;
}

int main(void)
{
	CUcontext a, b, cur = NULL;
	CUmodule ma, mb;
	GX_CHECK(cuInit(0) == CUDA_SUCCESS, "init");
	GX_CHECK(cuCtxCreate(&a, NULL, 0, 0) == CUDA_SUCCESS && load_launch(&ma), "context A on GPU 0: load, launch");
	cuCtxSetCurrent(NULL);
	GX_CHECK(cuCtxCreate(&b, NULL, 0, 1) == CUDA_SUCCESS && load_launch(&mb), "context B on GPU 1: load, launch");
	cuModuleUnload(mb);
	cuCtxSetCurrent(a);
	GX_CHECK(cuCtxDestroy(b) == CUDA_SUCCESS && cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == a,
		 "destroying B from a thread whose current context is A: A is still current (%s)",
		 cur == a ? "A" : cur ? "other" : "none");
	CUmodule m2;
	GX_CHECK(load_launch(&m2), "A still loads and launches");
	cuModuleUnload(m2);
	cuModuleUnload(ma);
	GX_CHECK(cuCtxDestroy(a) == CUDA_SUCCESS, "destroy A");
	return gx_test_done();
}
