// common.h — shared by the GPU corpus of tests/gpu/shim.sh: error checks and
// a checksum, so every program prints a short deterministic result that the
// script compares bit for bit between runs with and without the shim.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>

#include "../../../common/gx_cu_check.h" /* CU(): driver API calls */

static inline uint64_t fnv(const void *p, size_t n, uint64_t h = 0xcbf29ce484222325ull)
{
	const unsigned char *b = (const unsigned char *)p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}
