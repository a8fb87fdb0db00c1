/* threads_app.c — the launch sample's switch under threads that launch at
 * once (test_launch_sample.sh), against the attach fake driver: the switch
 * takes most launches without its lock (shim/live.c's per-thread memo), so
 * its counts must stay exact however the threads interleave.
 *
 *     threads_app PTX KERNEL THREADS LAUNCHES [GLOBAL]
 *
 * Loads PTX twice (two modules, two functions of the same kernel), then
 * THREADS threads each launch the two functions alternately, LAUNCHES
 * times, on a stream of their own; after a barrier, with GLOBAL given, the
 * first thread asks for the address of module 0's variable GLOBAL (its copy
 * is retired: its launches must run the original from then on), and after a
 * second barrier every thread launches LAUNCHES times more. Each launch is
 * told instrumented or not by the fake driver (fake_last_run_has, per
 * thread). Prints per function "# threads_app: fn F launches L instrumented
 * I late_instrumented J" (J: of the launches after the second barrier) and
 * "ok - threads_app: ..." when every launch succeeded. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/gx_util.h"

static CUcontext ctx;
static CUmodule mods[2];
static CUfunction fns[2];
static long per_thread;
static const char *global;
static pthread_barrier_t bar;
static int (*has)(const char *);
static long launches[2], instr[2], late_instr[2], failed;
static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;

static void run(CUstream s, bool late, long got[2], long in[2])
{
	void *args[4] = { 0 };
	for (long i = 0; i < per_thread; i++) {
		int f = (int)(i % 2);
		if (cuLaunchKernel(fns[f], 1, 1, 1, 32, 1, 1, 0, s, args, NULL)) {
			__atomic_add_fetch(&failed, 1, __ATOMIC_RELAXED);
			continue;
		}
		got[f]++;
		if (has("__gx_devrt"))
			in[f]++;
	}
	pthread_mutex_lock(&count_lock);
	for (int f = 0; f < 2; f++) {
		launches[f] += got[f];
		instr[f] += in[f];
		if (late)
			late_instr[f] += in[f];
	}
	pthread_mutex_unlock(&count_lock);
}

static void *thread_main(void *arg)
{
	long id = (long)arg;
	CUstream s = NULL;
	if (cuCtxSetCurrent(ctx) || cuStreamCreate(&s, CU_STREAM_NON_BLOCKING)) {
		__atomic_add_fetch(&failed, 1, __ATOMIC_RELAXED);
		s = NULL;
	}
	long got[2] = { 0 }, in[2] = { 0 };
	run(s, false, got, in);
	pthread_barrier_wait(&bar);
	if (!id && global) {
		CUdeviceptr p;
		size_t n;
		if (cuModuleGetGlobal_v2(&p, &n, mods[0], global))
			__atomic_add_fetch(&failed, 1, __ATOMIC_RELAXED);
	}
	pthread_barrier_wait(&bar);
	long got2[2] = { 0 }, in2[2] = { 0 };
	run(s, true, got2, in2);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 5)
		return 2;
	char *ptx;
	size_t n;
	int nt = atoi(argv[3]);
	per_thread = atol(argv[4]);
	global = argc > 5 ? argv[5] : NULL;
	if (gx_read_file(argv[1], &ptx, &n, 1 << 20) || nt < 1 || nt > 64 || per_thread < 2)
		return 2;
	CUdevice dev;
	CUresult rc;
	if ((rc = cuInit(0)) || (rc = cuDeviceGet(&dev, 0)) || (rc = cuDevicePrimaryCtxRetain(&ctx, dev)) ||
	    (rc = cuCtxSetCurrent(ctx))) {
		printf("not ok - threads_app: set-up (%d)\n", (int)rc);
		return 1;
	}
	for (int i = 0; i < 2; i++)
		if ((rc = cuModuleLoadData(&mods[i], ptx)) || (rc = cuModuleGetFunction(&fns[i], mods[i], argv[2]))) {
			printf("not ok - threads_app: module %d (%d)\n", i, (int)rc);
			return 1;
		}
	const char *fake = getenv("GPUEXT_REAL_LIBCUDA");
	void *h = fake ? dlopen(fake, RTLD_NOW | RTLD_NOLOAD) : NULL;
	has = h ? (int (*)(const char *))dlsym(h, "fake_last_run_has") : NULL;
	if (!has) {
		printf("not ok - threads_app: the fake driver's fake_last_run_has\n");
		return 1;
	}
	pthread_barrier_init(&bar, NULL, (unsigned)nt);
	pthread_t t[64];
	for (long i = 0; i < nt; i++)
		if (pthread_create(&t[i], NULL, thread_main, (void *)i)) {
			printf("not ok - threads_app: thread %ld\n", i);
			return 1;
		}
	for (int i = 0; i < nt; i++)
		pthread_join(t[i], NULL);
	for (int f = 0; f < 2; f++)
		printf("# threads_app: fn %d launches %ld instrumented %ld late_instrumented %ld\n", f, launches[f],
		       instr[f], late_instr[f]);
	printf("%s - threads_app: %d threads, %ld launches failed\n", failed ? "not ok" : "ok", nt, failed);
	return failed ? 1 : 0;
}
