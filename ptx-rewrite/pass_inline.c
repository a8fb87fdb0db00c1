/* pass_inline.c — what a hook handler reads of its context, and its body
 * inlined at a hook site with the context in registers.
 *
 * Why: a handler is `.func (.param .b32 r) F(.param .b64 ctx)` reading a
 * struct gdev_ctx through the pointer. Building that struct in memory and
 * calling F costs the leader lane a store per field, the call, and a memory
 * round trip per field F reads (on the H200 a policy reading two fields made
 * vadd with entry/exit hooks 3x slower). ptxas does not inline .funcs and
 * cannot forward stores to loads through memory, so this file does both:
 *
 *  - ptx_handler_get() analyses F once: which 4-byte words of the context it
 *    reads (`ld [R+off]` with R the ctx pointer plus a constant, followed
 *    through mov/add), and whether the pointer escapes (passed to a call,
 *    stored, converted, used in arithmetic the analysis does not follow).
 *    Escaping or not, the call path stores only what can be read.
 *  - ptx_handler_inline() writes F's body into the site: registers, labels
 *    and .local depots renamed, every context load replaced by moves from the
 *    site's word registers (%<P>_w0..29, filled lazily by pass_site.c), the
 *    ld.param of the pointer and its copies dropped, `ret` → branch to the
 *    site's end, the return value dropped (entry/exit/mem/fence decisions are
 *    not used). A handler is inlined only when that is exact: the pointer
 *    does not escape, every context load decomposes into words, no .shared
 *    or unknown declarations, no `exit`, no verbatim directive that could
 *    name a label, no recursion; and not too large for the hook (pass_site.c:
 *    a mem hook's handler is copied to every memory instruction). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx-rewrite/passes.h"

#define PTX_ANALYSE_MAX 20000	/* beyond this: assume every field, never inline */

/* ------------------------------------------------------------ registers */

struct regdecl {
	const char *name;
	unsigned range;
	unsigned size;
};

struct ctxreg {
	const char *name;
	long long delta;
};

struct an {
	struct ptx_passes *ps;
	struct ptx_func *fn;
	const char *param, *ret;
	struct regdecl *regs;
	size_t nregs;
	struct ctxreg *cr;
	size_t ncr, capcr;
	int escape, inl;
	size_t ninsn;
	const char *why;
	unsigned words;
};

static struct regdecl *find_regdecl(struct regdecl *r, size_t n, const char *name)
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

static struct ctxreg *find_cr(struct an *a, const char *name)
{
	for (size_t i = 0; i < a->ncr; i++)
		if (!strcmp(a->cr[i].name, name))
			return &a->cr[i];
	return NULL;
}

static int add_cr(struct an *a, const char *name, long long delta)
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
	a->cr[a->ncr++] = (struct ctxreg){name, delta};
	return 1;
}

static int is_id(const struct ptx_opnd *o)
{
	return o && o->kind == PTX_OPND_ID && o->text;
}

static int is_64(const struct ptx_insn *in)
{
	for (unsigned i = 0; i < in->nmods; i++)
		if (!strcmp(in->mods[i], ".u64") || !strcmp(in->mods[i], ".b64") ||
		    !strcmp(in->mods[i], ".s64"))
			return 1;
	return 0;
}

/* `ld.param.X R, [ctxparam]`: returns R, else NULL. */
static const char *ctx_param_load(struct an *a, const struct ptx_insn *in)
{
	if (strcmp(in->opcode, "ld") || in->guard || in->nops != 2 || !is_64(in) ||
	    !ptx_insn_has_mod(in, ".param"))
		return NULL;
	const struct ptx_opnd *ad = in->ops[1];
	if (!is_id(in->ops[0]) || !ad || ad->kind != PTX_OPND_ADDR || ad->n != 1 || ad->off ||
	    !is_id(ad->elems[0]) || strcmp(ad->elems[0]->text, a->param))
		return NULL;
	return in->ops[0]->text;
}

