/* rt_inline.c — the persistent loop's device runtime (blocksched's
 * bs_rt.c as clang's NVPTX output, opts->persist_rt), inlined where the loop
 * calls it.
 *
 * Why inline and not call: with the runtime linked as .funcs and called,
 * ptxas gave a 1M-block vector add 40 registers instead of 12 (the ABI puts
 * the callee's registers on top of everything live across the call), which
 * cuts its resident blocks from 8 to 6 per SM; a GEMM at 32 would drop from
 * 2 to 1. Inlined, ptxas allocates across the kernel and the runtime's
 * temporaries share registers with the body's (they are never live at the
 * same time): 28 for the same loop compiled as one function.
 *
 * What the inliner relies on (clang's output for leaf functions, checked at
 * each use: anything else is an internal error and the module is left as it
 * came): parameters are read with `ld.param.T %reg, [NAME_param_K]`, the
 * value returned with `st.param.b64 [func_retval0+0], %reg` (or +0 missing),
 * `ret` ends the function, and no `call` inside (nested `{ }` scopes are
 * kept as they are, their registers renamed too). At a site, the body is
 * copied into a `{ }` scope, its registers and labels renamed apart, the
 * parameter loads become moves from the arguments and `ret` a branch to the
 * scope (its label right after the scope). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuext/gx_work.h"
#include "ptx-rewrite/rt_inline_internal.h"

/* Parse the runtime once per module (kept apart from the module's items). */
static int rt_load(struct ptx_rt *rt)
{
	struct ptx_module *m = rt->m;
	if (rt->first)
		return 0;
	struct ptx_item *first, *last;
	int err = ptx_parse_items(m, rt->text, rt->len, &first, &last);
	if (err) {
		char why[sizeof(m->err)];
		memcpy(why, m->err, sizeof(why));
		snprintf(m->err, sizeof(m->err), "internal error: persistent runtime PTX: %.200s", why);
		return gx_err(-EINVAL);
	}
	rt->first = first;
	return 0;
}

static const struct ptx_func *rt_func(struct ptx_rt *rt, const char *name)
{
	char full[64];
	snprintf(full, sizeof(full), "%s%s", GX_WORK_RT_PREFIX, name);
	for (struct ptx_item *it = rt->first; it; it = it->next)
		if (it->kind == PTX_ITEM_FUNC && it->func.has_body && !strcmp(it->func.name, full))
			return &it->func;
	return NULL;
}

struct site {
	struct ptx_module *m;
	const char *pfx;	      /* "%__gx_i3" / "$__gx_i3" base, without sigil */
	const struct ptx_decl **regs; /* the function's register declarations */
	size_t nregs;
	const char **lfrom, **lto; /* .local depots renamed (moved to the kernel) */
	size_t nloc;
};

/* The declaration of register `name` ("%rd12" → the decl of "%rd<N>"). */
static const struct ptx_decl *reg_decl(const struct site *s, const char *name)
{
	if (!name || name[0] != '%')
		return NULL;
	size_t n = strlen(name);
	while (n > 1 && name[n - 1] >= '0' && name[n - 1] <= '9')
		n--;
	for (size_t i = 0; i < s->nregs; i++) {
		const struct ptx_decl *d = s->regs[i];
		if (d->range ? strlen(d->name) == n && !strncmp(d->name, name, n) : !strcmp(d->name, name))
			return d;
	}
	return NULL;
}

static const char *rename_reg(const struct site *s, const char *name)
{
	return reg_decl(s, name) ? ptx_sprintf(s->m, "%%%s%s", s->pfx, name + 1) : name;
}

static int rename_opnd(const struct site *s, struct ptx_opnd *o)
{
	if (!o)
		return 0;
	if (o->kind == PTX_OPND_ID && o->text) {
		for (size_t i = 0; i < s->nloc; i++)
			if (!strcmp(o->text, s->lfrom[i]))
				o->text = s->lto[i];
		if (o->text[0] == '$')
			o->text = ptx_sprintf(s->m, "$%s%s", s->pfx, o->text + 1);
		else
			o->text = rename_reg(s, o->text);
		if (!o->text)
			return -ENOMEM;
	} else if (o->kind == PTX_OPND_EXPR) {
		return -EINVAL; /* clang writes none in this code */
	}
	for (unsigned i = 0; i < o->n; i++)
		if (rename_opnd(s, o->elems[i]))
			return -ENOMEM;
	return 0;
}

