/* ptx_lex_internal.h — the PTX tokenizer (hand-written, one pass, no allocation).
 *
 * Tokens point into the source; comments and white space are skipped (their
 * presence is recorded in tok.ws so the parser can tell `ld.global` from
 * `ld .global`). Raw scanners capture constructs the parser keeps verbatim
 * (a line such as `.loc ...`, a statement up to `;`, a `{ }` block),
 * honouring strings and comments. Errors longjmp through the caller's jmp_buf
 * with a "line:col: message" text. */
#ifndef PTX_LEX_H
#define PTX_LEX_H

#include <setjmp.h>
#include <stddef.h>

enum ptx_tok_kind {
	T_EOF = 0,
	T_ID,    /* [A-Za-z_$%][A-Za-z0-9_$]* */
	T_DOT,   /* .word, .shared::cta, .2d */
	T_INT,   /* 12, 0x1F, 017, 0b101, 7U */
	T_FLOAT, /* 0f3F800000, 0d..., 1.5, 2e3 */
	T_STR,   /* "..." */
	T_PUNCT, /* one character: , ; : { } [ ] ( ) < > = + - ! @ | * / ~ & ^ . */
};

struct ptx_tok {
	enum ptx_tok_kind kind;
	unsigned char ws;   /* white space or a comment precedes the token */
	const char *p;      /* first byte */
	size_t n;           /* bytes */
	unsigned line;
	const char *ls;     /* start of the token's line: col = p - ls + 1 */
};

struct ptx_lexer {
	const char *src, *cur, *end;
	unsigned line;
	const char *ls;
	unsigned line_base; /* added to reported lines (snippets start at 1) */
	const char *where;  /* error prefix ("" or "snippet:") */
	char *err;          /* message buffer */
	size_t errlen;
	jmp_buf *jb;
	/* Identifiers starting with "__gx" (after a % or $ sigil), for picking a
	 * fresh-name prefix that cannot clash: callback per such identifier. */
	void (*on_gx_name)(void *arg, const char *p, size_t n);
	void *arg;
};

void ptx_lex_init(struct ptx_lexer *lx, const char *src, size_t len);
void ptx_lex_next(struct ptx_lexer *lx, struct ptx_tok *t);
/* Rewind so that the next token read starts at t. */
void ptx_lex_rewind(struct ptx_lexer *lx, const struct ptx_tok *t);
/* Raw scanners start at t (rewound) and leave the lexer after the construct;
 * they return the captured slice in *p, *n (trimmed of white space). */
void ptx_lex_raw_line(struct ptx_lexer *lx, const struct ptx_tok *t, const char **p, size_t *n);
/* Up to and including the ';' at nesting depth 0, or a `{ }` block closed at
 * depth 0 (then an immediately following ';' is included too). */
void ptx_lex_raw_stmt(struct ptx_lexer *lx, const struct ptx_tok *t, const char **p, size_t *n);
/* An operand-like expression: up to (not including) ',' ';' at depth 0 or a
 * closing bracket that has no opener in the slice. */
void ptx_lex_raw_expr(struct ptx_lexer *lx, const struct ptx_tok *t, const char **p, size_t *n);

/* Report "line:col: message" at t (or at the lexer position when t is NULL)
 * and longjmp. */
__attribute__((noreturn, format(printf, 3, 4))) void ptx_lex_fail(struct ptx_lexer *lx,
								 const struct ptx_tok *t,
								 const char *fmt, ...);
/* "'x'", "identifier 'foo'", "end of input" — for messages. */
const char *ptx_tok_describe(const struct ptx_tok *t, char *buf, size_t len);

static inline int ptx_tok_is(const struct ptx_tok *t, enum ptx_tok_kind k, const char *s)
{
	if (t->kind != k)
		return 0;
	size_t i = 0;
	for (; i < t->n; i++)
		if (s[i] != t->p[i])
			return 0;
	return s[i] == 0;
}

static inline int ptx_tok_punct(const struct ptx_tok *t, char c)
{
	return t->kind == T_PUNCT && t->p[0] == c;
}

#endif
