/* test_rdc.c — the shim's -rdc path against the fake driver. Given the
 * .nv_fatbin (device-linked SASS) and __nv_relfatbin (the translation units'
 * relocatable ELF + PTX) sections of an nvcc -rdc executable, builds the
 * version-2 fatbin wrapper cudart would register and loads it (as a
 * library and as a module): the shim must JIT-link the units' rewritten PTX
 * (cuLinkCreate/AddData/Complete on the real driver) and load the result;
 * with FAKECUDA_LINK_FAIL set it must load the original instead; on a
 * second start with the same GPUEXT_CACHE_DIR the linked cubin comes from
 * the module cache, with no rewrite and no link.
 *   test_rdc LINKED.bin REL.bin ok|fail|cached */
#include <cuda.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/gx_test.h"

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	rewind(f);
	/* 8-byte aligned, as in the executable */
	char *b = n > 0 ? aligned_alloc(16, ((size_t)n + 15) & ~(size_t)15) : NULL;
	if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
		free(b);
		b = NULL;
	}
	fclose(f);
	*len = b ? (size_t)n : 0;
	return b;
}

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	bool want_ok = !strcmp(argv[3], "ok"), want_cached = !strcmp(argv[3], "cached");
	size_t ll, rl;
	char *linked = slurp(argv[1], &ll), *rel = slurp(argv[2], &rl);
	GX_CHECK(linked && rel && ll > 16 && rl > 16, "read the -rdc sections");
	if (!linked || !rel)
		return gx_test_done();
	/* Split __nv_relfatbin into its containers: header 16 bytes
	 * (magic, version, header size, payload size), 8-byte aligned. */
	const void *units[16];
	size_t nu = 0;
	for (size_t off = 0; off + 16 <= rl && nu < 15;) {
		uint32_t magic;
		uint16_t hs;
		uint64_t fs;
		memcpy(&magic, rel + off, 4);
		memcpy(&hs, rel + off + 6, 2);
		memcpy(&fs, rel + off + 8, 8);
		if (magic != 0xBA55ED50)
			break;
		units[nu++] = rel + off;
		off = (off + hs + fs + 7) & ~(size_t)7;
	}
	units[nu] = NULL;
	GX_CHECK(nu == 2, "two relocatable units in __nv_relfatbin (%zu)", nu);
	struct {
		int magic, version;
		const void *data;
		const void *const *prelinked;
	} wrapper = { 0x466243B1, 2, linked, units };

	GX_CHECK(cuInit(0) == CUDA_SUCCESS, "cuInit");
	void *fake = dlopen(getenv("GPUEXT_REAL_LIBCUDA"), RTLD_NOW | RTLD_NOLOAD);
	long (*count)(const char *) = fake ? (long (*)(const char *))dlsym(fake, "fake_count") : NULL;
	const void *(*last_image)(void) = fake ? (const void *(*)(void))dlsym(fake, "fake_last_image") : NULL;
	const void *(*last_link)(void) = fake ? (const void *(*)(void))dlsym(fake, "fake_last_link_data") : NULL;
	if (!count || !last_image || !last_link) {
		printf("not ok - fake driver helpers\n");
		return 1;
	}
	CUcontext c;
	GX_CHECK(cuDevicePrimaryCtxRetain(&c, 0) == CUDA_SUCCESS && cuCtxSetCurrent(c) == CUDA_SUCCESS, "context");
	/* cudart loads with cuLibraryLoadData; the fake's two devices (sm_90,
	 * sm_80) are of two major archs, which one linked cubin cannot serve:
	 * the library keeps its original image. A module (one context) is
	 * linked for its device. */
	CUlibrary lib = NULL;
	CUresult rc = cuLibraryLoadData(&lib, &wrapper, NULL, NULL, 0, NULL, NULL, 0);
	GX_CHECK(count("cuLinkCreate_v2") == 0 && last_image() == (const void *)&wrapper && rc == CUDA_ERROR_INVALID_IMAGE,
		 "library on devices of two major archs: no link, the original image loaded (rc %d)", rc);
	CUmodule mod = NULL;
	rc = cuModuleLoadData(&mod, &wrapper);
	const char *img = last_image();
	if (want_cached) {
		GX_CHECK(count("cuLinkCreate_v2") == 0 && count("cuLinkAddData_v2") == 0,
			 "second start: no JIT link, the cubin comes from the module cache");
		GX_CHECK(rc == CUDA_SUCCESS && img && img != (const void *)&wrapper && !memcmp(img, "\177ELF fake linked", 16),
			 "the module was loaded from the cached cubin (rc %d)", rc);
		GX_CHECK(cuModuleUnload(mod) == CUDA_SUCCESS, "unload");
	} else if (want_ok) {
		GX_CHECK(count("cuLinkCreate_v2") == 1 && count("cuLinkAddData_v2") == 2 && count("cuLinkComplete") == 1 &&
				 count("cuLinkDestroy") == 1,
			 "-rdc wrapper: one JIT link of the 2 units through the real driver");
		/* (The fake refuses PTX input without ".version"; the units' buffers
		 * are freed after the link, as a real driver has copied them.) */
		GX_CHECK(last_link() != NULL, "the link got the units as PTX");
		GX_CHECK(rc == CUDA_SUCCESS && img && img != (const void *)&wrapper && !memcmp(img, "\177ELF fake linked", 16),
			 "the module was loaded from the link's cubin (rc %d)", rc);
		GX_CHECK(cuModuleUnload(mod) == CUDA_SUCCESS, "unload");
	} else {
		GX_CHECK(count("cuLinkComplete") == 1 && count("cuLinkDestroy") == 1, "link tried once, state destroyed");
		/* The fake cannot load a wrapper: the original's own error comes back. */
		GX_CHECK(img == (const void *)&wrapper && rc == CUDA_ERROR_INVALID_IMAGE,
			 "link failure: the original image is loaded instead, its result returned (rc %d)", rc);
	}
	free(linked);
	free(rel);
	return gx_test_done();
}
