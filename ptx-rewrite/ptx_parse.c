/* ptx_parse.c — recursive-descent parser from PTX text to the IR of ptx_ir_internal.h.
 *
 * Why hand-written: PTX grows every CUDA release (new opcodes, modifiers,
 * directives), so the parser knows the *shape* of the language (directives,
 * declarations, labels, `op.mod.mod operands;`) rather than a list of
 * instructions: any opcode parses, odd operand expressions become EXPR
 * operands, unknown directives become verbatim items/statements. Errors are
 * only for text that is not PTX-shaped (bad bytes, unbalanced braces,
 * unterminated strings, a missing ';'). One allocation arena, one scratch
 * stack: no malloc per token, no backtracking beyond a single statement.
 * Errors unwind with longjmp (everything allocated lives in the arena). */
#include <setjmp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx-rewrite/ptx_ir_internal.h"
#include "ptx-rewrite/ptx_lex_internal.h"
#include "ptx-rewrite/ptx_internal.h"

#define MAX_OPND_DEPTH 32

struct gxname {
	const char *p;
	size_t n;
};

struct parser {
	struct ptx_module *m;
	struct ptx_lexer lx;
	struct ptx_tok t; /* lookahead */
	jmp_buf jb;
	int enomem;
	int snippet;      /* statements get line 0 */
	int depth;        /* operand nesting */
	void **stk;       /* scratch stack for lists being built */
	size_t sp, cap;
	struct gxname *gx; /* input names starting with __gx */
	size_t ngx, gxcap;
	/* Interned names: opcodes, modifiers and registers repeat thousands of
	 * times; one arena copy each keeps the IR small and cache-friendly. */
	struct istr *itab;
	size_t icap, icount, icap_init;
};

struct istr {
	const char *s;
	unsigned n, h;
};

/* ---------------------------------------------------------------- helpers */

__attribute__((noreturn)) static void oom(struct parser *P)
{
	P->enomem = 1;
	snprintf(P->m->err, sizeof(P->m->err), "out of memory");
	longjmp(P->jb, 1);
}

static void *zalloc(struct parser *P, size_t n)
{
	void *p = ptx_alloc(P->m, n);
	if (!p)
		oom(P);
	return p;
}

static char *dup(struct parser *P, const char *s, size_t n)
{
	char *p = ptx_strndup(P->m, s, n);
	if (!p)
		oom(P);
	return p;
}

static void intern_grow(struct parser *P)
{
	size_t nc = P->icap ? P->icap * 2 : P->icap_init;
	struct istr *nt = calloc(nc, sizeof(*nt));
	if (!nt)
		oom(P);
	for (size_t i = 0; i < P->icap; i++) {
		if (!P->itab[i].s)
			continue;
		size_t j = P->itab[i].h & (nc - 1);
		while (nt[j].s)
			j = (j + 1) & (nc - 1);
		nt[j] = P->itab[i];
	}
	free(P->itab);
	P->itab = nt;
	P->icap = nc;
}

/* One arena copy per distinct short name. */
static const char *intern(struct parser *P, const char *p, size_t n)
{
	if (n > 64)
		return dup(P, p, n);
	unsigned h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * 16777619u;
	if (2 * (P->icount + 1) > P->icap)
		intern_grow(P);
	size_t j = h & (P->icap - 1);
	for (;;) {
		struct istr *e = &P->itab[j];
		if (!e->s) {
			e->s = dup(P, p, n);
			e->n = (unsigned)n;
			e->h = h;
			P->icount++;
			return e->s;
		}
		if (e->h == h && e->n == n && !memcmp(e->s, p, n))
			return e->s;
		j = (j + 1) & (P->icap - 1);
	}
}

static const char *tokdup(struct parser *P, const struct ptx_tok *t)
{
	return intern(P, t->p, t->n);
}

static void next(struct parser *P)
{
	ptx_lex_next(&P->lx, &P->t);
}

__attribute__((noreturn)) static void fail_expected(struct parser *P, const char *what)
{
	char buf[64];
	ptx_lex_fail(&P->lx, &P->t, "expected %s, found %s", what,
		     ptx_tok_describe(&P->t, buf, sizeof(buf)));
}

static void expect_punct(struct parser *P, char c, const char *what)
{
	if (!ptx_tok_punct(&P->t, c))
		fail_expected(P, what);
	next(P);
}

static void push(struct parser *P, void *v)
{
	if (P->sp == P->cap) {
		size_t nc = P->cap ? P->cap * 2 : 256;
		void **ns = realloc(P->stk, nc * sizeof(*ns));
		if (!ns)
			oom(P);
		P->stk = ns, P->cap = nc;
	}
	P->stk[P->sp++] = v;
}

/* Move stk[base..sp) into an arena array; returns it (NULL when empty). */
static void **pop_array(struct parser *P, size_t base, unsigned *n)
{
	size_t k = P->sp - base;
	*n = (unsigned)k;
	if (!k)
		return NULL;
	void **a = ptx_alloc_raw(P->m, k * sizeof(*a));
	if (!a)
		oom(P);
	memcpy(a, P->stk + base, k * sizeof(*a));
	P->sp = base;
	return a;
}

/* Integer text (decimal, 0x hex, 0b binary, 0 octal, optional U) to value;
 * text beyond 64 bits saturates at UINT64_MAX and sets *ovf. */
