/* tramp_internal.h — the trampolines and no-op stubs a module needs (tramp.c):
 * hook sites and the persistent loop ask for them here while they run,
 * pass_tramp.c writes them out at the end. */
#ifndef PTX_TRAMP_H
#define PTX_TRAMP_H

#include <stddef.h>

#include "ptx-rewrite/ptx_ir_internal.h"

/* One trampoline: calls `func` (a policy .func or a stub) for `hook`. virt:
 * the call sites pass (virtual) block ids and grid dims as parameters instead
 * of the trampoline reading %ctaid/%nctaid (kernels under the persistent
 * transform). */
struct ptx_tramp {
	unsigned hook;
	const char *func;
	int virt;
	int sched; /* a sched hook: context from ptx_tramp_sched_site's registers */
	int stub;  /* func is a built-in no-op stub: it reads no context */
	const char *name;
};

struct ptx_tramps {
	struct ptx_module *m;
	struct ptx_tramp *v;
	size_t n, cap;
	unsigned stubs; /* GDEV_HOOK_* bits whose no-op stub is needed */
};

/* Name of the trampoline for (hook, func, virt), created on first use; func
 * NULL = the built-in no-op stub for the hook. NULL on ENOMEM. */
const char *ptx_tramp_get(struct ptx_tramps *tr, unsigned hook, const char *func, int virt);
/* Name of the no-op stub of `hook` ("<prefix>_stub_<hook>"). */
const char *ptx_tramp_stub_name(struct ptx_module *m, unsigned hook);
/* The stub of `hook`, which is then emitted (a site calls it directly).
 * NULL on ENOMEM. */
const char *ptx_tramp_stub(struct ptx_tramps *tr, unsigned hook);
/* A sched hook site (pass_persist_loop.c): the trampoline of a
 * GDEV_HOOK_SCHED_* hook takes its context from registers, vals = start
 * (.b64), units, worker, steals, ctaid x y z, nctaid x y z (.b32): they
 * become the context's addr, size, op, space (the sched_* names of
 * gdev_ctx.h), block index and grid. Appended to c. 0 or -ENOMEM. */
int ptx_tramp_sched_site(struct ptx_module *m, struct ptx_chain *c, const char *tramp, unsigned long long kid,
			 const char *const vals[10], const char *guard, int guard_neg, const char *ret_reg);
void ptx_tramps_free(struct ptx_tramps *tr);

#endif
