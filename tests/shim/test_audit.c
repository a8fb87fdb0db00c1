/* test_audit.c — a program that dlopens libcuda by absolute path (argv[1]).
 * argv[2] = "shim": we expect gpuext-run --audit to have redirected it to the
 * shim (which must still reach the real driver); "real": no redirection.
 * Linked against the driver stub, so its own libcuda.so.1 is the shim. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "tests/gx_test.h"

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	GX_CHECK(cuInit(0) == CUDA_SUCCESS, "cuInit through the linked libcuda.so.1");
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	GX_CHECK(h != NULL, "dlopen(%s)", argv[1]);
	if (!h)
		return 1;
	bool want_shim = !strcmp(argv[2], "shim");
	bool is_shim = dlsym(h, "gpuext_shim_marker") != NULL;
	GX_CHECK(is_shim == want_shim, "absolute-path dlopen gives the %s", want_shim ? "shim (redirected)" : "real driver");
	CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(h, "cuInit");
	GX_CHECK(init && init(0) == CUDA_SUCCESS, "cuInit through it reaches the driver (no recursion)");
	return gx_test_done();
}
