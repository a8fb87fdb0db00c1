/* pass_internal.h — the passes, one per file, as passes.c runs them (in this order).
 *
 * A pass gets the module, the rewrite's options and log (ctx), the results
 * of earlier passes it reads (const), and the objects it adds to; whatever
 * else it keeps lives in its own file for the length of one call. Each
 * returns 0, or -errno with a stable message in m->err. Passes call the
 * library (passlib_internal.h and the headers it lists), never each other. */
#ifndef PTX_PASS_H
#define PTX_PASS_H

#include "ptx-rewrite/passlib_internal.h"

struct ptx_policy;
struct ptx_persist_set;
struct ptx_tramps;

/* pass_link.c: parse opts->policy_ptx, rename its symbols, drop its module
 * directives, reconcile .version, insert its items after the module header;
 * fills *pol. */
int ptx_pass_link(struct ptx_module *m, struct ptx_pass_ctx *ctx, struct ptx_policy *pol);
/* pass_persistent.c: which kernels the persistent transform may take (the
 * others are logged with the reason); fills *out. */
int ptx_pass_persist_check(struct ptx_module *m, struct ptx_pass_ctx *ctx, struct ptx_persist_set *out);
/* pass_hooks.c: entry/exit/mem/fence hook sites; handlers inlined or called,
 * the built-in probe and handler clones added to the policy code, the stubs
 * called asked of tr. *nr_elided: sites of the empty built-in handler left out. */
int ptx_pass_hooks(struct ptx_module *m, struct ptx_pass_ctx *ctx, struct ptx_policy *pol, struct ptx_tramps *tr,
		   unsigned *nr_elided);
/* pass_persist_loop.c: the work loop around the accepted kernels' (hooked)
 * bodies, runtime and sched hooks inlined, or called through tr. */
int ptx_pass_persistent(struct ptx_module *m, struct ptx_pass_ctx *ctx, const struct ptx_policy *pol,
			const struct ptx_persist_set *kernels, struct ptx_tramps *tr);
/* pass_tramp.c: __gx_devrt, the stubs and trampolines of tr, after the
 * module header and the policy code. */
int ptx_pass_tramp(struct ptx_module *m, const struct ptx_policy *pol, const struct ptx_tramps *tr);

#endif
