/* ptx_build.c — building statements directly as IR, for passes that insert
 * many small snippets (one hook call site per memory instruction).
 *
 * Why not ptx_insert_text_*: formatting a snippet as PTX text and parsing it
 * back cost more than parsing the whole input module (printf, the lexer, name
 * interning per site). The builders below allocate the same IR the parser
 * would produce for that text (same statement kinds, operand kinds and
 * texts), so the emitted PTX is byte-for-byte what the text path gave.
 * Strings passed in are not copied: they must live as long as the module
 * (string literals, or arena strings from ptx_sprintf/ptx_strdup). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ptx-rewrite/ptx_ir_internal.h"
#include "ptx-rewrite/ptx_internal.h"

static struct ptx_opnd *opnd_new(struct ptx_module *m, enum ptx_opnd_kind k)
{
	struct ptx_opnd *o = ptx_alloc_raw(m, sizeof(*o));
	if (!o)
		return NULL;
	memset(o, 0, sizeof(*o));
	o->kind = k;
	return o;
}

struct ptx_opnd *ptx_opnd_id(struct ptx_module *m, const char *name)
{
	struct ptx_opnd *o = name ? opnd_new(m, PTX_OPND_ID) : NULL;
	if (o)
		o->text = name;
	return o;
}

static struct ptx_opnd *opnd_int_text(struct ptx_module *m, long long v, const char *fmt)
{
	char buf[24];
	int n = snprintf(buf, sizeof(buf), fmt, v);
	struct ptx_opnd *o = opnd_new(m, PTX_OPND_INT);
	if (!o || !(o->text = ptx_strndup(m, buf, (size_t)n)))
		return NULL;
	o->ival = v;
	return o;
}

struct ptx_opnd *ptx_opnd_int(struct ptx_module *m, long long v)
{
	/* small non-negative values are the common case: no formatting */
	static const char *const small[] = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"};
	if (v >= 0 && v < 10) {
		struct ptx_opnd *o = opnd_new(m, PTX_OPND_INT);
		if (o) {
			o->text = small[v];
			o->ival = v;
		}
		return o;
	}
	char buf[24];
	const char *p = ptx_fmt_i64(buf, v);
	struct ptx_opnd *o = opnd_new(m, PTX_OPND_INT);
	if (!o || !(o->text = ptx_strndup(m, p, (size_t)(buf + sizeof(buf) - p))))
		return NULL;
	o->ival = v;
	return o;
}

struct ptx_opnd *ptx_opnd_hex64(struct ptx_module *m, unsigned long long v)
{
	return opnd_int_text(m, (long long)v, "0x%016llx");
}

struct ptx_opnd *ptx_opnd_addr(struct ptx_module *m, struct ptx_opnd *base, long long off)
{
	struct ptx_opnd *o = base ? opnd_new(m, PTX_OPND_ADDR) : NULL;
	struct ptx_opnd **e = o ? ptx_alloc_raw(m, sizeof(*e)) : NULL;
	if (!e)
		return NULL;
	e[0] = base;
	o->n = 1;
	o->elems = e;
	o->off = off;
	return o;
}

struct ptx_opnd *ptx_opnd_list(struct ptx_module *m, unsigned n, struct ptx_opnd *const *elems)
{
	struct ptx_opnd *o = opnd_new(m, PTX_OPND_LIST);
	if (!o)
		return NULL;
	if (!n)
		return o;
	struct ptx_opnd **e = ptx_alloc_raw(m, n * sizeof(*e));
	if (!e)
		return NULL;
	for (unsigned i = 0; i < n; i++) {
		if (!elems[i])
			return NULL;
		e[i] = elems[i];
	}
	o->n = n;
	o->elems = e;
	return o;
}

struct ptx_opnd *ptx_opnd_vec(struct ptx_module *m, unsigned n, struct ptx_opnd *const *elems)
{
	struct ptx_opnd *o = ptx_opnd_list(m, n, elems);
	if (o)
		o->kind = PTX_OPND_VEC;
	return o;
}

struct ptx_opnd *ptx_opnd_pipe(struct ptx_module *m, struct ptx_opnd *a, struct ptx_opnd *b)
{
	struct ptx_opnd *e[2] = {a, b};
	struct ptx_opnd *o = ptx_opnd_list(m, 2, e);
	if (o)
		o->kind = PTX_OPND_PIPE;
	return o;
}

static struct ptx_stmt *stmt_new(struct ptx_module *m, struct ptx_chain *c,
				 enum ptx_stmt_kind k)
{
	struct ptx_stmt *s = ptx_alloc(m, sizeof(*s));
	if (!s) {
		c->failed = 1;
		return NULL;
	}
	s->kind = k;
	ptx_chain_link(c, s);
	return s;
}

