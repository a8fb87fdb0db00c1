/* passlib_internal.h — what every pass is given, and the helpers all of them use
 * (passlib.c): the options, counters and log of one rewrite, where the
 * module's header ends, the hooks' names. The rest of the library the
 * passes are built from has its own headers: policy_internal.h (the linked policy
 * code), persist_internal.h (the kernels the persistent transform takes), tramp_internal.h
 * (trampolines and stubs), site_internal.h (hook sites), inline_internal.h (handlers),
 * rt_inline_internal.h (leaf functions inlined). No library file calls a pass. */
#ifndef PTX_PASSLIB_H
#define PTX_PASSLIB_H

#include <stddef.h>

#include "ptx-rewrite/gx_ptx.h"
#include "ptx-rewrite/ptx_ir_internal.h"

/* One rewrite's options (read only), result counters and log. */
struct ptx_pass_ctx {
	const struct gx_ptx_rewrite_opts *opts; /* never NULL: defaults filled in */
	struct gx_ptx_rewrite_result *res;	/* nr_kernels is set before the passes */
	struct gx_buf log;			/* becomes res->log */
};

/* A note for the user (a kernel left alone and why): one line of res->log. */
void ptx_pass_log(struct ptx_pass_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The item after which module-level code is inserted (the last of
 * .version/.target/.address_size), NULL = module start. */
struct ptx_item *ptx_module_header_end(struct ptx_module *m);

/* Name of a hook bit ("entry", "mem" ...), NULL if not exactly one known bit. */
const char *ptx_hook_name(unsigned hook);
/* The known hooks in their fixed order: the i-th hook bit, 0 past the last. */
unsigned ptx_hook_nth(size_t i);

/* .maxnreg max(32, regs + slack rounded up to 8) on kernel fn, regs = what
 * opts->persist_regs measured for the original kernel `orig` (gx_ptx.h);
 * nothing when unlisted or fn has a .maxnreg already (the first capping
 * site's stands). 0 or -ENOMEM. */
int ptx_kernel_cap_regs(struct ptx_module *m, const struct gx_ptx_rewrite_opts *o, struct ptx_func *fn,
			const char *orig, unsigned slack);

#endif
