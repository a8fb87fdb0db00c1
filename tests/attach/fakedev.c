/* fakedev.c — TEST-ONLY memory semantics added to the shim tests' fake
 * driver (tests/shim/fakecuda/fake.c, whose generated entry points are weak
 * no-ops): device memory is host memory (a device pointer is the host
 * address), copies are memcpy, mapped host memory maps to itself, and every
 * function's "module" has the runtime blocks of an instrumented module
 * (`__gx_devrt`, `__gx_devrt__p1`..) the test can read back. Linked
 * only into build/tests/attach/fakecuda/libcuda.so.1. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuext/gx_devrt.h"

#define FX __attribute__((visibility("default")))
void fake_rec(const char *name);
CUresult fake_module_global(CUdeviceptr *p, size_t *n, CUmodule m, const char *name);

#define NBLK 5 /* GX_PMERGE_MAX */
static struct {
	void *mod;
	struct gx_devrt blk[NBLK];
} slots[256];
static int nslots;

FX CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
	fake_rec("cuMemAlloc_v2");
	void *m = calloc(1, n ? n : 8);
	*p = (CUdeviceptr)(uintptr_t)m;
	return m ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
FX CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n)
{
	fake_rec("cuMemcpyHtoD_v2");
	memcpy((void *)(uintptr_t)d, s, n);
	return CUDA_SUCCESS;
}
FX CUresult cuMemcpyDtoHAsync_v2(void *d, CUdeviceptr s, size_t n, CUstream st)
{
	(void)st;
	fake_rec("cuMemcpyDtoHAsync_v2");
	memcpy(d, (const void *)(uintptr_t)s, n);
	return CUDA_SUCCESS;
}
/* The shim clears consumed ring records on the device with it. */
FX CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream st)
{
	(void)st;
	fake_rec("cuMemsetD8Async");
	memset((void *)(uintptr_t)d, v, n);
	return CUDA_SUCCESS;
}
FX CUresult cuStreamSynchronize(CUstream s)
{
	(void)s;
	return CUDA_SUCCESS;
}
/* With FAKEDEV_PIN_ANON_ONLY=1, refuse to pin pages of a file mapping (any
 * mapping with an inode), as Linux >= 6.5 does for the long-term pins of
 * cuMemHostRegister on files outside tmpfs: the H200 case that kept every
 * tool with a ring from attaching. FAKEDEV_PIN_NONE=1 refuses every pin. */
static int file_backed(const void *p, size_t n)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	uintptr_t a = (uintptr_t)p, e = a + n;
	int file = 0;
	while (f && !file && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, ino;
		if (sscanf(line, "%lx-%lx %*s %*s %*s %lu", &lo, &hi, &ino) == 3 && lo < e && a < hi && ino)
			file = 1;
	}
	if (f)
		fclose(f);
	return file;
}
FX CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned f)
{
	(void)f;
	fake_rec("cuMemHostRegister_v2");
	const char *e = getenv("FAKEDEV_PIN_ANON_ONLY"), *all = getenv("FAKEDEV_PIN_NONE");
	if ((e && *e == '1' && file_backed(p, n)) || (all && *all == '1'))
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}
FX CUresult cuMemHostUnregister(void *p)
{
	(void)p;
	return CUDA_SUCCESS;
}
FX CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *d, void *p, unsigned f)
{
	(void)f;
	*d = (CUdeviceptr)(uintptr_t)p;
	return CUDA_SUCCESS;
}
FX CUresult cuMemHostAlloc(void **p, size_t n, unsigned f)
{
	(void)f;
	*p = calloc(1, n);
	return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
FX CUresult cuMemFreeHost(void *p)
{
	free(p);
	return CUDA_SUCCESS;
}
FX CUresult cuFuncGetModule(CUmodule *m, CUfunction f)
{
	fake_rec("cuFuncGetModule");
	*m = (CUmodule)f;
	return CUDA_SUCCESS;
}
FX CUresult cuModuleGetGlobal_v2(CUdeviceptr *d, size_t *sz, CUmodule m, const char *name)
{
	fake_rec("cuModuleGetGlobal_v2");
	int k = 0;
	for (; k < NBLK; k++) {
		char sym[64];
		gx_devrt_symbol(sym, sizeof(sym), (unsigned)k);
		if (!strcmp(name, sym))
			break;
	}
	if (k == NBLK) /* not the device runtime's: the application's own variables */
		return fake_module_global(d, sz, m, name);
	int i = 0;
	while (i < nslots && slots[i].mod != m)
		i++;
	if (i == nslots) {
		if (nslots == 256)
			return CUDA_ERROR_OUT_OF_MEMORY;
		slots[nslots++].mod = m;
	}
	*d = (CUdeviceptr)(uintptr_t)&slots[i].blk[k];
	if (sz)
		*sz = sizeof(struct gx_devrt);
	return CUDA_SUCCESS;
}
FX struct gx_devrt *fakedev_devrt(void *func, unsigned k)
{
	for (int i = 0; i < nslots; i++)
		if (slots[i].mod == func && k < NBLK)
			return slots[i].blk[k].magic ? &slots[i].blk[k] : NULL;
	return NULL;
}
