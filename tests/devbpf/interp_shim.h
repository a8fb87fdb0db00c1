/* interp_shim.h — how the JIT tests reach the reference interpreter.
 * Until devbpf/interp.c is in the tree this returns -ENOSYS and the tests
 * compare with the tables' expected values only. */
#ifndef GX_TEST_INTERP_SHIM_H
#define GX_TEST_INTERP_SHIM_H

#include <errno.h>
#include <linux/bpf.h>
#include <stddef.h>
#include <stdint.h>

static inline int gx_test_interp(const struct bpf_insn *insns, size_t n, void *ctx, uint64_t *r0)
{
	(void)insns, (void)n, (void)ctx, (void)r0;
	return -ENOSYS;
}

#endif