static unsigned long long int_value_ovf(const char *p, size_t n, bool *ovf)
{
	unsigned long long v = 0;
	unsigned base = 10;
	size_t i = 0;
	*ovf = false;
	if (n && (p[n - 1] == 'U' || p[n - 1] == 'u'))
		n--;
	if (n > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
		base = 16, i = 2;
	else if (n > 2 && p[0] == '0' && (p[1] == 'b' || p[1] == 'B'))
		base = 2, i = 2;
	else if (n > 1 && p[0] == '0')
		base = 8, i = 1;
	for (; i < n; i++) {
		char c = p[i];
		unsigned d = c <= '9' ? (unsigned)(c - '0') : (unsigned)((c | 0x20) - 'a' + 10);
		if (__builtin_mul_overflow(v, base, &v) || __builtin_add_overflow(v, d, &v)) {
			*ovf = true;
			return ~0ull;
		}
	}
	return v;
}

static unsigned long long int_value(const char *p, size_t n)
{
	bool ovf;
	return int_value_ovf(p, n, &ovf);
}

/* The value of the integer token at P->t; text beyond 64 bits is an error. */
static unsigned long long int_value64(struct parser *P)
{
	bool ovf;
	unsigned long long v = int_value_ovf(P->t.p, P->t.n, &ovf);
	if (ovf)
		ptx_lex_fail(&P->lx, &P->t, "integer constant %.*s does not fit in 64 bits", (int)P->t.n, P->t.p);
	return v;
}

static unsigned expect_uint(struct parser *P, const char *what)
{
	if (P->t.kind != T_INT)
		fail_expected(P, what);
	unsigned long long v = int_value(P->t.p, P->t.n);
	if (v > 0xffffffffull)
		ptx_lex_fail(&P->lx, &P->t, "%s out of range", what);
	next(P);
	return (unsigned)v;
}

static void set_pos(struct parser *P, unsigned *line, unsigned *col, const struct ptx_tok *t)
{
	if (P->snippet) {
		*line = *col = 0;
		return;
	}
	*line = t->line;
	*col = (unsigned)(t->p - t->ls) + 1;
}

static int is_space_word(const struct ptx_tok *t)
{
	static const char *const w[] = {".reg", ".sreg", ".const", ".global", ".local",
					".param", ".shared", ".tex"};
	if (t->kind != T_DOT)
		return 0;
	for (size_t i = 0; i < GX_ARRAY_SIZE(w); i++) {
		size_t n = strlen(w[i]);
		if (t->n >= n && !memcmp(t->p, w[i], n) && (t->n == n || t->p[n] == ':'))
			return 1;
	}
	return 0;
}

static enum ptx_space space_of_tok(const struct ptx_tok *t)
{
	char buf[32];
	if (!is_space_word(t) || t->n >= sizeof(buf))
		return PTX_SPACE_NONE;
	memcpy(buf, t->p, t->n);
	buf[t->n] = 0;
	return ptx_space_of(buf);
}

static unsigned linkage_bit(const struct ptx_tok *t)
{
	if (ptx_tok_is(t, T_DOT, ".visible"))
		return PTX_LINK_VISIBLE;
	if (ptx_tok_is(t, T_DOT, ".extern"))
		return PTX_LINK_EXTERN;
	if (ptx_tok_is(t, T_DOT, ".weak"))
		return PTX_LINK_WEAK;
	if (ptx_tok_is(t, T_DOT, ".common"))
		return PTX_LINK_COMMON;
	return 0;
}

/* `.attribute( ... )` starting at the current .attribute token: verbatim. */
static const char *parse_attribute(struct parser *P)
{
	const char *start = P->t.p;
	next(P);
	if (!ptx_tok_punct(&P->t, '('))
		fail_expected(P, "'(' after .attribute");
	int depth = 0;
	for (;;) {
		if (P->t.kind == T_EOF)
			fail_expected(P, "')'");
		if (ptx_tok_punct(&P->t, '('))
			depth++;
		else if (ptx_tok_punct(&P->t, ')') && --depth == 0)
			break;
		next(P);
	}
	const char *end = P->t.p + 1;
	next(P);
	return dup(P, start, (size_t)(end - start));
}

/* ------------------------------------------------------------ declarations */

/* Parses the part of a declaration before the name into d. Returns 0, or -1
 * when the tokens are not a declaration we model (caller falls back to
 * verbatim). Lexical errors still longjmp. */
static int parse_decl_head(struct parser *P, struct ptx_decl *d)
{
	memset(d, 0, sizeof(*d));
	while (P->t.kind == T_DOT) {
		const struct ptx_tok *t = &P->t;
		unsigned lb = linkage_bit(t);
		enum ptx_space sp;
		if (lb) {
			d->linkage |= lb;
			next(P);
		} else if (ptx_tok_is(t, T_DOT, ".attribute")) {
			if (d->attr)
				return -1;
			d->attr = parse_attribute(P);
		} else if (ptx_tok_is(t, T_DOT, ".align")) {
			next(P);
			if (P->t.kind != T_INT)
				return -1;
			unsigned long long v = int_value(P->t.p, P->t.n);
			if (!v || v > (1u << 20))
				return -1;
			if (d->is_ptr)
				d->ptr_align = (unsigned)v;
			else if (!d->type)
				d->align = (unsigned)v;
			else
				return -1;
			next(P);
		} else if (ptx_tok_is(t, T_DOT, ".v2") || ptx_tok_is(t, T_DOT, ".v4") ||
			   ptx_tok_is(t, T_DOT, ".v8")) {
			if (d->vec || d->type)
				return -1;
			d->vec = (unsigned)(t->p[2] - '0');
			next(P);
		} else if (ptx_tok_is(t, T_DOT, ".ptr")) {
			if (!d->type || d->is_ptr)
				return -1;
			d->is_ptr = 1;
			next(P);
		} else if ((sp = space_of_tok(t))) {
			if (d->is_ptr && !d->ptr_space) {
				d->ptr_space = tokdup(P, t);
			} else if (!d->space && !d->type) {
				d->space = sp;
				d->space_str = tokdup(P, t);
			} else {
				return -1;
			}
			next(P);
		} else {
			if (d->type || !d->space_str)
				return -1;
			d->type = tokdup(P, t);
			next(P);
		}
	}
	return d->space_str && d->type ? 0 : -1;
}

/* Name, range, dims and (if allowed) initialiser. 0 or -1 (not modelled). */
static int parse_decl_name(struct parser *P, struct ptx_decl *d, int allow_init)
{
	if (P->t.kind != T_ID)
		return -1;
	d->name = tokdup(P, &P->t);
	next(P);
	if (ptx_tok_punct(&P->t, '<')) {
		next(P);
		if (P->t.kind != T_INT)
			return -1;
		unsigned long long v = int_value(P->t.p, P->t.n);
		if (v == 0)
			return -1;
		/* nvcc's largest kernels declare some 10^5 registers */
		if (v > PTX_MAX_REGS)
			ptx_lex_fail(&P->lx, &P->t, "register count %.*s out of range (at most %u)", (int)P->t.n,
				     P->t.p, PTX_MAX_REGS);
		d->range = (unsigned)v;
		next(P);
		if (!ptx_tok_punct(&P->t, '>'))
			return -1;
		next(P);
	}
	unsigned long long elems = 1;
	while (ptx_tok_punct(&P->t, '[')) {
		if (d->ndims == PTX_MAX_DIMS)
			return -1;
		next(P);
		long long dim = -1;
		if (P->t.kind == T_INT) {
			/* 2^48 elements: more than any GPU's address space holds */
			unsigned long long v = int_value(P->t.p, P->t.n);
			if (v > PTX_MAX_ELEMS || (v && elems > PTX_MAX_ELEMS / v))
				ptx_lex_fail(&P->lx, &P->t, "array size %.*s out of range (at most 2^48 elements)",
					     (int)P->t.n, P->t.p);
			elems *= v ? v : 1;
			dim = (long long)v;
			next(P);
		}
		if (!ptx_tok_punct(&P->t, ']'))
			return -1;
		next(P);
		d->dims[d->ndims++] = dim;
	}
	if (ptx_tok_punct(&P->t, '=')) {
		if (!allow_init)
			return -1;
		next(P);
		const char *p;
		size_t n;
		if (ptx_tok_punct(&P->t, ';') || ptx_tok_punct(&P->t, ','))
			return -1;
		ptx_lex_raw_expr(&P->lx, &P->t, &p, &n);
		d->init = dup(P, p, n);
		next(P);
	}
	return 0;
}

/* A declaration statement `head name, name ...;` into decls pushed on the
 * scratch stack. Returns 0 or -1 (not modelled: caller rewinds). */
static int parse_decl_stmt(struct parser *P, size_t base)
{
	struct ptx_decl head;
	if (parse_decl_head(P, &head))
		return -1;
	for (;;) {
		struct ptx_decl *d = zalloc(P, sizeof(*d));
		*d = head;
		if (parse_decl_name(P, d, 1))
			return -1;
		push(P, d);
		if (ptx_tok_punct(&P->t, ',')) {
			next(P);
			continue;
		}
		if (!ptx_tok_punct(&P->t, ';'))
			return -1;
		next(P);
		return P->sp > base ? 0 : -1;
	}
}

/* `( decl, decl )` of a function header, current token '('. */
static struct ptx_decl *parse_param_list(struct parser *P, unsigned *n)
{
	next(P);
	size_t base = P->sp;
	if (!ptx_tok_punct(&P->t, ')')) {
		for (;;) {
			struct ptx_decl *d = zalloc(P, sizeof(*d));
			struct ptx_tok at = P->t;
			if (parse_decl_head(P, d) || parse_decl_name(P, d, 0)) {
				P->t = at;
				ptx_lex_fail(&P->lx, &at, "invalid parameter declaration");
			}
			push(P, d);
			if (ptx_tok_punct(&P->t, ','))
				next(P);
			else
				break;
		}
	}
	expect_punct(P, ')', "',' or ')' in parameter list");
	unsigned k;
	void **a = pop_array(P, base, &k);
	*n = k;
	if (!k)
		return NULL;
	struct ptx_decl *arr = ptx_alloc_raw(P->m, k * sizeof(*arr));
	if (!arr)
		oom(P);
	for (unsigned i = 0; i < k; i++)
		arr[i] = *(struct ptx_decl *)a[i];
	return arr;
}

/* -------------------------------------------------------------- operands */

static struct ptx_opnd *new_opnd(struct parser *P, enum ptx_opnd_kind k)
{
	struct ptx_opnd *o = ptx_alloc_raw(P->m, sizeof(*o));
	if (!o)
		oom(P);
	memset(o, 0, sizeof(*o));
	o->kind = k;
	return o;
}

static struct ptx_opnd *expr_from(struct parser *P, const struct ptx_tok *start)
{
	const char *p;
	size_t n;
	ptx_lex_raw_expr(&P->lx, start, &p, &n);
	if (!n) {
		P->t = *start;
		fail_expected(P, "an operand");
	}
	struct ptx_opnd *o = new_opnd(P, PTX_OPND_EXPR);
	o->text = dup(P, p, n);
	next(P);
	return o;
}

/* An identifier with adjacent components (%tid.x): one arena string. */
static const char *parse_id_text(struct parser *P)
{
	const char *p = P->t.p, *e = P->t.p + P->t.n;
	next(P);
	while (P->t.kind == T_DOT && !P->t.ws) {
		e = P->t.p + P->t.n;
		next(P);
	}
	return intern(P, p, (size_t)(e - p));
}

/* INT/FLOAT, possibly after '-'; current token is the number or '-'. NULL if
 * '-' is not followed by a number. */
static struct ptx_opnd *parse_number(struct parser *P)
{
	int negv = 0;
	struct ptx_tok minus = P->t;
	if (ptx_tok_punct(&P->t, '-')) {
		negv = 1;
		next(P);
		if (P->t.kind != T_INT && P->t.kind != T_FLOAT)
			return NULL;
	}
	struct ptx_opnd *o = new_opnd(P, P->t.kind == T_INT ? PTX_OPND_INT : PTX_OPND_FLOAT);
	if (o->kind == PTX_OPND_INT) {
		unsigned long long v = int_value64(P);
		o->ival = (long long)(negv ? 0 - v : v); /* two's complement, as PTX reads it */
	}
	if (!negv)
		o->text = tokdup(P, &P->t);
	else if (!P->t.ws)
		o->text = dup(P, minus.p, (size_t)(P->t.p + P->t.n - minus.p));
	else {
		char *s = zalloc(P, P->t.n + 2);
		s[0] = '-';
		memcpy(s + 1, P->t.p, P->t.n);
		o->text = s;
	}
	next(P);
	return o;
}

static struct ptx_opnd *parse_operand(struct parser *P);

static int at_operand_end(struct parser *P)
{
	if (P->t.kind == T_EOF)
		return 1;
	if (P->t.kind != T_PUNCT)
		return 0;
	switch (P->t.p[0]) {
	case ',':
	case ';':
	case ']':
	case '}':
	case ')':
		return 1;
	default:
		return 0;
	}
}

/* Elements up to `close`, separated by ','. Returns 0 or -1 (malformed). */
static int parse_elems(struct parser *P, char close, struct ptx_opnd *o, int allow_empty)
{
	size_t base = P->sp;
	next(P);
	if (ptx_tok_punct(&P->t, close)) {
		if (!allow_empty)
			return -1;
	} else {
		for (;;) {
			push(P, parse_operand(P));
			if (ptx_tok_punct(&P->t, ',')) {
				next(P);
				continue;
			}
			break;
		}
		if (!ptx_tok_punct(&P->t, close)) {
			P->sp = base;
			return -1;
		}
	}
	next(P);
	o->elems = (struct ptx_opnd **)pop_array(P, base, &o->n);
	return 0;
}

static struct ptx_opnd *parse_addr(struct parser *P)
{
	struct ptx_tok start = P->t;
	size_t base = P->sp;
	struct ptx_opnd *o = new_opnd(P, PTX_OPND_ADDR);
	next(P);
	struct ptx_opnd *b = NULL;
	if (P->t.kind == T_ID) {
		b = new_opnd(P, PTX_OPND_ID);
		b->text = parse_id_text(P);
	} else if (P->t.kind == T_INT || ptx_tok_punct(&P->t, '-')) {
		b = parse_number(P);
		if (!b || b->kind != PTX_OPND_INT)
			goto verbatim;
	} else {
		goto verbatim;
	}
	push(P, b);
	while (ptx_tok_punct(&P->t, '+') || ptx_tok_punct(&P->t, '-')) {
		int sign = P->t.p[0] == '-' ? -1 : 1;
		next(P);
		if (ptx_tok_punct(&P->t, '-')) {
			sign = -sign;
			next(P);
		}
		if (P->t.kind != T_INT)
			goto verbatim;
		unsigned long long v = int_value64(P);
		if (v > PTX_MAX_ELEMS || o->off > (long long)PTX_MAX_ELEMS || o->off < -(long long)PTX_MAX_ELEMS)
			ptx_lex_fail(&P->lx, &P->t, "address offset %.*s out of range (at most 2^48)", (int)P->t.n,
				     P->t.p);
		o->off += sign * (long long)v;
		next(P);
	}
	while (ptx_tok_punct(&P->t, ',')) {
		next(P);
		push(P, parse_operand(P));
	}
	if (!ptx_tok_punct(&P->t, ']'))
		goto verbatim;
	next(P);
	o->elems = (struct ptx_opnd **)pop_array(P, base, &o->n);
	return o;
verbatim:
	P->sp = base;
	return expr_from(P, &start);
}

static struct ptx_opnd *parse_operand(struct parser *P)
{
	if (++P->depth > MAX_OPND_DEPTH)
		ptx_lex_fail(&P->lx, &P->t, "operand nested too deeply");
	struct ptx_tok start = P->t;
	struct ptx_opnd *o = NULL;
	if (ptx_tok_punct(&P->t, '!')) {
		next(P);
		if (P->t.kind != T_ID)
			goto verbatim;
		o = new_opnd(P, PTX_OPND_ID);
		o->text = parse_id_text(P);
		o->neg = 1;
	} else if (ptx_tok_punct(&P->t, '{')) {
		o = new_opnd(P, PTX_OPND_VEC);
		if (parse_elems(P, '}', o, 0))
			goto verbatim;
	} else if (ptx_tok_punct(&P->t, '(')) {
		o = new_opnd(P, PTX_OPND_LIST);
		if (parse_elems(P, ')', o, 1))
			goto verbatim;
	} else if (ptx_tok_punct(&P->t, '[')) {
		o = parse_addr(P);
	} else if (P->t.kind == T_ID) {
		if (P->t.n == 1 && P->t.p[0] == '_') {
			o = new_opnd(P, PTX_OPND_SINK);
			next(P);
		} else {
			o = new_opnd(P, PTX_OPND_ID);
			o->text = parse_id_text(P);
		}
	} else if (P->t.kind == T_INT || P->t.kind == T_FLOAT || ptx_tok_punct(&P->t, '-')) {
		o = parse_number(P);
		if (!o)
			goto verbatim;
	} else {
		goto verbatim;
	}
	if (ptx_tok_punct(&P->t, '|') && (o->kind == PTX_OPND_ID || o->kind == PTX_OPND_SINK)) {
		struct ptx_opnd *pp = new_opnd(P, PTX_OPND_PIPE);
		next(P);
		struct ptx_opnd *r = parse_operand(P);
		pp->n = 2;
		pp->elems = ptx_alloc_raw(P->m, 2 * sizeof(*pp->elems));
		if (!pp->elems)
			oom(P);
		pp->elems[0] = o, pp->elems[1] = r;
		o = pp;
	}
	if (!at_operand_end(P))
		goto verbatim;
	P->depth--;
	return o;
verbatim:
	P->depth--;
	return expr_from(P, &start);
}

/* ------------------------------------------------------------ statements */

/* A chain of statements being built (ptx_ir_internal.h); `failed` is unused here
 * (allocation failures longjmp). */
#define chain ptx_chain

static struct ptx_stmt *new_stmt(struct parser *P, struct chain *c, enum ptx_stmt_kind k,
				 const struct ptx_tok *at)
{
	struct ptx_stmt *s = ptx_alloc_raw(P->m, sizeof(*s));
	if (!s)
		oom(P);
	/* zero the header and the union member this kind uses, not all of it */
	memset(s, 0, k == PTX_STMT_DECL ? sizeof(*s) : offsetof(struct ptx_stmt, insn) + sizeof(s->insn));
	s->kind = k;
	set_pos(P, &s->line, &s->col, at);
	ptx_chain_link(c, s);
	return s;
}

/* Instruction; op is the opcode token, already consumed (P->t follows it). */
static void parse_insn(struct parser *P, struct chain *c, const struct ptx_tok *at,
		       const struct ptx_tok *op, const char *guard, int guard_neg)
{
	if (op->kind != T_ID || op->p[0] == '%') {
		P->t = *op;
		fail_expected(P, "an instruction");
	}
	struct ptx_stmt *s = new_stmt(P, c, PTX_STMT_INSN, at);
	struct ptx_insn *in = &s->insn;
	in->guard = guard;
	in->guard_neg = (unsigned char)guard_neg;
	in->opcode = tokdup(P, op);
	size_t base = P->sp;
	while (P->t.kind == T_DOT && !P->t.ws) {
		push(P, (void *)tokdup(P, &P->t));
		next(P);
	}
	in->mods = (const char **)pop_array(P, base, &in->nmods);
	if (!ptx_tok_punct(&P->t, ';')) {
		for (;;) {
			push(P, parse_operand(P));
			if (ptx_tok_punct(&P->t, ',')) {
				next(P);
				continue;
			}
			break;
		}
	}
	if (!ptx_tok_punct(&P->t, ';')) {
		P->sp = base;
		fail_expected(P, "',' or ';' after an operand");
	}
	next(P);
	in->ops = (struct ptx_opnd **)pop_array(P, base, &in->nops);
}

/* -------------------------------------------------------------- top level */

struct ichain {
	struct ptx_item *head, *tail;
};

static struct ptx_item *new_item(struct parser *P, struct ichain *c, enum ptx_item_kind k,
				 const struct ptx_tok *at)
{
	struct ptx_item *it = zalloc(P, sizeof(*it));
	it->kind = k;
	it->line = at->line;
	it->col = (unsigned)(at->p - at->ls) + 1;
	it->prev = c->tail;
	if (c->tail)
		c->tail->next = it;
	else
		c->head = it;
	c->tail = it;
	return it;
}

/* Where parsed nodes go: a function body (statements) or the module (items);
 * verbatim text and declarations are handled once for both. */
struct sink {
	struct chain *stmts; /* NULL: items */
	struct ichain *items;
};

/* The construct at `at` kept as written: a line (.loc, .file) or a statement
 * up to ';' (or a `{ }` block). */
static void verbatim(struct parser *P, struct sink *k, const struct ptx_tok *at, int line)
{
	const char *p;
	size_t n;
	struct ptx_tok start = *at;
	if (line)
		ptx_lex_raw_line(&P->lx, &start, &p, &n);
	else
		ptx_lex_raw_stmt(&P->lx, &start, &p, &n);
	const char *text = dup(P, p, n);
	if (k->stmts)
		new_stmt(P, k->stmts, PTX_STMT_VERBATIM, &start)->text = text;
	else
		new_item(P, k->items, PTX_ITEM_VERBATIM, &start)->text = text;
	next(P);
}

/* A declaration statement starting at the lookahead (`at`): one node per
 * declared name, or the statement verbatim when it is not one we model. */
static void decl_or_verbatim(struct parser *P, struct sink *k, const struct ptx_tok *at)
{
	struct ptx_tok start = *at;
	size_t base = P->sp;
	if (parse_decl_stmt(P, base)) {
		P->sp = base;
		verbatim(P, k, &start, 0);
		return;
	}
	for (size_t i = base; i < P->sp; i++) {
		const struct ptx_decl *d = P->stk[i];
		if (k->stmts)
			new_stmt(P, k->stmts, PTX_STMT_DECL, &start)->decl = *d;
		else
			new_item(P, k->items, PTX_ITEM_DECL, &start)->decl = *d;
	}
	P->sp = base;
}

/* Statements until the '}' closing depth 0 (body) or end of input (snippet). */
static void parse_body(struct parser *P, struct chain *c, int until_brace)
{
	struct sink k = {.stmts = c};
	int depth = 0;
	for (;;) {
		struct ptx_tok at = P->t;
		struct ptx_stmt *s;
		switch (P->t.kind) {
		case T_EOF:
			if (until_brace)
				ptx_lex_fail(&P->lx, &P->t,
					     "unexpected end of input in function body (missing '}')");
			if (depth)
				ptx_lex_fail(&P->lx, &P->t, "unexpected end of input (missing '}')");
			return;
		case T_PUNCT:
			if (P->t.p[0] == '{') {
				new_stmt(P, c, PTX_STMT_OPEN, &at);
				depth++;
				next(P);
			} else if (P->t.p[0] == '}') {
				if (depth == 0) {
					if (!until_brace)
						ptx_lex_fail(&P->lx, &P->t, "unbalanced '}'");
					next(P);
					return;
				}
				new_stmt(P, c, PTX_STMT_CLOSE, &at);
				depth--;
				next(P);
			} else if (P->t.p[0] == ';') {
				next(P);
			} else if (P->t.p[0] == '@') {
				next(P);
				int neg = 0;
				if (ptx_tok_punct(&P->t, '!')) {
					neg = 1;
					next(P);
				}
				if (P->t.kind != T_ID)
					fail_expected(P, "a guard predicate");
				const char *g = tokdup(P, &P->t);
				next(P);
				struct ptx_tok op = P->t;
				next(P);
				parse_insn(P, c, &at, &op, g, neg);
			} else {
				fail_expected(P, "an instruction");
			}
			break;
		case T_ID: {
			struct ptx_tok id = P->t;
			next(P);
			if (ptx_tok_punct(&P->t, ':')) {
				s = new_stmt(P, c, PTX_STMT_LABEL, &at);
				s->text = tokdup(P, &id);
				next(P);
			} else {
				parse_insn(P, c, &at, &id, NULL, 0);
			}
			break;
		}
		case T_DOT:
			if (ptx_tok_is(&P->t, T_DOT, ".loc") || ptx_tok_is(&P->t, T_DOT, ".file"))
				verbatim(P, &k, &at, 1);
			else if (is_space_word(&P->t))
				decl_or_verbatim(P, &k, &at);
			else
				verbatim(P, &k, &at, 0);
			break;
		default:
			fail_expected(P, "an instruction");
		}
	}
}

static void parse_perf(struct parser *P, struct ptx_func *fn)
{
	size_t base = P->sp;
	while (P->t.kind == T_DOT) {
		struct ptx_perf *pf = zalloc(P, sizeof(*pf));
		pf->name = tokdup(P, &P->t);
		next(P);
		if (P->t.kind == T_INT) {
			char buf[128];
			size_t o = 0;
			for (;;) {
				unsigned long long v = int_value(P->t.p, P->t.n);
				if (v > 0xffffffffull)
					ptx_lex_fail(&P->lx, &P->t, "directive argument out of range");
				if (pf->nvals < 3)
					pf->vals[pf->nvals] = (unsigned)v;
				pf->nvals++;
				int k = snprintf(buf + o, sizeof(buf) - o, "%s%llu", o ? ", " : "", v);
				if (k < 0 || (size_t)k >= sizeof(buf) - o)
					ptx_lex_fail(&P->lx, &P->t, "too many directive arguments");
				o += (size_t)k;
				next(P);
				if (!ptx_tok_punct(&P->t, ','))
					break;
				next(P);
				if (P->t.kind != T_INT)
					fail_expected(P, "an integer");
			}
			if (pf->nvals > 3)
				pf->nvals = 3;
			pf->args = dup(P, buf, o);
		} else if (P->t.kind == T_STR) {
			struct ptx_tok st = P->t;
			const char *p;
			size_t n;
			ptx_lex_raw_stmt(&P->lx, &st, &p, &n);
			if (n && p[n - 1] == ';') {
				pf->semi = 1;
				n--;
				while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
					n--;
			}
			pf->args = dup(P, p, n);
			next(P);
		}
		push(P, pf);
	}
	void **a = pop_array(P, base, &fn->nperf);
	if (fn->nperf) {
		fn->perf = ptx_alloc_raw(P->m, fn->nperf * sizeof(*fn->perf));
		if (!fn->perf)
			oom(P);
		for (unsigned i = 0; i < fn->nperf; i++)
			fn->perf[i] = *(struct ptx_perf *)a[i];
	}
}

static void parse_func(struct parser *P, struct ichain *c, const struct ptx_tok *at,
		       unsigned linkage, const char *attr)
{
	struct ptx_item *it = new_item(P, c, PTX_ITEM_FUNC, at);
	struct ptx_func *fn = &it->func;
	fn->linkage = linkage;
	fn->attr = attr;
	fn->is_entry = ptx_tok_is(&P->t, T_DOT, ".entry");
	next(P);
	if (ptx_tok_is(&P->t, T_DOT, ".attribute")) {
		if (fn->attr)
			ptx_lex_fail(&P->lx, &P->t, "duplicate .attribute");
		fn->attr = parse_attribute(P);
	}
	if (!fn->is_entry && ptx_tok_punct(&P->t, '(')) {
		fn->has_rets = 1;
		fn->rets = parse_param_list(P, &fn->nrets);
	}
	if (P->t.kind != T_ID)
		fail_expected(P, "a function name");
	fn->name = tokdup(P, &P->t);
	next(P);
	if (ptx_tok_punct(&P->t, '(')) {
		fn->has_params = 1;
		fn->params = parse_param_list(P, &fn->nparams);
	}
	parse_perf(P, fn);
	if (ptx_tok_punct(&P->t, ';')) {
		next(P);
		return;
	}
	if (!ptx_tok_punct(&P->t, '{'))
		fail_expected(P, "'{' or ';' after the function header");
	next(P);
	fn->has_body = 1;
	struct chain body = {0};
	parse_body(P, &body, 1);
	fn->head = body.head;
	fn->tail = body.tail;
}

static void parse_items(struct parser *P, struct ichain *c)
{
	struct sink k = {.items = c};
	while (P->t.kind != T_EOF) {
		struct ptx_tok at = P->t;
		if (P->t.kind != T_DOT)
			fail_expected(P, "a directive");
		struct ptx_item *it;
		if (ptx_tok_is(&at, T_DOT, ".version")) {
			next(P);
			if (P->t.kind != T_FLOAT && P->t.kind != T_INT)
				fail_expected(P, "a version number");
			const char *p = P->t.p, *e = P->t.p + P->t.n;
			unsigned long long maj = 0, min = 0;
			while (p < e && *p >= '0' && *p <= '9' && maj < 100000)
				maj = maj * 10 + (unsigned)(*p++ - '0');
			if (p < e && *p == '.') {
				for (p++; p < e && *p >= '0' && *p <= '9' && min < 100000; p++)
					min = min * 10 + (unsigned)(*p - '0');
			}
			if (p != e)
				ptx_lex_fail(&P->lx, &P->t, "invalid version number");
			it = new_item(P, c, PTX_ITEM_VERSION, &at);
			it->version.major = (unsigned)maj;
			it->version.minor = (unsigned)min;
			next(P);
		} else if (ptx_tok_is(&at, T_DOT, ".target")) {
			next(P);
			size_t base = P->sp;
			for (;;) {
				if (P->t.kind != T_ID)
					fail_expected(P, "a target name");
				push(P, (void *)tokdup(P, &P->t));
				next(P);
				if (!ptx_tok_punct(&P->t, ','))
					break;
				next(P);
			}
			it = new_item(P, c, PTX_ITEM_TARGET, &at);
			it->target.names = (const char **)pop_array(P, base, &it->target.n);
		} else if (ptx_tok_is(&at, T_DOT, ".address_size")) {
			next(P);
			unsigned v = expect_uint(P, "an address size");
			if (v != 32 && v != 64)
				ptx_lex_fail(&P->lx, &at, "address size must be 32 or 64");
			it = new_item(P, c, PTX_ITEM_ADDRESS_SIZE, &at);
			it->address_size = v;
		} else if (ptx_tok_is(&at, T_DOT, ".file") || ptx_tok_is(&at, T_DOT, ".loc")) {
			verbatim(P, &k, &at, 1);
		} else if (linkage_bit(&at) || ptx_tok_is(&at, T_DOT, ".entry") ||
			   ptx_tok_is(&at, T_DOT, ".func") || is_space_word(&at) ||
			   ptx_tok_is(&at, T_DOT, ".attribute")) {
			unsigned linkage = 0;
			const char *attr = NULL;
			while (P->t.kind == T_DOT) {
				unsigned lb = linkage_bit(&P->t);
				if (!lb)
					break;
				linkage |= lb;
				next(P);
			}
			if (ptx_tok_is(&P->t, T_DOT, ".entry") || ptx_tok_is(&P->t, T_DOT, ".func")) {
				parse_func(P, c, &at, linkage, attr);
				continue;
			}
			/* a variable declaration: re-read from its first token */
			ptx_lex_rewind(&P->lx, &at);
			next(P);
			decl_or_verbatim(P, &k, &at);
		} else {
			verbatim(P, &k, &at, 0);
		}
	}
}

/* ------------------------------------------------------------ entry points */

static void on_gx_name(void *arg, const char *p, size_t n)
{
	struct parser *P = arg;
	if (P->ngx == P->gxcap) {
		size_t nc = P->gxcap ? P->gxcap * 2 : 16;
		struct gxname *g = realloc(P->gx, nc * sizeof(*g));
		if (!g)
			oom(P);
		P->gx = g, P->gxcap = nc;
	}
	P->gx[P->ngx].p = p;
	P->gx[P->ngx].n = n;
	P->ngx++;
}

/* "__gx", or "__gx<k>" with the smallest k such that no name of the input
 * starts with "<prefix>_". Linear: only k <= number of such names can be
 * taken, so a bitmap of that size decides. */
static const char *pick_prefix(struct parser *P)
{
	size_t n = P->ngx + 1;
	unsigned char *used = calloc(n, 1);
	if (!used)
		oom(P);
	for (size_t i = 0; i < P->ngx; i++) {
		const char *p = P->gx[i].p, *e = p + P->gx[i].n;
		if (*p == '%' || *p == '$')
			p++;
		p += 4; /* "__gx" */
		size_t k = 0;
		int digits = 0;
		while (p < e && *p >= '0' && *p <= '9' && k <= n) {
			k = k * 10 + (size_t)(*p++ - '0');
			digits = 1;
		}
		if (p < e && *p == '_' && (k || !digits) && k < n)
			used[k] = 1;
	}
	size_t k = 0;
	while (used[k])
		k++;
	free(used);
	if (!k)
		return "__gx";
	char buf[32];
	snprintf(buf, sizeof(buf), "__gx%zu", k);
	return dup(P, buf, strlen(buf));
}

static void parser_init(struct parser *P, struct ptx_module *m, const char *text, size_t len)
{
	memset(P, 0, sizeof(*P));
	P->m = m;
	ptx_lex_init(&P->lx, text, len);
	P->lx.jb = &P->jb;
	P->lx.err = m->err;
	P->lx.errlen = sizeof(m->err);
	/* about one distinct name per 64 bytes of PTX; snippets need few */
	P->icap_init = 64;
	while (P->icap_init < len / 32 && P->icap_init < (1u << 20))
		P->icap_init *= 2;
}

static void parser_fini(struct parser *P)
{
	free(P->stk);
	free(P->gx);
	free(P->itab);
}

/* A NUL inside the text: where the driver would stop reading (PTX images
 * end at their first NUL), so what follows would mean nothing to it. */
int ptx_text_has_nul(const char *text, size_t len, char *err, size_t errlen)
{
	const char *z = text ? memchr(text, 0, len) : NULL;
	if (!z)
		return 0;
	unsigned line = 1;
	const char *ls = text;
	for (const char *p = text; (p = memchr(p, '\n', (size_t)(z - p))); ls = ++p)
		line++;
	if (errlen)
		snprintf(err, errlen, "%u:%u: NUL byte in the text (a PTX image ends at its first NUL)", line,
			 (unsigned)(z - ls) + 1);
	return 1;
}

struct ptx_module *ptx_module_parse(const char *text, size_t len, char *err, size_t errlen)
{
	if (errlen)
		err[0] = 0;
	if (!text && len) {
		if (errlen)
			snprintf(err, errlen, "no input");
		errno = EINVAL;
		return NULL;
	}
	if (ptx_text_has_nul(text, len, err, errlen)) {
		errno = EINVAL;
		return NULL;
	}
	struct ptx_module *m = calloc(1, sizeof(*m));
	if (!m || !(m->arena = ptx_arena_new(4 * len))) {
		free(m);
		if (errlen)
			snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	m->fresh_prefix = "__gx";
	m->src_len = len;
	struct parser *P = malloc(sizeof(*P));
	if (!P) {
		ptx_module_free(m);
		errno = ENOMEM;
		return NULL;
	}
	parser_init(P, m, text ? text : "", len);
	P->lx.on_gx_name = on_gx_name;
	P->lx.arg = P;
	struct ichain c = {0};
	if (setjmp(P->jb)) {
		int e = P->enomem ? ENOMEM : EINVAL;
		if (errlen)
			snprintf(err, errlen, "%s", m->err);
		parser_fini(P);
		free(P);
		ptx_module_free(m);
		errno = e;
		return NULL;
	}
	next(P);
	parse_items(P, &c);
	if (!c.head)
		ptx_lex_fail(&P->lx, &P->t, "empty input: no PTX (expected .version)");
	m->head = c.head;
	m->tail = c.tail;
	m->fresh_prefix = pick_prefix(P);
	for (struct ptx_item *it = m->head; it; it = it->next) {
		if (it->kind == PTX_ITEM_VERSION && !m->version)
			m->version = it;
		else if (it->kind == PTX_ITEM_TARGET && !m->target)
			m->target = it;
		else if (it->kind == PTX_ITEM_ADDRESS_SIZE && !m->address_size)
			m->address_size = it;
	}
	parser_fini(P);
	free(P);
	return m;
}

/* Statements (function-body syntax, positions 0:0) into k->stmts, or
 * top-level items into k->items. */
static int parse_snippet(struct ptx_module *m, const char *text, size_t len, struct sink *k)
{
	struct parser *P = malloc(sizeof(*P));
	if (!P)
		return gx_err(-ENOMEM);
	parser_init(P, m, text, len);
	P->snippet = k->stmts != NULL;
	P->lx.where = "snippet:";
	if (setjmp(P->jb)) {
		int e = P->enomem ? -ENOMEM : -EINVAL;
		parser_fini(P);
		free(P);
		return gx_err(e);
	}
	next(P);
	if (k->stmts)
		parse_body(P, k->stmts, 0);
	else
		parse_items(P, k->items);
	parser_fini(P);
	free(P);
	return 0;
}

int ptx_parse_stmts(struct ptx_module *m, const char *text, size_t len,
		    struct ptx_stmt **first, struct ptx_stmt **last)
{
	struct chain c = {0};
	struct sink k = {.stmts = &c};
	int err = parse_snippet(m, text, len, &k);
	*first = err ? NULL : c.head;
	*last = err ? NULL : c.tail;
	return err;
}

int ptx_parse_items(struct ptx_module *m, const char *text, size_t len,
		    struct ptx_item **first, struct ptx_item **last)
{
	struct ichain c = {0};
	struct sink k = {.items = &c};
	int err = parse_snippet(m, text, len, &k);
	*first = err ? NULL : c.head;
	*last = err ? NULL : c.tail;
	return err;
}
