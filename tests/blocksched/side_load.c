/* side_load.c — a fatbin with SASS for the device loaded through the shim
 * under a schedule policy (tests/blocksched/test_bs_side.sh, fake driver):
 * which code a launch of KERNEL ran (the application's handle: its own
 * SASS; another: a persistent copy), and how many modules its unload
 * unloaded (2: the copies' module went with it).
 * With FAKECUDA_GLOBALS=1, also how many modules had their __gx_devrt
 * written (the copies' policy finds its maps only then).
 *   side_load FILE KERNEL   prints "launched orig|copy", "devrt N" and
 *   "unloads N" */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/shim/fakecuda/fake_launch.h"

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: side_load FILE KERNEL\n");
		return 2;
	}
	FILE *fp = fopen(argv[1], "rb");
	if (!fp) {
		perror(argv[1]);
		return 2;
	}
	static char buf[1 << 20];
	size_t len = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[len] = 0;
	CUcontext c;
	CUmodule m;
	CUfunction f;
	CUdeviceptr d;
	/* the shim opens the fake driver at cuInit */
	void *fake = cuInit(0) ? NULL : dlopen(getenv("GPUEXT_REAL_LIBCUDA"), RTLD_NOW | RTLD_NOLOAD);
	struct fake_launch (*last)(void) = fake ? (struct fake_launch(*)(void))dlsym(fake, "fake_last_launch") : NULL;
	long (*count)(const char *) = fake ? (long (*)(const char *))dlsym(fake, "fake_count") : NULL;
	long (*written)(const char *) = fake ? (long (*)(const char *))dlsym(fake, "fake_globals_written") : NULL;
	if (!last || !count || !written || cuDevicePrimaryCtxRetain(&c, 0) || cuCtxSetCurrent(c) ||
	    cuModuleLoadData(&m, buf) || cuModuleGetFunction(&f, m, argv[2]) || cuMemAlloc(&d, 4096)) {
		fprintf(stderr, "side_load: set-up failed\n");
		return 1;
	}
	void *args[] = { &d };
	for (int i = 0; i < 3; i++)
		if (cuLaunchKernel(f, 4, 1, 1, 32, 1, 1, 0, NULL, args, NULL)) {
			fprintf(stderr, "side_load: launch failed\n");
			return 1;
		}
	cuCtxSynchronize();
	printf("launched %s\n", last().func == (void *)f ? "orig" : "copy");
	printf("devrt %ld\n", written("__gx_devrt"));
	long u0 = count("cuModuleUnload");
	if (cuModuleUnload(m)) {
		fprintf(stderr, "side_load: unload failed\n");
		return 1;
	}
	printf("unloads %ld\n", count("cuModuleUnload") - u0);
	cuMemFree(d);
	return 0;
}
