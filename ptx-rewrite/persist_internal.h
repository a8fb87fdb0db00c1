/* persist_internal.h — the kernels the persistent-worker transform takes: what
 * pass_persistent.c decides (the check) and pass_persist_loop.c uses (the
 * transform). Header only: a list and its lookup. */
#ifndef PTX_PERSIST_H
#define PTX_PERSIST_H

#include <stddef.h>

#include "ptx-rewrite/ptx_ir_internal.h"

struct ptx_persist {
	const struct ptx_func *fn;
	unsigned bar_id; /* a CTA barrier id the kernel does not use */
	int unit_bar;	 /* the kernel (or a callee) uses shared memory or CTA
				 * barriers: its block must finish a unit before any
				 * thread starts the next */
};

struct ptx_persist_set {
	struct ptx_persist *v; /* malloc'ed; the owner frees it */
	size_t n;
};

static inline const struct ptx_persist *ptx_persist_find(const struct ptx_persist_set *s, const struct ptx_func *fn)
{
	for (size_t i = 0; s && i < s->n; i++)
		if (s->v[i].fn == fn)
			return &s->v[i];
	return NULL;
}

#endif
