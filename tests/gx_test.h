/* Minimal test helper: every check prints one "ok - NAME" or
 * "not ok - NAME: why" line; scripts/run-tests.sh counts them.
 * main() ends with `return gx_test_done();`. */
#ifndef GX_TEST_H
#define GX_TEST_H

#include <stdio.h>

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

static inline int gx_test_done(void)
{
	return gx_test_failed ? 1 : 0;
}

#endif
