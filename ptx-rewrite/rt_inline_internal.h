/* rt_inline_internal.h — leaf .funcs inlined where the persistent loop calls them
 * (rt_inline.c): the device runtime (blocksched's, parsed once per module)
 * and sched-hook handlers. */
#ifndef PTX_RT_INLINE_H
#define PTX_RT_INLINE_H

#include <stddef.h>

#include "ptx-rewrite/ptx_ir_internal.h"

/* The device runtime's PTX (opts->persist_rt), parsed on first use and kept
 * apart from the module's items. */
struct ptx_rt {
	struct ptx_module *m;
	const char *text;
	size_t len;
	struct ptx_item *first; /* NULL until parsed */
};

/* A leaf .func (clang's / the JIT's NVPTX shape) inlined at the end of c,
 * in kernel site_fn (its .local depots go there): args and ret are
 * registers. 0, -EOPNOTSUPP (the function has something the inliner does
 * not follow: why in m->err, c unchanged only if the caller built into a
 * scratch chain) or -ENOMEM. */
int ptx_func_inline(struct ptx_module *m, struct ptx_func *site_fn, struct ptx_chain *c, const struct ptx_func *fn,
		    unsigned nargs, const char *const *args, const char *ret);
/* The runtime's function `name` (begin, next, steal) inlined likewise;
 * anything it cannot inline is an internal error (-EINVAL). */
int ptx_rt_inline(struct ptx_rt *rt, struct ptx_func *site_fn, struct ptx_chain *c, const char *name, unsigned nargs,
		  const char *const *args, const char *ret);

#endif
