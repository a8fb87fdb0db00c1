/* test_nodriver.c — the shim without a usable real driver: cuInit fails
 * cleanly (CUDA_ERROR_NO_DEVICE), other calls return an error, nothing
 * recurses or crashes. argv[1] names the case for the ok lines. */
#include <cuda.h>
#include <stdio.h>

#include "tests/gx_test.h"

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "no driver";
	CUresult rc = cuInit(0);
	GX_CHECK(rc == CUDA_ERROR_NO_DEVICE, "%s: cuInit returns CUDA_ERROR_NO_DEVICE (%d)", what, rc);
	int v = 0;
	rc = cuDriverGetVersion(&v);
	GX_CHECK(rc == CUDA_ERROR_NOT_INITIALIZED && v == 0, "%s: forwarded calls return CUDA_ERROR_NOT_INITIALIZED (%d)", what, rc);
	CUmodule m;
	rc = cuModuleLoadData(&m, ".version 8.0\n.target sm_80\n");
	GX_CHECK(rc != CUDA_SUCCESS, "%s: an intercepted call fails cleanly (%d)", what, rc);
	return gx_test_done();
}