/* What the inliner cannot follow: -EOPNOTSUPP, why in m->err. */
static int fail(struct ptx_module *m, const char *what)
{
	snprintf(m->err, sizeof(m->err), "%s", what);
	return -EOPNOTSUPP;
}

/* Which parameter an ld.param reads (its index), or -1. */
static int param_index(const struct ptx_func *fn, const struct ptx_insn *in)
{
	if (strcmp(in->opcode, "ld") || !ptx_insn_has_mod(in, ".param") || in->nops != 2 ||
	    in->ops[1]->kind != PTX_OPND_ADDR || in->ops[1]->off || !in->ops[1]->n ||
	    in->ops[1]->elems[0]->kind != PTX_OPND_ID)
		return -1;
	for (unsigned i = 0; i < fn->nparams; i++)
		if (!strcmp(fn->params[i].name, in->ops[1]->elems[0]->text))
			return (int)i;
	return -1;
}

int ptx_func_inline(struct ptx_module *m, struct ptx_func *site_fn, struct ptx_chain *c, const struct ptx_func *fn,
		    unsigned nargs, const char *const *args, const char *ret)
{
	int err = 0;
	if (fn->nparams != nargs || fn->nrets > 1)
		return fail(m, "other parameters than the site passes");
	struct site s = { .m = m };
	const char *pfx = ptx_fresh_name(m, "", "i");
	const char *end = ptx_fresh_name(m, "$", "Lrt");
	size_t nd = 0;
	for (const struct ptx_stmt *st = fn->head; st; st = st->next)
		nd += st->kind == PTX_STMT_DECL;
	s.regs = calloc(nd ? nd : 1, sizeof(*s.regs));
	s.lfrom = calloc(nd ? nd : 1, sizeof(*s.lfrom));
	s.lto = calloc(nd ? nd : 1, sizeof(*s.lto));
	if (!pfx || !end || !s.regs || !s.lfrom || !s.lto) {
		free(s.regs);
		free(s.lfrom);
		free(s.lto);
		return gx_err(-ENOMEM);
	}
	s.pfx = pfx;
	for (const struct ptx_stmt *st = fn->head; st; st = st->next) {
		if (st->kind == PTX_STMT_DECL && st->decl.space == PTX_SPACE_REG)
			s.regs[s.nregs++] = &st->decl;
		else if (st->kind == PTX_STMT_DECL && st->decl.space == PTX_SPACE_LOCAL) {
			s.lfrom[s.nloc] = st->decl.name;
			s.lto[s.nloc] = ptx_sprintf(m, "%s%s", pfx, st->decl.name);
			if (!s.lto[s.nloc++])
				err = -ENOMEM;
		}
		if (st->kind == PTX_STMT_INSN && !strcmp(st->insn.opcode, "call"))
			err = err ? err : fail(m, "a call");
	}
	struct ptx_chain body = { 0 };
	struct ptx_chain src = { .head = fn->head, .tail = fn->tail };
	if (!err)
		err = ptx_chain_copy(m, &body, &src);
	ptx_chain_scope(m, c, 1);
	for (struct ptx_stmt *st = body.head, *nx; !err && st; st = nx) {
		nx = st->next;
		st->prev = st->next = NULL;
		switch (st->kind) {
		case PTX_STMT_DECL:
			if (st->decl.space == PTX_SPACE_LOCAL) {
				/* the depot: the kernel's, under its new name */
				for (size_t i = 0; i < s.nloc; i++)
					if (!strcmp(st->decl.name, s.lfrom[i]))
						st->decl.name = s.lto[i];
				ptx_insert_before(site_fn, site_fn->head, st, st);
				break;
			}
			if (st->decl.space != PTX_SPACE_REG) {
				err = fail(m, "a declaration other than registers and .local");
				break;
			}
			/* %-names renamed apart; LLVM's bare ones (`tmp`) only live
			 * in a nested scope, where they shadow nothing of ours */
			if (st->decl.name[0] == '%') {
				st->decl.name = ptx_sprintf(m, "%%%s%s", pfx, st->decl.name + 1);
				err = st->decl.name ? 0 : -ENOMEM;
			}
			ptx_chain_link(c, st);
			break;
		case PTX_STMT_LABEL:
			st->text = ptx_sprintf(m, "$%s%s", pfx, st->text + 1);
			err = st->text ? 0 : -ENOMEM;
			ptx_chain_link(c, st);
			break;
		case PTX_STMT_INSN: {
			struct ptx_insn *in = &st->insn;
			const char *g = in->guard ? rename_reg(&s, in->guard) : NULL;
			int k = param_index(fn, in);
			if (!strcmp(in->opcode, "call")) {
				err = fail(m, "a call inside the runtime");
			} else if (k >= 0) {
				/* ld.param.T d, [P_k] → mov (or cvt when d is wider) */
				const struct ptx_decl *dd = reg_decl(&s, in->ops[0]->text);
				unsigned ts = 0;
				for (unsigned i = 0; i < in->nmods; i++)
					ts = ts ? ts : ptx_type_size(in->mods[i]);
				unsigned ds = dd ? ptx_type_size(dd->type) : 0;
				const char *d = rename_reg(&s, in->ops[0]->text);
				if (!d || !ts || !ds || ds < ts)
					err = fail(m, "a parameter load it cannot follow");
				else if (ds == ts)
					ptx_chain_insn(m, c, g, in->guard_neg, "mov",
						       PTX_MODS(ts == 8 ? ".b64" : ".b32"), 2, ptx_opnd_id(m, d),
						       ptx_opnd_id(m, args[k]));
				else
					ptx_chain_insn(m, c, g, in->guard_neg, "cvt", PTX_MODS(".u64", ".u32"), 2,
						       ptx_opnd_id(m, d), ptx_opnd_id(m, args[k]));
			} else if (!strcmp(in->opcode, "st") && ptx_insn_has_mod(in, ".param")) {
				/* st.param.bN [func_retval0+0], r → mov ret, r */
				const struct ptx_decl *vd = in->nops == 2 && in->ops[1]->kind == PTX_OPND_ID
								    ? reg_decl(&s, in->ops[1]->text)
								    : NULL;
				if (!ret || !vd) {
					err = fail(m, "a return it cannot follow");
					break;
				}
				const char *v = rename_reg(&s, in->ops[1]->text);
				ptx_chain_insn(m, c, g, in->guard_neg, "mov",
					       PTX_MODS(ptx_type_size(vd->type) == 8 ? ".b64" : ".b32"), 2,
					       ptx_opnd_id(m, ret), ptx_opnd_id(m, v));
			} else if (!strcmp(in->opcode, "ret")) {
				ptx_chain_insn(m, c, g, in->guard_neg, "bra", 0, NULL, 1, ptx_opnd_id(m, end));
			} else {
				in->guard = g;
				for (unsigned i = 0; !err && i < in->nops; i++)
					if ((err = rename_opnd(&s, in->ops[i])) == -EINVAL)
						err = fail(m, "an operand it cannot rename");
				ptx_chain_link(c, st);
			}
			break;
		}
		case PTX_STMT_VERBATIM:
			break; /* .pragma and the like: not needed inline */
		case PTX_STMT_OPEN:
		case PTX_STMT_CLOSE:
			/* LLVM's { .reg .b32 tmp; mov.b64 {tmp, %r}, %rd; } and the
			 * JIT's scoped atomics: kept as scopes, their registers
			 * renamed with the rest (sibling scopes may reuse a name) */
			ptx_chain_link(c, st);
			break;
		default: /* every kind is handled above; a new one must be taught here */
			err = fail(m, "a statement it does not know");
			break;
		}
	}
	free(s.regs);
	free(s.lfrom);
	free(s.lto);
	ptx_chain_scope(m, c, 0);
	ptx_chain_label(m, c, end);
	if (!err && c->failed)
		err = gx_err(-ENOMEM);
	return err;
}

int ptx_rt_inline(struct ptx_rt *rt, struct ptx_func *site_fn, struct ptx_chain *c, const char *name, unsigned nargs,
		  const char *const *args, const char *ret)
{
	struct ptx_module *m = rt->m;
	int err = rt_load(rt);
	if (err)
		return err;
	const struct ptx_func *fn = rt_func(rt, name);
	err = fn ? ptx_func_inline(m, site_fn, c, fn, nargs, args, ret) : fail(m, "a function is missing");
	if (err == -EOPNOTSUPP) {
		char why[sizeof(m->err)];
		memcpy(why, m->err, sizeof(why));
		snprintf(m->err, sizeof(m->err), "internal error: persistent runtime PTX: %.200s", why);
		err = gx_err(-EINVAL);
	}
	return err;
}
