/* fnlocal_internal.h — function-level .local declarations made for hook sites
 * (fnlocal.c): the context a called handler reads (site.c) and the copies
 * of an inlined handler's depots (inline.c), declared once per function
 * and owner however many sites use them. */
#ifndef PTX_FNLOCAL_H
#define PTX_FNLOCAL_H

#include <stddef.h>

#include "ptx-rewrite/ptx_ir_internal.h"

struct ptx_fn_local {
	const struct ptx_func *fn;
	const void *owner; /* the handler whose depot it copies; NULL: the context */
	const char *from, *to;
};

struct ptx_fn_locals {
	struct ptx_fn_local *v;
	size_t n;
};

/* The name of fn's .local for (owner, d): a copy of depot d named afresh
 * ("<P>_dN"), or with owner and d NULL the 128-byte context "<P>_lctx".
 * Declared at the top of fn on first use. NULL on ENOMEM. */
const char *ptx_fn_local(struct ptx_fn_locals *l, struct ptx_module *m, struct ptx_func *fn, const void *owner,
			 const struct ptx_decl *d);
void ptx_fn_locals_free(struct ptx_fn_locals *l);

#endif
