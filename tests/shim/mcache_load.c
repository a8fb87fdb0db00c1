/* mcache_load.c — load a PTX file through the shim (against the fake driver)
 * and time cuModuleLoadData: the rewritten-module cache tests and their
 * cold/warm bench line (tests/shim/test_mcache.sh).
 *   mcache_load FILE.ptx KERNEL [MAXREG]   prints "load_us N"; MAXREG: loaded
 *   with CU_JIT_MAX_REGISTERS (tests/shim/test_cubin_cache.sh) */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>


int main(int argc, char **argv)
{
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: mcache_load FILE.ptx KERNEL [MAXREG]\n");
		return 2;
	}
	FILE *fp = fopen(argv[1], "rb");
	if (!fp) {
		perror(argv[1]);
		return 2;
	}
	fseek(fp, 0, SEEK_END);
	long len = ftell(fp);
	rewind(fp);
	char *buf = len >= 0 ? malloc((size_t)len + 1) : NULL;
	if (!buf || fread(buf, 1, (size_t)len, fp) != (size_t)len) {
		fprintf(stderr, "mcache_load: cannot read %s\n", argv[1]);
		return 2;
	}
	buf[len] = 0;
	fclose(fp);
	CUcontext c;
	CUmodule m;
	CUfunction f;
	if (cuInit(0) || cuDevicePrimaryCtxRetain(&c, 0) || cuCtxSetCurrent(c)) {
		fprintf(stderr, "mcache_load: no context\n");
		return 1;
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* MAXREG: a JIT option that changes code generation (the PTX load stays) */
	CUjit_option o = CU_JIT_MAX_REGISTERS;
	void *v = (void *)(uintptr_t)(argc == 4 ? strtoul(argv[3], NULL, 10) : 0);
	CUresult rc = argc == 4 ? cuModuleLoadDataEx(&m, buf, 1, &o, &v) : cuModuleLoadData(&m, buf);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (rc || cuModuleGetFunction(&f, m, argv[2])) {
		fprintf(stderr, "mcache_load: load failed (%d)\n", rc);
		return 1;
	}
	printf("load_us %.0f\n", (t1.tv_sec - t0.tv_sec) * 1e6 + (t1.tv_nsec - t0.tv_nsec) / 1e3);
	cuModuleUnload(m);
	free(buf);
	return 0;
}
