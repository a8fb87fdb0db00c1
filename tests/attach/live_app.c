/* live_app.c — a running CUDA driver-API program for the live attach tests
 * (test_live.sh): loads a PTX module, then launches its kernel every
 * LIVE_PERIOD_US (default 2000) until the file argv[3] exists, and says on
 * stdout when the launched code changes between the application's module
 * and an instrumented copy (the fake driver tells: fake_last_run_has), so
 * the test sees the switch at attach and back at detach.
 * argv: PTX file, kernel name, stop file, mode: "plain" (a stream of its
 * own), "null" (the NULL stream), "capture" (every launch into a global-mode
 * capture of its stream, ended at the stop file: must still succeed),
 * "graph" (a graph of two kernel nodes instantiated before any attach,
 * launched after each kernel launch: it must keep running the original),
 * "library" (the module loaded with cuLibraryLoadData and launched through
 * its CUkernel, as cudart does), "smem" (the kernel given 100 KiB of
 * dynamic shared memory with cuFuncSetAttribute, each launch using it). With LIVE_LATE set to a file, once that
 * file exists a second module is loaded from the same PTX and its kernel
 * launched from then on (a module loaded while attached). With LIVE_RELOAD
 * set to a file, once it exists the module is unloaded and loaded again
 * from the same PTX, or from the file LIVE_RELOAD_PTX (the fake driver may
 * give the new one the old handles: FAKECUDA_REUSE_HANDLES); with
 * LIVE_WATCH set, it says when the code launched starts or stops
 * containing that text. With LIVE_GLOBAL set to a variable's name, the
 * program asks for its address (cuModuleGetGlobal) once LIVE_GLOBAL_AT
 * exists, or before it says it is ready when LIVE_GLOBAL_AT is "early".
 * LIVE_JITOPT: the module is loaded with a JIT option (32 registers).
 * It also says when launches start or stop running a persistent-worker copy
 * (__gx_pw_K / __gx_ps_K: gpuext attach --sched), with the device blocks
 * allocated and not freed at that moment and at the end. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/gx_util.h"

int main(int argc, char **argv)
{
	if (argc < 5)
		return 2;
	char *ptx;
	size_t n;
	if (gx_read_file(argv[1], &ptx, &n, 1 << 20))
		return 2;
	const char *pe = getenv("LIVE_PERIOD_US");
	long period = pe ? atol(pe) : 2000;
	CUresult rc;
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod = NULL;
	CUfunction fn;
	CUstream s = NULL;
	if ((rc = cuInit(0)) || (rc = cuDeviceGet(&dev, 0)) || (rc = cuDevicePrimaryCtxRetain(&ctx, dev)) ||
	    (rc = cuCtxSetCurrent(ctx))) {
		printf("not ok - live_app: set-up (%d)\n", (int)rc);
		return 1;
	}
	if (!strcmp(argv[4], "library")) {
		CUlibrary lib;
		CUkernel k;
		rc = cuLibraryLoadData(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0);
		if (!rc)
			rc = cuLibraryGetKernel(&k, lib, argv[2]);
		fn = (CUfunction)k;
	} else {
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (getenv("LIVE_JITOPT")) { /* a JIT option that changes the code */
			CUjit_option o = CU_JIT_MAX_REGISTERS;
			void *v = (void *)(uintptr_t)32;
			rc = cuModuleLoadDataEx(&mod, ptx, 1, &o, &v);
		} else {
			rc = cuModuleLoadData(&mod, ptx);
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		printf("# live_app: module loaded in %.0f ms\n",
		       (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
		if (!rc)
			rc = cuModuleGetFunction(&fn, mod, argv[2]);
	}
	if (rc) {
		printf("not ok - live_app: set-up (%d)\n", (int)rc);
		return 1;
	}
	unsigned smem = 0;
	if (!strcmp(argv[4], "smem")) {
		smem = 100 << 10;
		if ((rc = cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem))) {
			printf("not ok - live_app: cuFuncSetAttribute (%d)\n", (int)rc);
			return 1;
		}
	}
	if (strcmp(argv[4], "null") && (rc = cuStreamCreate(&s, CU_STREAM_NON_BLOCKING))) {
		printf("not ok - live_app: cuStreamCreate (%d)\n", (int)rc);
		return 1;
	}
	bool capture = !strcmp(argv[4], "capture");
	if (capture && (rc = cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL))) {
		printf("not ok - live_app: cuStreamBeginCapture (%d)\n", (int)rc);
		return 1;
	}
	CUgraphExec ge = NULL;
	if (!strcmp(argv[4], "graph")) {
		CUgraph g;
		CUgraphNode a, b;
		static void *gargs[4];
		CUDA_KERNEL_NODE_PARAMS p = { .func = fn,
					      .gridDimX = 4,
					      .gridDimY = 1,
					      .gridDimZ = 1,
					      .blockDimX = 64,
					      .blockDimY = 1,
					      .blockDimZ = 1,
					      .kernelParams = gargs };
		if ((rc = cuGraphCreate(&g, 0)) || (rc = cuGraphAddKernelNode_v2(&a, g, NULL, 0, &p)) ||
		    (rc = cuGraphAddKernelNode_v2(&b, g, &a, 1, &p)) || (rc = cuGraphInstantiateWithFlags(&ge, g, 0))) {
			printf("not ok - live_app: graph set-up (%d)\n", (int)rc);
			return 1;
		}
	}
	long glaunches = 0, gfailed = 0;
	const char *fake = getenv("GPUEXT_REAL_LIBCUDA");
	void *h = fake ? dlopen(fake, RTLD_NOW | RTLD_NOLOAD) : NULL;
	int (*has)(const char *) = h ? (int (*)(const char *))dlsym(h, "fake_last_run_has") : NULL;
	int (*last_run)(void **, int *, void **, char *, size_t, char *, size_t) =
		h ? (int (*)(void **, int *, void **, char *, size_t, char *, size_t))dlsym(h, "fake_last_run") : NULL;
	long (*count)(const char *) = h ? (long (*)(const char *))dlsym(h, "fake_count") : NULL;
	if (!has || !last_run || !count) {
		printf("not ok - live_app: the fake driver's fake_last_run_has\n");
		return 1;
	}
	const char *gname = getenv("LIVE_GLOBAL"), *gat = getenv("LIVE_GLOBAL_AT");
	bool gdone = !gname || !gat;
	if (!gdone && !strcmp(gat, "early")) {
		CUdeviceptr gp;
		size_t gn;
		gdone = true;
		if ((rc = cuModuleGetGlobal_v2(&gp, &gn, mod, gname))) {
			printf("not ok - live_app: cuModuleGetGlobal %s (%d)\n", gname, (int)rc);
			return 1;
		}
	}
	printf("# live_app: ready, pid %d\n", (int)getpid());
	fflush(stdout);
	const char *late = getenv("LIVE_LATE"), *reload = getenv("LIVE_RELOAD");
	bool late_done = false, reload_done = false;
	long launches = 0, instr = 0, switches = 0, failed = 0, pws = 0;
	int was = 0, was_pw = 0, was_w = 0;
	void *args[4] = { 0 };
	while (access(argv[3], F_OK)) {
		if (late && !late_done && !access(late, F_OK)) {
			CUmodule m2;
			late_done = true;
			if ((rc = cuModuleLoadData(&m2, ptx)) || (rc = cuModuleGetFunction(&fn, m2, argv[2])))
				failed++;
			printf("# live_app: launch %ld: a second module loaded (%d)\n", launches, (int)rc);
			fflush(stdout);
		}
		if (reload && !reload_done && !access(reload, F_OK)) {
			void *old = mod;
			const char *rp = getenv("LIVE_RELOAD_PTX");
			char *ptx2 = NULL;
			size_t n2;
			reload_done = true;
			if (rp && gx_read_file(rp, &ptx2, &n2, 1 << 20))
				return 2;
			if ((rc = cuModuleUnload(mod)) || (rc = cuModuleLoadData(&mod, ptx2 ? ptx2 : ptx)) ||
			    (rc = cuModuleGetFunction(&fn, mod, argv[2])))
				failed++;
			printf("# live_app: launch %ld: the module unloaded and loaded again (%d, handle %s)\n",
			       launches, (int)rc, (void *)mod == old ? "reused" : "new");
			fflush(stdout);
			free(ptx2);
		}
		if (!gdone && !access(gat, F_OK)) {
			CUdeviceptr gp;
			size_t gn;
			gdone = true;
			rc = cuModuleGetGlobal_v2(&gp, &gn, mod, gname);
			printf("# live_app: launch %ld: asked for the address of %s (%d)\n", launches, gname, (int)rc);
			fflush(stdout);
			if (rc)
				failed++;
		}
		if ((rc = cuLaunchKernel(fn, 4, 1, 1, 64, 1, 1, smem, s, args, NULL))) {
			failed++;
			continue;
		}
		launches++;
		int now = has("__gx_devrt");
		instr += now;
		if (now != was) {
			switches++;
			printf("# live_app: launch %ld runs the %s\n", launches,
			       now ? "instrumented copy" : "original");
			fflush(stdout);
		}
		was = now;
		const char *watch = getenv("LIVE_WATCH");
		int w = watch && has(watch);
		if (watch && w != was_w) {
			printf("# live_app: launch %ld runs code %s %s\n", launches, w ? "with" : "without", watch);
			fflush(stdout);
		}
		was_w = w;
		char rn[128] = "";
		last_run(NULL, NULL, NULL, NULL, 0, rn, sizeof(rn));
		int pw = !strncmp(rn, "__gx_pw_", 8) || !strncmp(rn, "__gx_ps_", 8);
		pws += pw;
		if (pw != was_pw) {
			printf("# live_app: launch %ld runs %s (%s), device blocks %ld\n", launches,
			       pw ? "a persistent copy" : "no persistent copy", rn,
			       count("cuMemAlloc_v2") - count("cuMemFree_v2"));
			fflush(stdout);
		}
		was_pw = pw;
		if (ge) {
			if (cuGraphLaunch(ge, s))
				gfailed++;
			else
				glaunches++;
		}
		usleep((useconds_t)period);
	}
	if (capture) {
		CUgraph g = NULL;
		rc = cuStreamEndCapture(s, &g);
		printf("%s - live_app: the capture around the attach still ends (%d)\n", rc ? "not ok" : "ok", (int)rc);
	}
	if (s)
		cuStreamSynchronize(s);
	if (ge)
		printf("%s - live_app: %ld graph launches, %ld failed\n", gfailed ? "not ok" : "ok", glaunches,
		       gfailed);
	printf("%s - live_app: %ld launches, %ld failed\n", failed ? "not ok" : "ok", launches, failed);
	printf("# live_app: launches %ld instrumented %ld switches %ld persistent %ld\n", launches, instr, switches,
	       pws);
	printf("# live_app: device blocks at the end %ld\n", count("cuMemAlloc_v2") - count("cuMemFree_v2"));
	return 0;
}
