/* count_events.c — a minimal host "policy" for the GPU checks: preloaded
 * (LD_PRELOAD) into a program running under the shim, it subscribes to the
 * shim's events and prints counts at exit. It proves that the runtime's
 * launches (reached through cuGetProcAddress, _ptsz variants included) go
 * through the shim's wrappers on the real driver, and that the slow path
 * (a subscriber present) keeps results identical. Linked against the
 * shim's libcuda.so.1, so it is loaded before the program runs. */
#include <stdio.h>
#include <string.h>

#include "gpuext/gx_events.h"

static unsigned long counts[GX_EV__COUNT];
static unsigned long named;

static CUresult on_event(struct gx_event *ev, void *cookie)
{
	(void)cookie;
	__atomic_add_fetch(&counts[ev->kind], 1, __ATOMIC_RELAXED);
	if (ev->kind == GX_EV_LAUNCH && ev->launch.name && ev->launch.name[0])
		__atomic_add_fetch(&named, 1, __ATOMIC_RELAXED);
	return CUDA_SUCCESS;
}

__attribute__((constructor)) static void start(void)
{
	if (gx_events_subscribe(GX_EV_ALL, on_event, NULL) < 0)
		fprintf(stderr, "gx-count: subscribe failed\n");
}

__attribute__((destructor)) static void stop(void)
{
	fprintf(stderr, "gx-count: launches %lu named %lu graph-nodes %lu modules %lu streams %lu managed %lu syncs %lu\n",
		counts[GX_EV_LAUNCH], named, counts[GX_EV_GRAPH_KERNEL_NODE], counts[GX_EV_MODULE_LOAD],
		counts[GX_EV_STREAM_CREATE], counts[GX_EV_MEM_ALLOC_MANAGED], counts[GX_EV_SYNC]);
}
