/* devreq_app.c — device-side prefetch requests reach the host policy: a
 * driver-API program for test_hostpolicy.sh, run through the shim on the
 * tools' fake driver (device memory is host memory). With a device tool
 * attached (a runtime ring) and gx_seq as host policy, it plays the GPU:
 * writes one gdev_mem_prefetch record (GX_REC_PREFETCH) for a managed
 * allocation into the runtime ring and waits for the shim's drain thread;
 * the policy must turn it into cuMemPrefetchAsync.
 * argv: PTX file, kernel name. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuext/gx_devrt.h"
#include "common/gx_util.h"
#include "tests/gx_test.h"

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	char *ptx;
	size_t n;
	if (gx_read_file(argv[1], &ptx, &n, 1 << 20))
		return 2;
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	CUdeviceptr p = 0;
	GX_CHECK(cuInit(0) == CUDA_SUCCESS && cuDeviceGet(&dev, 0) == CUDA_SUCCESS &&
			 cuDevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS && cuCtxSetCurrent(ctx) == CUDA_SUCCESS,
		 "devreq: init");
	GX_CHECK(cuModuleLoadData(&mod, ptx) == CUDA_SUCCESS && cuModuleGetFunction(&fn, mod, argv[2]) == CUDA_SUCCESS,
		 "devreq: module");
	GX_CHECK(cuMemAllocManaged(&p, 32768, CU_MEM_ATTACH_GLOBAL) == CUDA_SUCCESS, "devreq: managed alloc");
	void *args[4] = {0};
	GX_CHECK(cuLaunchKernel(fn, 4, 1, 1, 64, 1, 1, 0, NULL, args, NULL) == CUDA_SUCCESS, "devreq: launch");
	const char *fake = getenv("GPUEXT_REAL_LIBCUDA");
	void *h = fake ? dlopen(fake, RTLD_NOW | RTLD_NOLOAD) : NULL;
	uint64_t (*get)(void *) = h ? (uint64_t(*)(void *))dlsym(h, "fakedev_devrt") : NULL;
	long (*count)(const char *) = h ? (long (*)(const char *))dlsym(h, "fake_count") : NULL;
	struct gx_devrt *rt = get ? (struct gx_devrt *)(uintptr_t)get(fn) : NULL;
	GX_CHECK(rt && rt->magic == GX_DEVRT_MAGIC && rt->ring && (rt->flags & GX_DEVRT_F_PREFETCH) && count,
		 "devreq: runtime ring with prefetch records enabled");
	if (!rt || !rt->ring || !count)
		return gx_test_done();
	long before = count("cuMemPrefetchAsync_v2");
	struct gx_ring *r = (struct gx_ring *)(uintptr_t)rt->ring;
	struct gx_rec_prefetch *rec = (struct gx_rec_prefetch *)(r + 1);
	memset(rec, 0, sizeof(*rec));
	rec->addr = p; /* gx_seq brings the rest: the whole (small) allocation */
	rec->len = 4096;
	__atomic_store_n(&r->head, GX_ROUND8(sizeof(*rec)), __ATOMIC_RELEASE);
	struct gx_rec_hdr hd = {(gdev_u32)sizeof(*rec), GX_REC_PREFETCH | GX_REC_COMMITTED};
	uint64_t word;
	memcpy(&word, &hd, 8);
	__atomic_store_n((uint64_t *)(void *)&rec->hdr, word, __ATOMIC_RELEASE);
	for (int i = 0; i < 50 && count("cuMemPrefetchAsync_v2") == before; i++)
		usleep(20000); /* the drainer ticks every GPUEXT_FLUSH_MS */
	GX_CHECK(count("cuMemPrefetchAsync_v2") > before,
		 "devreq: the device's request became cuMemPrefetchAsync through the host policy (%ld)",
		 count("cuMemPrefetchAsync_v2") - before);
	return gx_test_done();
}
