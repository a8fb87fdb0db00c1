/* Test policy for tests/ptx-rewrite/test_link.sh: compiled to PTX by clang-19
 * (NVPTX back end), then linked into an application module by pass_link.c.
 * `counter` deliberately clashes with a global of golden-passes/edge.ptx. */
#include "gpuext/gdev_ctx.h"
unsigned long long hits;            /* a policy global (clashes with nothing) */
unsigned long long counter;         /* clashes with the test module's 'counter' */
static __attribute__((noinline)) unsigned bump(unsigned long long *p, unsigned v)
{
	*p += v;
	return (unsigned)*p;
}
int probe_entry(struct gdev_ctx *ctx)
{
	bump(&hits, ctx->nr_active);
	return 0;
}
int mem_access(struct gdev_ctx *ctx)
{
	if (ctx->size > 8)
		bump(&counter, 1);
	return 0;
}
