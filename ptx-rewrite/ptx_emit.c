/* ptx_emit.c — IR back to PTX text.
 *
 * The layout follows nvcc's (tabs, one statement per line, labels at column
 * 0) so an identity round trip reads like the input minus comments; the
 * output of the emitter parses back to the same IR, so emit(parse(emit(x)))
 * == emit(x) (tested). Verbatim text is written exactly as captured. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx-rewrite/ptx_ir_internal.h"
#include "ptx-rewrite/ptx_internal.h"

/* Fast path without the NUL gx_buf_append writes each time; the public
 * entry points terminate the buffer once at the end. */
static inline void put(struct gx_buf *b, const char *s, size_t n)
{
	if (__builtin_expect(b->len + n < b->cap, 1)) {
		memcpy(b->data + b->len, s, n);
		b->len += n;
	} else {
		gx_buf_append(b, s, n);
	}
}

static void reserve(struct gx_buf *b, size_t extra)
{
	if (b->failed || b->len + extra + 1 <= b->cap)
		return;
	char *nd = realloc(b->data, b->len + extra + 1);
	if (!nd) {
		b->failed = 1;
		return;
	}
	b->data = nd;
	b->cap = b->len + extra + 1;
}

static void terminate(struct gx_buf *b)
{
	gx_buf_append(b, "", 0);
}

static inline void puts_(struct gx_buf *b, const char *s)
{
	put(b, s, strlen(s));
}

/* The IR's strings (names, modifiers) are short: copied byte by byte while
 * there is room, which beats a strlen and a memcpy call each; long ones
 * finish with those. */
static inline void putstr(struct gx_buf *b, const char *s)
{
	if (__builtin_expect(b->len + 64 < b->cap, 1)) {
		char *d = b->data + b->len;
		size_t i = 0;
		for (; i < 63 && s[i]; i++)
			d[i] = s[i];
		b->len += i;
		if (!s[i])
			return;
		s += i;
	}
	put(b, s, strlen(s));
}

static inline void putc_(struct gx_buf *b, char c)
{
	if (__builtin_expect(b->len + 1 < b->cap, 1))
		b->data[b->len++] = c;
	else
		gx_buf_append(b, &c, 1);
}

static void put_i64(struct gx_buf *b, long long v)
{
	char buf[24];
	const char *p = ptx_fmt_i64(buf, v);
	put(b, p, (size_t)(buf + sizeof(buf) - p));
}

/* Indentation is capped: output size stays linear in the input even for
 * thousands of nested scopes. */
static void put_indent(struct gx_buf *b, int depth)
{
	static const char tabs[] = "\t\t\t\t\t\t\t\t";
	put(b, tabs, (size_t)(depth < 0 ? 0 : depth > 8 ? 8 : depth));
}

static void opnd_emit(const struct ptx_opnd *o, struct gx_buf *b)
{
	if (o->neg)
		putc_(b, '!');
	switch (o->kind) {
	case PTX_OPND_ID:
	case PTX_OPND_INT:
	case PTX_OPND_FLOAT:
	case PTX_OPND_EXPR:
		putstr(b, o->text);
		break;
	case PTX_OPND_SINK:
		putc_(b, '_');
		break;
	case PTX_OPND_PIPE:
		for (unsigned i = 0; i < o->n; i++) {
			if (i)
				putc_(b, '|');
			opnd_emit(o->elems[i], b);
		}
		break;
	case PTX_OPND_VEC:
	case PTX_OPND_LIST:
	case PTX_OPND_ADDR: {
		char open = o->kind == PTX_OPND_VEC ? '{' : o->kind == PTX_OPND_LIST ? '(' : '[';
		char close = o->kind == PTX_OPND_VEC ? '}' : o->kind == PTX_OPND_LIST ? ')' : ']';
		putc_(b, open);
		for (unsigned i = 0; i < o->n; i++) {
			if (i)
				put(b, ", ", 2);
			opnd_emit(o->elems[i], b);
			if (i == 0 && o->kind == PTX_OPND_ADDR && o->off) {
				putc_(b, '+');
				put_i64(b, o->off);
			}
		}
		putc_(b, close);
		break;
	}
	}
}

