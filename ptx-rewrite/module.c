/* module.c — the parser and emitter behind gx_ptx.h's module API, for
 * callers that inspect PTX without rewriting it (`gpuext ptx check`, the
 * throughput benchmark). The IR itself stays internal (ptx_ir_internal.h). */
#include <stdlib.h>
#include <string.h>

#include "common/gx_util.h"
#include "ptx-rewrite/copy_state_internal.h"
#include "ptx-rewrite/gx_ptx.h"
#include "ptx-rewrite/passlib_internal.h"
#include "ptx-rewrite/ptx_ir_internal.h"

struct gx_ptx_module {
	struct ptx_module *m;
};

GX_EXPORT struct gx_ptx_module *gx_ptx_module__parse(const char *ptx, size_t len, char *err, size_t errlen)
{
	struct gx_ptx_module *pm = calloc(1, sizeof(*pm));
	if (!pm) {
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	pm->m = ptx_module_parse(ptx, len, err, errlen);
	if (!pm->m) {
		free(pm);
		errno = EINVAL;
		return NULL;
	}
	return pm;
}

GX_EXPORT int gx_ptx_module__emit(const struct gx_ptx_module *pm, char **out, size_t *len)
{
	struct gx_buf b;
	gx_buf_init(&b);
	if (!pm || ptx_module_emit(pm->m, &b)) {
		gx_buf_free(&b);
		return gx_err(-ENOMEM);
	}
	*out = gx_buf_steal(&b, len);
	return *out ? 0 : gx_err(-ENOMEM);
}

GX_EXPORT void gx_ptx_module__stats(const struct gx_ptx_module *pm, struct gx_ptx_stats *st)
{
	memset(st, 0, sizeof(*st));
	for (const struct ptx_item *it = pm->m->head; it; it = it->next) {
		if (it->kind == PTX_ITEM_DECL && it->decl.space != PTX_SPACE_SHARED &&
		    it->decl.space != PTX_SPACE_LOCAL)
			st->vars++;
		if (it->kind != PTX_ITEM_FUNC || !it->func.has_body)
			continue;
		if (it->func.is_entry)
			st->kernels++;
		else
			st->funcs++;
		for (const struct ptx_stmt *s = it->func.head; s; s = s->next) {
			if (s->kind != PTX_STMT_INSN)
				continue;
			st->insns++;
			struct ptx_opinfo oi;
			enum ptx_op_class c = ptx_classify(&s->insn, &oi);
			st->memops += c == PTX_OP_LD || c == PTX_OP_ST || c == PTX_OP_ATOM || c == PTX_OP_RED;
		}
	}
}

GX_EXPORT unsigned gx_ptx_module__copy_unsafe(const struct gx_ptx_module *pm, char *name, size_t n)
{
	return ptx_copy_unsafe(pm->m, name, n);
}

GX_EXPORT void gx_ptx_module__free(struct gx_ptx_module *pm)
{
	if (!pm)
		return;
	ptx_module_free(pm->m);
	free(pm);
}

GX_EXPORT const char *gx_ptx_hook_name(unsigned hook)
{
	return ptx_hook_name(hook);
}