void ptx_chain_scope(struct ptx_module *m, struct ptx_chain *c, int open)
{
	stmt_new(m, c, open ? PTX_STMT_OPEN : PTX_STMT_CLOSE);
}

void ptx_chain_label(struct ptx_module *m, struct ptx_chain *c, const char *name)
{
	struct ptx_stmt *s = name ? stmt_new(m, c, PTX_STMT_LABEL) : NULL;
	if (!s) {
		c->failed = 1;
		return;
	}
	s->text = name;
}

struct ptx_stmt *ptx_chain_decl(struct ptx_module *m, struct ptx_chain *c, enum ptx_space space,
				const char *type, const char *name)
{
	struct ptx_stmt *s = name ? stmt_new(m, c, PTX_STMT_DECL) : NULL;
	if (!s) {
		c->failed = 1;
		return NULL;
	}
	s->decl.space = space;
	s->decl.space_str = space == PTX_SPACE_PARAM ? ".param" : ".reg";
	s->decl.type = type;
	s->decl.name = name;
	return s;
}

struct ptx_stmt *ptx_chain_insn(struct ptx_module *m, struct ptx_chain *c, const char *guard,
				int guard_neg, const char *opcode, unsigned nmods,
				const char *const *mods, unsigned nops, ...)
{
	/* one allocation: the statement, its operand and modifier arrays */
	struct ptx_stmt *s = ptx_alloc_raw(m, sizeof(*s) + (nops + nmods) * sizeof(void *));
	if (!s) {
		c->failed = 1;
		return NULL;
	}
	struct ptx_opnd **ops = (struct ptx_opnd **)(s + 1);
	const char **md = (const char **)(ops + nops);
	va_list ap;
	va_start(ap, nops);
	for (unsigned i = 0; i < nops; i++) {
		ops[i] = va_arg(ap, struct ptx_opnd *);
		if (!ops[i])
			c->failed = 1;
	}
	va_end(ap);
	for (unsigned i = 0; i < nmods; i++)
		md[i] = mods[i];
	s->kind = PTX_STMT_INSN;
	s->line = s->col = 0;
	s->insn = (struct ptx_insn){guard, (unsigned char)(guard && guard_neg), opcode, nmods,
				    nmods ? md : NULL, nops, nops ? ops : NULL};
	ptx_chain_link(c, s);
	return s;
}

void ptx_chain_append(struct ptx_chain *c, struct ptx_chain *more)
{
	c->failed |= more->failed;
	c->n += more->n;
	more->n = 0;
	if (!more->head)
		return;
	more->head->prev = c->tail;
	if (c->tail)
		c->tail->next = more->head;
	else
		c->head = more->head;
	c->tail = more->tail;
	more->head = more->tail = NULL;
}

static struct ptx_opnd *opnd_copy(struct ptx_module *m, const struct ptx_opnd *o)
{
	struct ptx_opnd *c = ptx_alloc_raw(m, sizeof(*c));
	if (!c)
		return NULL;
	*c = *o;
	if (o->n) {
		c->elems = ptx_alloc_raw(m, o->n * sizeof(*c->elems));
		if (!c->elems)
			return NULL;
		for (unsigned i = 0; i < o->n; i++)
			if (!(c->elems[i] = opnd_copy(m, o->elems[i])))
				return NULL;
	}
	return c;
}

int ptx_chain_copy(struct ptx_module *m, struct ptx_chain *dst, const struct ptx_chain *src)
{
	for (const struct ptx_stmt *s = src->head; s; s = s->next) {
		struct ptx_stmt *d = stmt_new(m, dst, s->kind);
		if (!d)
			return gx_err(-ENOMEM);
		struct ptx_stmt *prev = d->prev, *next = d->next;
		*d = *s;
		d->prev = prev, d->next = next;
		if (s->kind != PTX_STMT_INSN || !s->insn.nops)
			continue;
		d->insn.ops = ptx_alloc_raw(m, s->insn.nops * sizeof(*d->insn.ops));
		if (!d->insn.ops)
			return gx_err(-ENOMEM);
		for (unsigned i = 0; i < s->insn.nops; i++)
			if (!(d->insn.ops[i] = opnd_copy(m, s->insn.ops[i])))
				return gx_err(-ENOMEM);
	}
	return dst->failed ? gx_err(-ENOMEM) : 0;
}

void ptx_chain_emit(const struct ptx_chain *c, struct gx_buf *out)
{
	for (const struct ptx_stmt *s = c->head; s; s = s->next) {
		ptx_stmt_emit(s, out);
		gx_buf_puts(out, "\n");
	}
}
