/* copy_state.c — can a second copy of this module stand in for it?
 *
 * `gpuext attach` loads an instrumented copy of a module and switches the
 * application's launches to it. Shared and local memory are per launch, so
 * they do not matter; module-scope state does: the copy has its own
 * `.global`/`.const` variables, texture and surface references and managed
 * variables, and what the original's kernels wrote there before the attach,
 * or the host writes there (cuModuleGetGlobal + a copy), the copy's kernels
 * would not see. So a copy is only faithful when every such variable holds,
 * in the copy, what it holds in the original for the rest of the run:
 *  - `.const` variables: kernels cannot write them;
 *  - `.global` variables whose every use is the address of a load (`ld`,
 *    `ldu`): never written, address never taken, so never written through
 *    a pointer either;
 * and the host never asked for their addresses (the shim's side: live.c).
 * Managed variables, texture/surface/sampler references, extern variables
 * and anything the parser kept as text that names a variable are not.
 * The test is conservative: a `.global` table read through a computed
 * address (`mov %rd, tab; ...; ld [%rd]`) counts as possibly written. */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "ptx-rewrite/copy_state_internal.h"
#include "ptx-rewrite/ptx_ir_internal.h"

struct var {
	const char *name;
	bool bad;
	UT_hash_handle hh;
};

static bool is_ref_type(const char *type)
{
	return type && (!strcmp(type, ".texref") || !strcmp(type, ".surfref") || !strcmp(type, ".samplerref"));
}

static bool ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '$' || c == '%';
}

/* Does text name `name` as a whole identifier? */
static bool names(const char *text, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = text; (p = strstr(p, name)); p++)
		if ((p == text || !ident_char(p[-1])) && !ident_char(p[n]))
			return true;
	return false;
}

static void mark_text(struct var *vars, const char *text)
{
	if (!text)
		return;
	for (struct var *v = vars; v; v = v->hh.next)
		if (!v->bad && names(text, v->name))
			v->bad = true;
}

/* Every variable the operand names is marked, but `ok`: the base of the
 * address operand of a load (its offset may follow). */
static void mark_opnd(struct var *vars, const struct ptx_opnd *o, const struct ptx_opnd *ok)
{
	if (!o)
		return;
	if (o->kind == PTX_OPND_ID && o != ok) {
		struct var *v;
		HASH_FIND_STR(vars, o->text, v);
		if (v)
			v->bad = true;
	} else if (o->kind == PTX_OPND_EXPR) {
		mark_text(vars, o->text);
	}
	for (unsigned i = 0; i < o->n; i++)
		mark_opnd(vars, o->elems[i], ok);
}

static void mark_insn(struct var *vars, const struct ptx_insn *in)
{
	struct ptx_opinfo oi;
	const struct ptx_opnd *ok = NULL;
	if (ptx_classify(in, &oi) == PTX_OP_LD && oi.addr_op >= 0 && (unsigned)oi.addr_op < in->nops) {
		const struct ptx_opnd *a = in->ops[oi.addr_op];
		if (a->kind == PTX_OPND_ADDR && a->n == 1)
			ok = a->elems[0];
	}
	for (unsigned i = 0; i < in->nops; i++)
		mark_opnd(vars, in->ops[i], ok);
}

unsigned ptx_copy_unsafe(const struct ptx_module *m, char *name, size_t n)
{
	struct var *vars = NULL, *v, *t;
	unsigned bad = 0;
	if (name && n)
		name[0] = 0;
	for (const struct ptx_item *it = m->head; it; it = it->next) {
		if (it->kind != PTX_ITEM_DECL)
			continue;
		const struct ptx_decl *d = &it->decl;
		if (d->space == PTX_SPACE_SHARED || d->space == PTX_SPACE_LOCAL)
			continue;
		bool written = d->space != PTX_SPACE_CONST; /* until shown read-only */
		bool never = (d->attr && strstr(d->attr, "managed")) || is_ref_type(d->type) ||
			     (d->linkage & PTX_LINK_EXTERN) ||
			     (d->space != PTX_SPACE_CONST && d->space != PTX_SPACE_GLOBAL);
		if (never) {
			if (!bad++ && name && n)
				snprintf(name, n, "%s", d->name);
			continue;
		}
		if (!written)
			continue;
		HASH_FIND_STR(vars, d->name, v);
		if (!v && (v = calloc(1, sizeof(*v)))) {
			v->name = d->name;
			HASH_ADD_KEYPTR(hh, vars, v->name, strlen(v->name), v);
		} else if (!v) {
			bad++; /* out of memory: say no */
		}
	}
	for (const struct ptx_item *it = vars ? m->head : NULL; it; it = it->next) {
		if (it->kind == PTX_ITEM_VERBATIM) {
			mark_text(vars, it->text);
		} else if (it->kind == PTX_ITEM_DECL) {
			mark_text(vars, it->decl.init); /* another variable holds its address */
		} else if (it->kind == PTX_ITEM_FUNC) {
			for (const struct ptx_stmt *s = it->func.head; s; s = s->next)
				if (s->kind == PTX_STMT_INSN)
					mark_insn(vars, &s->insn);
				else if (s->kind == PTX_STMT_VERBATIM)
					mark_text(vars, s->text);
				else if (s->kind == PTX_STMT_DECL)
					mark_text(vars, s->decl.init);
		}
	}
	HASH_ITER(hh, vars, v, t)
	{
		if (v->bad && !bad++ && name && n)
			snprintf(name, n, "%s", v->name);
		HASH_DEL(vars, v);
		free(v);
	}
	return bad;
}
