/* inline_internal.h — an analysed handler (handler_internal.h) inlined at a hook site
 * (inline.c). */
#ifndef PTX_INLINE_H
#define PTX_INLINE_H

#include "ptx-rewrite/ctx_words_internal.h"
#include "ptx-rewrite/handler_internal.h"
#include "ptx-rewrite/ptx_ir_internal.h"

struct ptx_fn_locals;

struct ptx_inliner {
	struct ptx_module *m;
	struct ptx_fn_locals *locals; /* where inlined depots are declared */
	unsigned nr_inlined;	      /* sites so far: names their labels */
};

/* Append h's body, inlined, for a site in site_fn: its top-level
 * declarations (renamed) to decls, its code to body. Context word i is read
 * from register r->ow[i], r->ot is a .b32 scratch register, `end` the label
 * after the site. Only for h->inlinable. The body is analysed and turned into
 * IR once per handler; each site clones it with fresh names. 0 or -errno. */
int ptx_handler_inline(struct ptx_inliner *in, struct ptx_func *site_fn, struct ptx_handler *h, struct ptx_chain *decls,
		       struct ptx_chain *body, const struct ptx_site_regs *r, const char *end);

#endif
