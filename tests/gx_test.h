/* Minimal test helper: every check prints one "ok - NAME" or
 * "not ok - NAME: why" line; scripts/run-tests.sh counts them.
 * main() ends with `return gx_test_done();`. */
#ifndef GX_TEST_H
#define GX_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int gx_test_failed;

#define GX_CHECK(cond, ...)                                               \
	do {                                                              \
		if (cond) {                                               \
			printf("ok - ");                                  \
			printf(__VA_ARGS__);                              \
			printf("\n");                                     \
		} else {                                                  \
			printf("not ok - ");                              \
			printf(__VA_ARGS__);                              \
			printf(": %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
			gx_test_failed++;                                 \
		}                                                         \
		fflush(stdout);                                           \
	} while (0)

/* Test programs in $(BUILD)/tests/PART/ whose code dlopens libgxjit.so
 * (the native back end) find it in $(BUILD)/lib, not next to them or in
 * ../lib: GPUEXT_JITLIB, unless the caller set it. */
static inline void gx_test_find_jitlib(void)
{
	char exe[4096], path[4200];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (getenv("GPUEXT_JITLIB") || n <= 0)
		return;
	exe[n] = 0;
	char *slash = strrchr(exe, '/');
	if (slash)
		*slash = 0;
	snprintf(path, sizeof(path), "%s/../../lib/libgxjit.so", exe);
	setenv("GPUEXT_JITLIB", path, 0);
}

static inline int gx_test_done(void)
{
	return gx_test_failed ? 1 : 0;
}

#endif
