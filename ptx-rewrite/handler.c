/* handler.c — what a hook handler reads of its context, and whether its
 * body can be inlined exactly (handler_internal.h); the inlining itself is inline.c.
 *
 * Why: a handler is `.func (.param .b32 r) F(.param .b64 ctx)` reading a
 * struct gdev_ctx through the pointer. Building that struct in memory and
 * calling F costs the leader lane a store per field, the call, and a memory
 * round trip per field F reads (on the H200 a policy reading two fields made
 * vadd with entry/exit hooks 3x slower). ptxas does not inline .funcs and
 * cannot forward stores to loads through memory, so this file and inline.c
 * do both:
 *
 *  - ptx_handler_get() analyses F once: which 4-byte words of the context it
 *    reads (`ld [R+off]` with R the ctx pointer plus a constant, followed
 *    through mov/add), and whether the pointer escapes (passed to a call,
 *    stored, converted, used in arithmetic the analysis does not follow).
 *    Escaping or not, the call path stores only what can be read.
 *  - ptx_handler_inline() (inline.c) writes F's body into the site:
 *    registers, labels and .local depots renamed, every context load
 *    replaced by moves from the site's word registers (%<P>_w0..29, filled
 *    lazily by site.c), the
 *    ld.param of the pointer and its copies dropped, `ret` → branch to the
 *    site's end, the return value dropped (entry/exit/mem/fence decisions are
 *    not used). A handler is inlined only when that is exact: the pointer
 *    does not escape, every context load decomposes into words, no .shared
 *    or unknown declarations, no `exit`, no verbatim directive that could
 *    name a label, no recursion; and not too large for the hook (site.c:
 *    a mem hook's handler is copied to every memory instruction). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx-rewrite/handler_internal.h"
#include "ptx-rewrite/ptx_internal.h"

#define PTX_ANALYSE_MAX 20000 /* beyond this: assume every field, never inline */

struct regdecl *ptx_an_regdecl(struct regdecl *r, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(r[i].name);
		if (strncmp(name, r[i].name, l))
			continue;
		const char *rest = name + l;
		if (!*rest && !r[i].range)
			return &r[i];
		if (r[i].range && *rest && strspn(rest, "0123456789") == strlen(rest))
			return &r[i];
	}
	return NULL;
}

static struct ctxreg *find_cr(struct ptx_an *a, const char *name)
{
	for (size_t i = 0; i < a->ncr; i++)
		if (!strcmp(a->cr[i].name, name))
			return &a->cr[i];
	return NULL;
}