/* A copy of the pointer plus a constant (mov/add/sub .64 R, S[, imm]) with S
 * a context register: sets *dst, *delta. */
static int ctx_copy(struct an *a, const struct ptx_insn *in, const char **dst, long long *delta)
{
	if (in->guard || !is_64(in) || in->nmods != 1 || !is_id(in->ops[0]))
		return 0;
	struct ctxreg *s;
	if (!strcmp(in->opcode, "mov") && in->nops == 2 && is_id(in->ops[1]) &&
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
		if (!is_id(x) || !y || y->kind != PTX_OPND_INT || !(s = find_cr(a, x->text)))
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
static struct ctxreg *ctx_load(struct an *a, const struct ptx_insn *in, struct ptx_opinfo *oi)
{
	if (ptx_classify(in, oi) != PTX_OP_LD || oi->space != PTX_SPACE_GENERIC ||
	    oi->addr_op != 1 || in->nops != 2 || strcmp(in->opcode, "ld"))
		return NULL;
	const struct ptx_opnd *ad = in->ops[1];
	if (!ad || ad->kind != PTX_OPND_ADDR || ad->n != 1 || !is_id(ad->elems[0]))
		return NULL;
	return find_cr(a, ad->elems[0]->text);
}

/* Does operand o mention a context register (or the ctx/ret parameter)? */
static int mentions(struct an *a, const struct ptx_opnd *o)
{
	if (!o)
		return 0;
	if (o->kind == PTX_OPND_ID && o->text)
		return find_cr(a, o->text) || !strcmp(o->text, a->param) ||
		       (a->ret && !strcmp(o->text, a->ret));
	if (o->kind == PTX_OPND_EXPR && o->text)
		return strchr(o->text, '%') || strstr(o->text, a->param) ||
		       (a->ret && strstr(o->text, a->ret));
	for (unsigned i = 0; i < o->n; i++)
		if (mentions(a, o->elems[i]))
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
static int is_ret_store(struct an *a, const struct ptx_insn *in)
{
	if (!a->ret || strcmp(in->opcode, "st") || !ptx_insn_has_mod(in, ".param") || in->nops != 2)
		return 0;
	const struct ptx_opnd *ad = in->ops[0];
	return ad && ad->kind == PTX_OPND_ADDR && ad->n == 1 && is_id(ad->elems[0]) &&
	       !strcmp(ad->elems[0]->text, a->ret) && !mentions(a, in->ops[1]);
}

static void not_inline(struct an *a, const char *why)
{
	if (a->inl) {
		a->inl = 0;
		a->why = why;
	}
}

static int analyse(struct an *a)
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
			a->regs[a->nregs++] = (struct regdecl){s->decl.name, s->decl.range,
							       ptx_type_size(s->decl.type)};
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
			const char *d = ctx_param_load(a, &s->insn);
			long long delta = 0;
			if (!d && !ctx_copy(a, &s->insn, &d, &delta))
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
		if (ctx_param_load(a, in) || ctx_copy(a, in, &d, &delta))
			continue;
		if (!strcmp(in->opcode, "exit"))
			not_inline(a, "exit");
		if (!strcmp(in->opcode, "call")) {
			struct ptx_call_parts cp;
			if (ptx_call_parts(in, &cp) || !is_id(cp.callee) ||
			    !strcmp(cp.callee->text, fn->name) || cp.proto)
				not_inline(a, "recursive or indirect call");
		}
		if (is_ret_store(a, in))
			continue;
		if ((c = ctx_load(a, in, &oi))) {
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
			if (es > 8 || mentions(a, in->ops[0]))
				not_inline(a, "context load form");
			continue;
		}
		for (unsigned i = 0; i < in->nops; i++)
			if (mentions(a, in->ops[i]) ||
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

int ptx_handler_get(struct ptx_passes *ps, const char *name, const struct ptx_handler **out)
{
	for (size_t i = 0; i < ps->nr_handlers; i++)
		if (!strcmp(ps->handlers[i].name, name)) {
			*out = &ps->handlers[i];
			return 0;
		}
	if (ps->nr_handlers == ps->cap_handlers) {
		size_t cap = ps->cap_handlers ? 2 * ps->cap_handlers : 4;
		struct ptx_handler *n = realloc(ps->handlers, cap * sizeof(*n));
		if (!n)
			return gx_err(-ENOMEM);
		ps->handlers = n;
		ps->cap_handlers = cap;
	}
	struct ptx_handler *h = &ps->handlers[ps->nr_handlers];
	memset(h, 0, sizeof(*h));
	h->name = name;
	h->words = PTX_CTX_ALL_WORDS;
	struct ptx_item *it = ptx_find_func(ps->m, name);
	struct ptx_func *fn = it ? &it->func : NULL;
	if (!fn || !fn->has_body || fn->nparams != 1 || fn->nrets > 1 ||
	    ptx_type_size(fn->params[0].type) != 8 ||
	    (fn->nrets && ptx_type_size(fn->rets[0].type) != 4)) {
		h->why = "not a .func (.param .b32) F(.param .b64) with a body";
	} else {
		struct an a = {.ps = ps, .fn = fn, .param = fn->params[0].name,
			       .ret = fn->nrets ? fn->rets[0].name : NULL, .inl = 1};
		int err = analyse(&a);
		free(a.regs);
		free(a.cr);
		if (err)
			return gx_err(err);
		h->fn = fn;
		h->inlinable = a.inl;
		h->why = a.why;
		h->ninsn = a.ninsn;
		if (!a.escape)
			h->words = a.words;
	}
	ps->nr_handlers++;
	*out = h;
	return 0;
}

/* --------------------------------------------------------------- inlining */

struct ren {
	struct ptx_module *m;
	const char *pfx;		/* "%__gx_h3_" for registers */
	const char *lpfx;		/* "$__gx_h3_" for labels and depots */
	struct regdecl *regs;
	size_t nregs;
	const char **labels;
	size_t nlabels;
	const char **locals;		/* handler .local names → function-level names */
	const char **local_to;
	size_t nlocals;
};

static const char *ren_id(struct ren *r, const char *t)
{
	if (t[0] == '%' && find_regdecl(r->regs, r->nregs, t))
		return ptx_sprintf(r->m, "%s%s", r->pfx, t + 1);
	for (size_t i = 0; i < r->nlabels; i++)
		if (!strcmp(r->labels[i], t))
			return ptx_sprintf(r->m, "%s%s", r->lpfx, t[0] == '$' ? t + 1 : t);
	for (size_t i = 0; i < r->nlocals; i++)
		if (!strcmp(r->locals[i], t))
			return r->local_to[i];
	return t;
}

static struct ptx_opnd *ren_opnd(struct ren *r, const struct ptx_opnd *o)
{
	if (!o)
		return NULL;
	struct ptx_opnd *c = ptx_alloc(r->m, sizeof(*c));
	if (!c)
		return NULL;
	*c = *o;
	if (o->kind == PTX_OPND_ID && o->text && !(c->text = ren_id(r, o->text)))
		return NULL;
	if (o->n) {
		c->elems = ptx_alloc(r->m, o->n * sizeof(*c->elems));
		if (!c->elems)
			return NULL;
		for (unsigned i = 0; i < o->n; i++)
			if (o->elems[i] && !(c->elems[i] = ren_opnd(r, o->elems[i])))
				return NULL;
	}
	return c;
}

static int emit_renamed(struct ren *r, const struct ptx_stmt *s, struct gx_buf *b)
{
	struct ptx_stmt c = *s;
	if (s->kind == PTX_STMT_DECL) {
		c.decl.name = s->decl.space == PTX_SPACE_REG && s->decl.name[0] == '%'
				      ? ptx_sprintf(r->m, "%s%s", r->pfx, s->decl.name + 1)
				      : ren_id(r, s->decl.name);
		if (!c.decl.name)
			return -ENOMEM;
	} else if (s->kind == PTX_STMT_LABEL) {
		if (!(c.text = ren_id(r, s->text)))
			return -ENOMEM;
	} else if (s->kind == PTX_STMT_INSN) {
		if (s->insn.guard && !(c.insn.guard = ren_id(r, s->insn.guard)))
			return -ENOMEM;
		if (s->insn.nops) {
			c.insn.ops = ptx_alloc(r->m, s->insn.nops * sizeof(*c.insn.ops));
			if (!c.insn.ops)
				return -ENOMEM;
			for (unsigned i = 0; i < s->insn.nops; i++)
				if (!(c.insn.ops[i] = ren_opnd(r, s->insn.ops[i])))
					return -ENOMEM;
		}
	}
	c.prev = c.next = NULL;
	ptx_stmt_emit(&c, b);
	gx_buf_puts(b, "\n");
	return 0;
}

/* The value of `es` bytes at context offset `off` (signed: sx) into register
 * dst of dsize bytes, from the word registers W<i>. */
static void load_words(struct gx_buf *b, const char *W, const char *T, const char *dst,
		       unsigned dsize, long long off, unsigned es, int sx)
{
	unsigned w = (unsigned)(off / 4);
	if (es == 8) {
		if (dsize == 8)
			gx_buf_printf(b, "mov.b64 %s, {%s%u, %s%u};\n", dst, W, w, W, w + 1);
		else /* a 64-bit load into a narrower register: low part */
			gx_buf_printf(b, "mov.b32 %s, %s%u;\n", dst, W, w);
		return;
	}
	const char *src;
	char tmp[64];
	if (es == 4) {
		snprintf(tmp, sizeof(tmp), "%s%u", W, w);
		src = tmp;
	} else {
		gx_buf_printf(b, "bfe.%c32 %s, %s%u, %u, %u;\n", sx ? 's' : 'u', T, W, w,
			      (unsigned)(off % 4) * 8, es * 8);
		src = T;
	}
	if (dsize == 8)
		gx_buf_printf(b, "cvt.%c64.%c32 %s, %s;\n", sx ? 's' : 'u', sx ? 's' : 'u', dst, src);
	else if (dsize == 2)
		gx_buf_printf(b, "cvt.u16.u32 %s, %s;\n", dst, src);
	else
		gx_buf_printf(b, "mov.b32 %s, %s;\n", dst, src);
}

static int is_signed_load(const struct ptx_insn *in)
{
	for (unsigned i = 0; i < in->nmods; i++)
		if (in->mods[i][0] == '.' && in->mods[i][1] == 's' && in->mods[i][2] >= '0' &&
		    in->mods[i][2] <= '9')
			return 1;
	return 0;
}

int ptx_handler_inline(struct ptx_passes *ps, struct ptx_func *site_fn, const struct ptx_handler *h,
		       struct gx_buf *decls, struct gx_buf *body, const char *W, const char *T,
		       const char *end)
{
	struct ptx_module *m = ps->m;
	const char *P = m->fresh_prefix;
	struct ptx_func *fn = h->fn;
	unsigned id = ps->nr_inlined++;
	struct an a = {.ps = ps, .fn = fn, .param = fn->params[0].name,
		       .ret = fn->nrets ? fn->rets[0].name : NULL, .inl = 1};
	struct ren r = {.m = m, .pfx = ptx_sprintf(m, "%%%s_h%u_", P, id),
			.lpfx = ptx_sprintf(m, "$%s_h%u_", P, id)};
	int err = -ENOMEM;
	if (!r.pfx || !r.lpfx)
		return gx_err(-ENOMEM);
	if ((err = analyse(&a)))
		goto out;
	r.regs = a.regs;
	r.nregs = a.nregs;
	/* labels and .local depots of the handler */
	for (struct ptx_stmt *s = fn->head; s; s = s->next) {
		if (s->kind == PTX_STMT_LABEL) {
			const char **n = realloc(r.labels, (r.nlabels + 1) * sizeof(*n));
			if (!n)
				goto out;
			r.labels = n;
			r.labels[r.nlabels++] = s->text;
		} else if (s->kind == PTX_STMT_DECL && s->decl.space == PTX_SPACE_LOCAL) {
			const char **n = realloc(r.locals, (r.nlocals + 1) * sizeof(*n));
			const char **t = n ? realloc(r.local_to, (r.nlocals + 1) * sizeof(*t)) : NULL;
			if (n)
				r.locals = n;
			if (!t)
				goto out;
			r.local_to = t;
			const char *to = ptx_site_local(ps, site_fn, h, &s->decl);
			if (!to)
				goto out;
			r.locals[r.nlocals] = s->decl.name;
			r.local_to[r.nlocals++] = to;
		}
	}
	int depth = 0;
	for (struct ptx_stmt *s = fn->head; s; s = s->next) {
		depth += s->kind == PTX_STMT_OPEN ? 1 : s->kind == PTX_STMT_CLOSE ? -1 : 0;
		if (s->kind == PTX_STMT_DECL) {
			if (s->decl.space == PTX_SPACE_LOCAL)
				continue;
			/* top-level declarations go to the site's head, nested ones stay */
			if ((err = emit_renamed(&r, s, depth ? body : decls)))
				goto out;
			continue;
		}
		if (s->kind == PTX_STMT_VERBATIM && !strncmp(s->text, ".loc", 4))
			continue;
		if (s->kind != PTX_STMT_INSN) {
			if ((err = emit_renamed(&r, s, body)))
				goto out;
			continue;
		}
		const struct ptx_insn *in = &s->insn;
		const char *d;
		long long delta;
		struct ptx_opinfo oi;
		struct ctxreg *c;
		if (ctx_param_load(&a, in) || ctx_copy(&a, in, &d, &delta) || is_ret_store(&a, in))
			continue;
		if (!strcmp(in->opcode, "ret")) {
			const char *g = in->guard ? ren_id(&r, in->guard) : NULL;
			if (in->guard && !g)
				goto out;
			gx_buf_printf(body, "%s%s%s%sbra %s;\n", g ? "@" : "",
				      g && in->guard_neg ? "!" : "", g ? g : "", g ? " " : "", end);
			continue;
		}
		if ((c = ctx_load(&a, in, &oi))) {
			long long off = c->delta + in->ops[1]->off;
			const struct ptx_opnd *dst = in->ops[0];
			unsigned n = dst->kind == PTX_OPND_VEC ? dst->n : 1;
			for (unsigned i = 0; i < n; i++) {
				const struct ptx_opnd *e = dst->kind == PTX_OPND_VEC ? dst->elems[i] : dst;
				if (!e || e->kind == PTX_OPND_SINK)
					continue;
				if (!is_id(e)) {
					err = -EINVAL;
					goto out;
				}
				struct regdecl *rd = find_regdecl(a.regs, a.nregs, e->text);
				const char *dn = ren_id(&r, e->text);
				if (!dn)
					goto out;
				load_words(body, W, T, dn, rd ? rd->size : oi.elem_size,
					   off + (long long)i * oi.elem_size, oi.elem_size,
					   is_signed_load(in));
			}
			continue;
		}
		if ((err = emit_renamed(&r, s, body)))
			goto out;
	}
	err = decls->failed || body->failed ? -ENOMEM : 0;
out:
	free(a.regs);
	free(a.cr);
	free(r.labels);
	free(r.locals);
	free(r.local_to);
	if (err == -EINVAL)
		snprintf(m->err, sizeof(m->err), "internal error: inlining %s", fn->name);
	return gx_err(err);
}
