/* test_hostpolicy_multi — host policies with several GPUs (issue 7), through
 * the shim and the fake driver (3 devices): with GPUEXT_POLICY=gx_seq.bpf.o a
 * launch on managed memory is preceded by cuMemPrefetchAsync to the device
 * of the launch's context — not device 0 — from threads whose current
 * contexts are on different devices, and the shim's events carry that
 * device. Run by tests/hostbpf/test_hostpolicy_multi.sh. */
#define CUDA_ENABLE_DEPRECATED 1
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuext/gx_events.h"
#include "tests/gx_test.h"

static const char PTX[] = ".version 8.0\n.target sm_80\n.address_size 64\n"
			  ".visible .entry kern_p(.param .u64 p)\n{\n\tret;\n}\n";

static CUmemLocation (*last_prefetch)(void);
static long (*count)(const char *);
static CUcontext ctx[3];
static CUdeviceptr buf; /* one managed allocation every device's launches use */

static __thread int ev_dev = -2;
static CUresult on_launch(struct gx_event *ev, void *cookie)
{
	(void)cookie;
	ev_dev = ev->dev;
	return CUDA_SUCCESS;
}

/* One launch on the managed buffer in the context of device d: where did
 * the policy's prefetch go? Returns 0 when it went to d. The data was last
 * used by another device, so it must move (one process, one residency
 * model: a device switch counts like a host synchronisation). */
static void *one(void *arg)
{
	int d = (int)(intptr_t)arg;
	CUmodule mod;
	CUfunction fn;
	if (cuCtxSetCurrent(ctx[d]) != CUDA_SUCCESS || cuModuleLoadData(&mod, PTX) != CUDA_SUCCESS ||
	    cuModuleGetFunction(&fn, mod, "kern_p") != CUDA_SUCCESS)
		return (void *)(intptr_t)1;
	uint64_t arg64 = buf;
	size_t sz = sizeof(arg64);
	void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, &arg64, CU_LAUNCH_PARAM_BUFFER_SIZE, &sz, CU_LAUNCH_PARAM_END };
	long before = count("cuMemPrefetchAsync_v2");
	if (cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, extra) != CUDA_SUCCESS)
		return (void *)(intptr_t)2;
	CUmemLocation l = last_prefetch();
	int ok = count("cuMemPrefetchAsync_v2") > before && l.type == CU_MEM_LOCATION_TYPE_DEVICE && l.id == d &&
		 ev_dev == d;
	if (!ok)
		printf("# device %d: %ld prefetches, the last: type %d id %d; event device %d\n", d,
		       count("cuMemPrefetchAsync_v2") - before, (int)l.type, l.id, ev_dev);
	cuModuleUnload(mod);
	return (void *)(intptr_t)(ok ? 0 : 3);
}

int main(void)
{
	const char *fake = getenv("GPUEXT_REAL_LIBCUDA");
	int n = 0;
	GX_CHECK(cuInit(0) == CUDA_SUCCESS && cuDeviceGetCount(&n) == CUDA_SUCCESS && n == 3, "3 devices (%d)", n);
	void *fh = fake ? dlopen(fake, RTLD_NOW | RTLD_NOLOAD) : NULL;
	*(void **)&last_prefetch = fh ? dlsym(fh, "fake_last_prefetch") : NULL;
	*(void **)&count = fh ? dlsym(fh, "fake_count") : NULL;
	int (*sub)(unsigned, gx_event_fn, void *) = (int (*)(unsigned, gx_event_fn, void *))dlsym(RTLD_DEFAULT,
												 "gx_events_subscribe");
	GX_CHECK(last_prefetch && count && sub, "fake driver record and gx_events_subscribe");
	if (!last_prefetch || !count || !sub)
		return gx_test_done();
	sub(GX_EV_MASK(GX_EV_LAUNCH), on_launch, NULL);
	for (int d = 0; d < 3; d++)
		cuDevicePrimaryCtxRetain(&ctx[d], d);
	cuCtxSetCurrent(ctx[2]);
	GX_CHECK(cuMemAllocManaged(&buf, 32768, CU_MEM_ATTACH_GLOBAL) == CUDA_SUCCESS, "managed allocation");
	/* sequentially: 2, 1, 0 (device 0 last, so a default of 0 cannot pass) */
	int bad = 0;
	for (int d = 2; d >= 0; d--)
		bad |= one((void *)(intptr_t)d) != NULL;
	GX_CHECK(!bad, "launches on one allocation in contexts of devices 2, 1, 0: each prefetched to its own device, "
		       "the event names it");
	cuCtxSynchronize(); /* the CPU may touch it: nothing resident anywhere */
	pthread_t t[3];
	for (int d = 0; d < 3; d++)
		pthread_create(&t[d], NULL, one, (void *)(intptr_t)d);
	bad = 0;
	for (int d = 0; d < 3; d++) {
		void *r;
		pthread_join(t[d], &r);
		bad |= r != NULL;
	}
	GX_CHECK(!bad, "3 threads on 3 devices at once, one allocation: each prefetch to its own thread's device");
	for (int d = 0; d < 3; d++)
		cuDevicePrimaryCtxRelease(d);
	return gx_test_done();
}
