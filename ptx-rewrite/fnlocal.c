/* fnlocal.c — function-level .local declarations shared by the hook sites of
 * a function (fnlocal_internal.h). Its own file because both the site builder
 * (site.c: the context) and the handler inliner (inline.c: depots) make
 * them, and neither should call the other for it. */
#include <stdlib.h>
#include <string.h>

#include "ptx-rewrite/ctx_words_internal.h"
#include "ptx-rewrite/fnlocal_internal.h"

const char *ptx_fn_local(struct ptx_fn_locals *l, struct ptx_module *m, struct ptx_func *fn, const void *owner,
			 const struct ptx_decl *d)
{
	const char *from = d ? d->name : "";
	for (size_t i = 0; i < l->n; i++) {
		struct ptx_fn_local *e = &l->v[i];
		if (e->fn == fn && e->owner == owner && !strcmp(e->from, from))
			return e->to;
	}
	struct ptx_fn_local *n = realloc(l->v, (l->n + 1) * sizeof(*n));
	if (!n)
		return NULL;
	l->v = n;
	const char *to = owner ? ptx_fresh_name(m, "", "d") : ptx_sprintf(m, "%s_lctx", m->fresh_prefix);
	struct ptx_stmt *s = ptx_alloc(m, sizeof(*s));
	if (!to || !s)
		return NULL;
	s->kind = PTX_STMT_DECL;
	if (d) {
		s->decl = *d;
	} else { /* .local .align 16 .b8 NAME[128]; */
		s->decl.space = PTX_SPACE_LOCAL;
		s->decl.space_str = ".local";
		s->decl.align = 16;
		s->decl.type = ".b8";
		s->decl.ndims = 1;
		s->decl.dims[0] = PTX_CTXBUF_SLOT;
	}
	s->decl.name = to;
	ptx_insert_before(fn, fn->head, s, s);
	l->v[l->n++] = (struct ptx_fn_local){ fn, owner, from, to };
	return to;
}

void ptx_fn_locals_free(struct ptx_fn_locals *l)
{
	free(l->v);
	l->v = NULL;
	l->n = 0;
}