static void emit_insn(const struct ptx_insn *in, struct gx_buf *b)
{
	if (in->guard) {
		put(b, in->guard_neg ? "@!" : "@", in->guard_neg ? 2 : 1);
		putstr(b, in->guard);
		putc_(b, ' ');
	}
	putstr(b, in->opcode);
	for (unsigned i = 0; i < in->nmods; i++)
		putstr(b, in->mods[i]);
	for (unsigned i = 0; i < in->nops; i++) {
		put(b, i ? ", " : "\t", i ? 2 : 1);
		opnd_emit(in->ops[i], b);
	}
	putc_(b, ';');
}

static void emit_linkage(unsigned l, struct gx_buf *b)
{
	if (l & PTX_LINK_EXTERN)
		puts_(b, ".extern ");
	if (l & PTX_LINK_VISIBLE)
		puts_(b, ".visible ");
	if (l & PTX_LINK_WEAK)
		puts_(b, ".weak ");
	if (l & PTX_LINK_COMMON)
		puts_(b, ".common ");
}

/* Without the trailing ';'. */
static void emit_decl(const struct ptx_decl *d, struct gx_buf *b)
{
	if (d->linkage)
		emit_linkage(d->linkage, b);
	putstr(b, d->space_str);
	if (d->attr) {
		putc_(b, ' ');
		putstr(b, d->attr);
	}
	if (d->align) {
		puts_(b, " .align ");
		put_i64(b, d->align);
	}
	if (d->vec) {
		puts_(b, " .v");
		put_i64(b, d->vec);
	}
	putc_(b, ' ');
	putstr(b, d->type);
	if (d->is_ptr) {
		puts_(b, " .ptr");
		if (d->ptr_space) {
			putc_(b, ' ');
			putstr(b, d->ptr_space);
		}
		if (d->ptr_align) {
			puts_(b, " .align ");
			put_i64(b, d->ptr_align);
		}
	}
	putc_(b, ' ');
	putstr(b, d->name);
	if (d->range) {
		putc_(b, '<');
		put_i64(b, d->range);
		putc_(b, '>');
	}
	for (unsigned i = 0; i < d->ndims; i++) {
		putc_(b, '[');
		if (d->dims[i] >= 0)
			put_i64(b, d->dims[i]);
		putc_(b, ']');
	}
	if (d->init) {
		put(b, " = ", 3);
		putstr(b, d->init);
	}
}

static void stmt_emit(const struct ptx_stmt *s, struct gx_buf *b)
{
	switch (s->kind) {
	case PTX_STMT_OPEN:
		putc_(b, '{');
		break;
	case PTX_STMT_CLOSE:
		putc_(b, '}');
		break;
	case PTX_STMT_DECL:
		emit_decl(&s->decl, b);
		putc_(b, ';');
		break;
	case PTX_STMT_LABEL:
		putstr(b, s->text);
		putc_(b, ':');
		break;
	case PTX_STMT_INSN:
		emit_insn(&s->insn, b);
		break;
	case PTX_STMT_VERBATIM:
		putstr(b, s->text);
		break;
	}
}

void ptx_opnd_emit(const struct ptx_opnd *o, struct gx_buf *b)
{
	opnd_emit(o, b);
	terminate(b);
}

void ptx_stmt_emit(const struct ptx_stmt *s, struct gx_buf *b)
{
	stmt_emit(s, b);
	terminate(b);
}

/* A label binds to the directive after it (`proto: .callprototype ...`). */
static int binds_to_label(const struct ptx_stmt *s)
{
	return s && s->kind == PTX_STMT_VERBATIM &&
	       (!strncmp(s->text, ".callprototype", 14) || !strncmp(s->text, ".branchtargets", 14) ||
		!strncmp(s->text, ".calltargets", 12));
}

