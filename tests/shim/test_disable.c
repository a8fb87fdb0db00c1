/* test_disable.c — GPUEXT_DISABLE=1: the shim stays loaded but only
 * forwards: images reach the driver untouched, nothing is logged per module,
 * and event subscriptions are refused. Run against the fake driver. */
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpuext/gx_events.h"
#include "tests/gx_test.h"

static const char PTX[] = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n\tret;\n}\n";

static CUresult never(struct gx_event *ev, void *cookie)
{
	(void)ev, (void)cookie;
	printf("not ok - an event was delivered although GPUEXT_DISABLE is set\n");
	return CUDA_SUCCESS;
}

int main(void)
{
	GX_CHECK(cuInit(0) == CUDA_SUCCESS, "cuInit");
	void *fake = dlopen(getenv("GPUEXT_REAL_LIBCUDA"), RTLD_NOW | RTLD_NOLOAD);
	const void *(*last_image)(void) = fake ? (const void *(*)(void))dlsym(fake, "fake_last_image") : NULL;
	CUcontext c;
	CUmodule m;
	GX_CHECK(cuDevicePrimaryCtxRetain(&c, 0) == CUDA_SUCCESS && cuCtxSetCurrent(c) == CUDA_SUCCESS, "context");
	GX_CHECK(cuModuleLoadData(&m, PTX) == CUDA_SUCCESS && last_image && last_image() == PTX,
		 "the driver gets the application's own image");
	int (*sub)(unsigned, gx_event_fn, void *) = (int (*)(unsigned, gx_event_fn, void *))dlsym(RTLD_DEFAULT, "gx_events_subscribe");
	GX_CHECK(sub && sub(GX_EV_ALL, never, NULL) == -ENODEV, "event subscription refused");
	GX_CHECK(cuModuleUnload(m) == CUDA_SUCCESS && cuDevicePrimaryCtxRelease(0) == CUDA_SUCCESS, "unload, release");
	return gx_test_done();
}
