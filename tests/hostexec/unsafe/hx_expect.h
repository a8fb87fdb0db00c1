/* hx_expect.h — for the unsafe-policy corpus (tests/hostexec/unsafe): each
 * object is a struct_ops policy the user-space verifier must refuse, and
 * says with GX_EXPECT which stable message (a substring) the refusal has.
 * test_hostexec reads the string from the object's .gx_expect section. The
 * safe corpus (tests/hostexec/safe: policies that must pass) uses
 * GX_MEM_PREFETCH only. */
#ifndef HX_EXPECT_H
#define HX_EXPECT_H
#include "gx_common.bpf.h"

#define GX_EXPECT(msg) const char __gx_expect[] SEC(".gx_expect") = msg

/* A memory policy with one gpu_prefetch handler named prog. */
#define GX_MEM_PREFETCH(prog)                       \
	SEC(".struct_ops.link")                     \
	struct gpu_mem_ops prog##_ops = {           \
		.gpu_prefetch = (void *)prog,       \
		.name = #prog,                      \
	}
#endif