static int add_cr(struct ptx_an *a, const char *name, long long delta)
{
	struct ctxreg *c = find_cr(a, name);
	if (c) {
		if (c->delta != delta) {
			a->escape = 1;
			a->why = "context pointer redefined";
		}
		return 0;
	}
	if (a->ncr == a->capcr) {
		size_t cap = a->capcr ? 2 * a->capcr : 8;
		struct ctxreg *n = realloc(a->cr, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		a->cr = n;
		a->capcr = cap;
	}
	a->cr[a->ncr++] = (struct ctxreg){ name, delta };
	return 1;
}

int ptx_an_is_id(const struct ptx_opnd *o)
{
	return o && o->kind == PTX_OPND_ID && o->text;
}

static int is_64(const struct ptx_insn *in)
{
	for (unsigned i = 0; i < in->nmods; i++)
		if (!strcmp(in->mods[i], ".u64") || !strcmp(in->mods[i], ".b64") || !strcmp(in->mods[i], ".s64"))
			return 1;
	return 0;
}

/* `ld.param.X R, [ctxparam]`: returns R, else NULL. */
const char *ptx_an_param_load(struct ptx_an *a, const struct ptx_insn *in)
{
	if (strcmp(in->opcode, "ld") || in->guard || in->nops != 2 || !is_64(in) || !ptx_insn_has_mod(in, ".param"))
		return NULL;
	const struct ptx_opnd *ad = in->ops[1];
	if (!ptx_an_is_id(in->ops[0]) || !ad || ad->kind != PTX_OPND_ADDR || ad->n != 1 || ad->off ||
	    !ptx_an_is_id(ad->elems[0]) || strcmp(ad->elems[0]->text, a->param))
		return NULL;
	return in->ops[0]->text;
}

/* A copy of the pointer plus a constant (mov/add/sub .64 R, S[, imm]) with S
 * a context register: sets *dst, *delta. */
int ptx_an_ctx_copy(struct ptx_an *a, const struct ptx_insn *in, const char **dst, long long *delta)
{
	if (in->guard || !in->nops || !is_64(in) || in->nmods != 1 || !ptx_an_is_id(in->ops[0]))
		return 0;
	struct ctxreg *s;
	if (!strcmp(in->opcode, "mov") && in->nops == 2 && ptx_an_is_id(in->ops[1]) &&
	    (s = find_cr(a, in->ops[1]->text))) {
		*delta = s->delta;
	} else if ((!strcmp(in->opcode, "add") || !strcmp(in->opcode, "sub")) && in->nops == 3) {
		const struct ptx_opnd *x = in->ops[1], *y = in->ops[2];
		int sub = in->opcode[0] == 's';
		if (!sub && y && y->kind == PTX_OPND_ID && x && x->kind == PTX_OPND_INT) {
			const struct ptx_opnd *t = x;
			x = y;
			y = t;
		}
		if (!ptx_an_is_id(x) || !y || y->kind != PTX_OPND_INT || !(s = find_cr(a, x->text)))
			return 0;
		*delta = sub ? s->delta - y->ival : s->delta + y->ival;
	} else {
		return 0;
	}
	*dst = in->ops[0]->text;
	return 1;
}

/* A load from the context: `ld[.generic][.v2|.v4].T D, [R+off]` with R a
 * context register. Returns the context register, else NULL. */
struct ctxreg *ptx_an_ctx_load(struct ptx_an *a, const struct ptx_insn *in, struct ptx_opinfo *oi)
{
	if (ptx_classify(in, oi) != PTX_OP_LD || oi->space != PTX_SPACE_GENERIC || oi->addr_op != 1 || in->nops != 2 ||
	    strcmp(in->opcode, "ld"))
		return NULL;
	const struct ptx_opnd *ad = in->ops[1];
	if (!ad || ad->kind != PTX_OPND_ADDR || ad->n != 1 || !ptx_an_is_id(ad->elems[0]))
		return NULL;
	return find_cr(a, ad->elems[0]->text);
}

/* Does operand o mention a context register (or the ctx/ret parameter)? */
int ptx_an_mentions(struct ptx_an *a, const struct ptx_opnd *o)
{
	if (!o)
		return 0;
	if (o->kind == PTX_OPND_ID && o->text)
		return find_cr(a, o->text) || !strcmp(o->text, a->param) || (a->ret && !strcmp(o->text, a->ret));
	if (o->kind == PTX_OPND_EXPR && o->text)
		return strchr(o->text, '%') || strstr(o->text, a->param) || (a->ret && strstr(o->text, a->ret));
	for (unsigned i = 0; i < o->n; i++)
		if (ptx_an_mentions(a, o->elems[i]))
			return 1;
	return 0;
}

/* The words of struct gdev_ctx an element of `size` bytes at `off` covers;
 * 0 if it is outside the struct or misaligned. */
static unsigned words_of(long long off, unsigned size)
{
	if (off < 0 || !size || off + size > GDEV_CTX_SIZE || off % (size < 4 ? size : 4))
		return 0;
	unsigned w = 0;
	for (long long o = off / 4; o * 4 < off + size; o++)
		w |= 1u << o;
	return w;
}

/* `st.param.bN [ret], X`: the return value. */
int ptx_an_ret_store(struct ptx_an *a, const struct ptx_insn *in)
{
	if (!a->ret || strcmp(in->opcode, "st") || !ptx_insn_has_mod(in, ".param") || in->nops != 2)
		return 0;
	const struct ptx_opnd *ad = in->ops[0];
	return ad && ad->kind == PTX_OPND_ADDR && ad->n == 1 && ptx_an_is_id(ad->elems[0]) &&
	       !strcmp(ad->elems[0]->text, a->ret) && !ptx_an_mentions(a, in->ops[1]);
}

static void not_inline(struct ptx_an *a, const char *why)
{
	if (a->inl) {
		a->inl = 0;
		a->why = why;
	}
}

static int analyse(struct ptx_an *a)
{
	struct ptx_func *fn = a->fn;
	size_t ninsn = 0, cap = 0;
	for (struct ptx_stmt *s = fn->head; s; s = s->next) {
		if (s->kind == PTX_STMT_INSN)
			ninsn++;
		if (s->kind == PTX_STMT_DECL && s->decl.space == PTX_SPACE_REG) {
			if (a->nregs == cap) {
				cap = cap ? 2 * cap : 16;
				struct regdecl *n = realloc(a->regs, cap * sizeof(*n));
				if (!n)
					return -ENOMEM;
				a->regs = n;
			}
			a->regs[a->nregs++] =
				(struct regdecl){ s->decl.name, s->decl.range, ptx_type_size(s->decl.type) };
		}
	}
	if (ninsn > PTX_ANALYSE_MAX) {
		a->escape = 1;
		a->why = "too large to analyse";
		return 0;
	}
	a->ninsn = ninsn;
	/* 1. The context registers: fixpoint over loads of the parameter and
	 *    copies (definitions may follow uses in the text, e.g. in loops). */
	for (int changed = 1; changed;) {
		changed = 0;
		for (struct ptx_stmt *s = fn->head; s; s = s->next) {
			if (s->kind != PTX_STMT_INSN)
				continue;
			const char *d = ptx_an_param_load(a, &s->insn);
			long long delta = 0;
			if (!d && !ptx_an_ctx_copy(a, &s->insn, &d, &delta))
				continue;
			int r = add_cr(a, d, delta);
			if (r < 0)
				return r;
			changed |= r;
		}
	}
	/* 2. Every other mention of them: a field load, or an escape. */
	int depth = 0;
	for (struct ptx_stmt *s = fn->head; s; s = s->next) {
		switch (s->kind) {
		case PTX_STMT_OPEN:
			depth++;
			continue;
		case PTX_STMT_CLOSE:
			depth--;
			continue;
		case PTX_STMT_LABEL:
			continue;
		case PTX_STMT_VERBATIM:
			if (strncmp(s->text, ".loc", 4) && strncmp(s->text, ".pragma", 7))
				not_inline(a, "verbatim directive in the body");
			continue;
		case PTX_STMT_DECL:
			if (s->decl.space == PTX_SPACE_REG)
				continue;
			if (s->decl.space == PTX_SPACE_LOCAL && !depth && !s->decl.init)
				continue;
			if (s->decl.space == PTX_SPACE_PARAM && depth && strcmp(s->decl.name, a->param) &&
			    (!a->ret || strcmp(s->decl.name, a->ret)))
				continue;
			not_inline(a, "declaration the inliner does not move");
			continue;
		case PTX_STMT_INSN:
			break;
		}
		const struct ptx_insn *in = &s->insn;
		const char *d;
		long long delta;
		struct ptx_opinfo oi;
		struct ctxreg *c;
		if (ptx_an_param_load(a, in) || ptx_an_ctx_copy(a, in, &d, &delta))
			continue;
		if (!strcmp(in->opcode, "exit"))
			not_inline(a, "exit");
		if (!strcmp(in->opcode, "call")) {
			struct ptx_call_parts cp;
			if (ptx_call_parts(in, &cp) || !ptx_an_is_id(cp.callee) || !strcmp(cp.callee->text, fn->name) ||
			    cp.proto)
				not_inline(a, "recursive or indirect call");
		}
		if (ptx_an_ret_store(a, in))
			continue;
		if ((c = ptx_an_ctx_load(a, in, &oi))) {
			long long off = c->delta + in->ops[1]->off;
			unsigned w = 0, n = oi.vec, es = oi.elem_size;
			int ok = es && !in->guard;
			for (unsigned i = 0; ok && i < n; i++) {
				unsigned wi = words_of(off + (long long)i * es, es);
				ok = wi != 0;
				w |= wi;
			}
			if (!ok) {
				a->escape = 1;
				a->why = "context load the analysis does not follow";
				continue;
			}
			a->words |= w;
			if (es > 8 || ptx_an_mentions(a, in->ops[0]))
				not_inline(a, "context load form");
			continue;
		}
		for (unsigned i = 0; i < in->nops; i++)
			if (ptx_an_mentions(a, in->ops[i]) ||
			    (in->guard && (find_cr(a, in->guard) || !strcmp(in->guard, a->param)))) {
				a->escape = 1;
				a->why = "context pointer escapes";
				break;
			}
	}
	if (a->escape)
		not_inline(a, a->why);
	return 0;
}

int ptx_handler_get(struct ptx_handlers *ps, const char *name, struct ptx_handler **out)
{
	for (size_t i = 0; i < ps->n; i++)
		if (!strcmp(ps->v[i]->name, name)) {
			*out = ps->v[i];
			return 0;
		}
	if (ps->n == ps->cap) {
		size_t cap = ps->cap ? 2 * ps->cap : 4;
		struct ptx_handler **n = realloc(ps->v, cap * sizeof(*n));
		if (!n)
			return gx_err(-ENOMEM);
		ps->v = n;
		ps->cap = cap;
	}
	struct ptx_handler *h = ptx_alloc(ps->m, sizeof(*h));
	if (!h)
		return gx_err(-ENOMEM);
	h->name = name;
	h->words = PTX_CTX_ALL_WORDS;
	h->uni_exit = -1;
	struct ptx_item *it = ptx_find_func(ps->m, name);
	struct ptx_func *fn = it ? &it->func : NULL;
	if (!fn || !fn->has_body || fn->nparams != 1 || fn->nrets > 1 || ptx_type_size(fn->params[0].type) != 8 ||
	    (fn->nrets && ptx_type_size(fn->rets[0].type) != 4)) {
		h->why = "not a .func (.param .b32) F(.param .b64) with a body";
	} else {
		struct ptx_an a = {
			.fn = fn, .param = fn->params[0].name, .ret = fn->nrets ? fn->rets[0].name : NULL, .inl = 1
		};
		int err = analyse(&a);
		struct ptx_an *keep = NULL;
		if (!err && a.inl) {
			/* kept for tmpl_build (in the arena) */
			keep = ptx_alloc_raw(ps->m, sizeof(*keep));
			struct regdecl *rg = ptx_alloc_raw(ps->m, a.nregs * sizeof(*rg) + 1);
			struct ctxreg *cr = ptx_alloc_raw(ps->m, a.ncr * sizeof(*cr) + 1);
			if (!keep || !rg || !cr) {
				err = -ENOMEM;
			} else {
				*keep = a;
				if (a.nregs)
					memcpy(rg, a.regs, a.nregs * sizeof(*rg));
				if (a.ncr)
					memcpy(cr, a.cr, a.ncr * sizeof(*cr));
				keep->regs = rg;
				keep->cr = cr;
				keep->capcr = a.ncr;
			}
		}
		free(a.regs);
		free(a.cr);
		if (err)
			return gx_err(err);
		h->an = keep;
		h->fn = fn;
		h->inlinable = a.inl;
		h->why = a.why;
		h->ninsn = a.ninsn;
		if (!a.escape)
			h->words = a.words;
	}
	ps->v[ps->n++] = h;
	*out = h;
	return 0;
}

void ptx_handlers_free(struct ptx_handlers *hs)
{
	free(hs->v);
	hs->v = NULL;
	hs->n = hs->cap = 0;
}