static void emit_body(const struct ptx_func *fn, struct gx_buf *b)
{
	int depth = 1;
	for (const struct ptx_stmt *s = fn->head; s; s = s->next) {
		switch (s->kind) {
		case PTX_STMT_OPEN:
			put_indent(b, depth++);
			put(b, "{\n", 2);
			continue;
		case PTX_STMT_CLOSE:
			if (depth > 1)
				depth--;
			put_indent(b, depth);
			put(b, "}\n", 2);
			continue;
		case PTX_STMT_LABEL:
			putstr(b, s->text);
			putc_(b, ':');
			if (binds_to_label(s->next)) {
				putc_(b, ' ');
				s = s->next;
				putstr(b, s->text);
			}
			putc_(b, '\n');
			continue;
		default:
			put_indent(b, depth);
			stmt_emit(s, b);
			putc_(b, '\n');
		}
	}
}

static void emit_params(const struct ptx_decl *p, unsigned n, int multiline, struct gx_buf *b)
{
	putc_(b, '(');
	for (unsigned i = 0; i < n; i++) {
		if (multiline)
			put(b, i ? ",\n\t" : "\n\t", i ? 3 : 2);
		else if (i)
			put(b, ", ", 2);
		emit_decl(&p[i], b);
	}
	if (multiline && n)
		putc_(b, '\n');
	putc_(b, ')');
}

static void emit_func(const struct ptx_func *fn, struct gx_buf *b)
{
	emit_linkage(fn->linkage, b);
	puts_(b, fn->is_entry ? ".entry " : ".func ");
	if (fn->attr) {
		putstr(b, fn->attr);
		putc_(b, ' ');
	}
	if (fn->has_rets) {
		emit_params(fn->rets, fn->nrets, 0, b);
		putc_(b, ' ');
	}
	putstr(b, fn->name);
	if (fn->has_params)
		emit_params(fn->params, fn->nparams, 1, b);
	for (unsigned i = 0; i < fn->nperf; i++) {
		putc_(b, '\n');
		putstr(b, fn->perf[i].name);
		if (fn->perf[i].args) {
			putc_(b, ' ');
			putstr(b, fn->perf[i].args);
		}
		if (fn->perf[i].semi)
			putc_(b, ';');
	}
	if (!fn->has_body) {
		put(b, ";\n", 2);
		return;
	}
	put(b, "\n{\n", 3);
	emit_body(fn, b);
	put(b, "}\n", 2);
}

int ptx_module_emit(const struct ptx_module *m, struct gx_buf *b)
{
	/* identity output is about the input's size: one allocation up front */
	reserve(b, m->src_len + m->src_len / 8 + m->emit_hint + 4096);
	for (const struct ptx_item *it = m->head; it; it = it->next) {
		switch (it->kind) {
		case PTX_ITEM_VERSION:
			puts_(b, ".version ");
			put_i64(b, it->version.major);
			putc_(b, '.');
			put_i64(b, it->version.minor);
			putc_(b, '\n');
			break;
		case PTX_ITEM_TARGET:
			puts_(b, ".target ");
			for (unsigned i = 0; i < it->target.n; i++) {
				if (i)
					put(b, ", ", 2);
				putstr(b, it->target.names[i]);
			}
			putc_(b, '\n');
			break;
		case PTX_ITEM_ADDRESS_SIZE:
			puts_(b, ".address_size ");
			put_i64(b, it->address_size);
			put(b, "\n\n", 2);
			break;
		case PTX_ITEM_DECL:
			emit_decl(&it->decl, b);
			put(b, ";\n", 2);
			break;
		case PTX_ITEM_FUNC:
			putc_(b, '\n');
			emit_func(&it->func, b);
			putc_(b, '\n');
			break;
		case PTX_ITEM_VERBATIM:
			putstr(b, it->text);
			putc_(b, '\n');
			break;
		}
	}
	terminate(b);
	return b->failed ? gx_err(-ENOMEM) : 0;
}
