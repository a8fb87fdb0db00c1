/* ptx_lex.c — PTX tokenizer and raw scanners. Robust against any bytes: every
 * read is bounded by `end` (the text need not be NUL-terminated and may hold
 * NULs), and malformed input ends in ptx_lex_fail(), never past the buffer. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ptx-rewrite/ptx_lex_internal.h"

/* Character classes, one table lookup per byte. */
enum { C_IDS = 1, C_IDC = 2, C_DIG = 4, C_HEX = 8 };
static const unsigned char cclass[256] = {
#define R(a, b, v) [a ... b] = (v)
	R('a', 'f', C_IDS | C_IDC | C_HEX), R('g', 'z', C_IDS | C_IDC),
	R('A', 'F', C_IDS | C_IDC | C_HEX), R('G', 'Z', C_IDS | C_IDC),
	R('0', '9', C_IDC | C_DIG | C_HEX),
	['_'] = C_IDS | C_IDC, ['$'] = C_IDS | C_IDC, ['%'] = C_IDS,
#undef R
};

static inline int is_id_start(unsigned char c)
{
	return cclass[c] & C_IDS;
}

static inline int is_id_char(unsigned char c)
{
	return cclass[c] & C_IDC;
}

static inline int is_digit(unsigned char c)
{
	return cclass[c] & C_DIG;
}

static inline int is_hex(unsigned char c)
{
	return cclass[c] & C_HEX;
}

void ptx_lex_init(struct ptx_lexer *lx, const char *src, size_t len)
{
	memset(lx, 0, sizeof(*lx));
	lx->src = lx->cur = lx->ls = src;
	lx->end = src + len;
	lx->line = 1;
	lx->where = "";
}

void ptx_lex_fail(struct ptx_lexer *lx, const struct ptx_tok *t, const char *fmt, ...)
{
	unsigned line = t ? t->line : lx->line;
	const char *ls = t ? t->ls : lx->ls;
	const char *p = t ? t->p : lx->cur;
	if (lx->errlen) {
		int n = snprintf(lx->err, lx->errlen, "%s%u:%u: ", lx->where, line + lx->line_base,
				 (unsigned)(p - ls) + 1);
		if (n >= 0 && (size_t)n < lx->errlen) {
			va_list ap;
			va_start(ap, fmt);
			vsnprintf(lx->err + n, lx->errlen - (size_t)n, fmt, ap);
			va_end(ap);
		}
	}
	longjmp(*lx->jb, 1);
}

const char *ptx_tok_describe(const struct ptx_tok *t, char *buf, size_t len)
{
	switch (t->kind) {
	case T_EOF:
		return "end of input";
	case T_PUNCT:
		snprintf(buf, len, "'%c'", t->p[0]);
		return buf;
	case T_STR:
		return "a string";
	default:
		break;
	}
	/* Quote at most 40 bytes, printable only (the text may be any bytes). */
	size_t n = t->n < 40 ? t->n : 40, o = 0;
	char q[48];
	for (size_t i = 0; i < n; i++)
		q[o++] = (t->p[i] >= 0x20 && t->p[i] < 0x7f) ? t->p[i] : '?';
	q[o] = 0;
	snprintf(buf, len, "'%s%s'", q, t->n > n ? "..." : "");
	return buf;
}

/* Skip white space and comments; returns whether anything was skipped. */
static int skip_ws(struct ptx_lexer *lx)
{
	const char *p = lx->cur, *end = lx->end, *start = p;
	for (;;) {
		while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\f' || *p == '\v'))
			p++;
		if (p >= end)
			break;
		if (*p == '\n') {
			lx->line++;
			lx->ls = ++p;
			continue;
		}
		if (*p == '/' && p + 1 < end && p[1] == '/') {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			p = nl ? nl : end;
			continue;
		}
		if (*p == '/' && p + 1 < end && p[1] == '*') {
			const char *c = p + 2;
			for (;;) {
				if (c + 1 >= end) {
					lx->cur = p;
					ptx_lex_fail(lx, NULL, "unterminated comment");
				}
				if (*c == '*' && c[1] == '/')
					break;
				if (*c == '\n') {
					lx->line++;
					lx->ls = c + 1;
				}
				c++;
			}
			p = c + 2;
			continue;
		}
		break;
	}
	lx->cur = p;
	return p != start;
}

static const char *scan_string(struct ptx_lexer *lx, const char *p)
{
	const char *start = p, *ls = lx->ls;
	unsigned line = lx->line;
	for (p++; p < lx->end; p++) {
		if (*p == '\\' && p + 1 < lx->end) {
			p++;
			continue;
		}
		if (*p == '"')
			return p + 1;
		if (*p == '\n') {
			lx->line++;
			lx->ls = p + 1;
		}
		if (*p == 0)
			break;
	}
	lx->cur = start;
	lx->line = line;
	lx->ls = ls;
	ptx_lex_fail(lx, NULL, "unterminated string");
}

void ptx_lex_next(struct ptx_lexer *lx, struct ptx_tok *t)
{
	t->ws = (unsigned char)skip_ws(lx);
	const char *p = lx->cur, *end = lx->end;
	t->p = p;
	t->line = lx->line;
	t->ls = lx->ls;
	if (p >= end) {
		t->kind = T_EOF;
		t->n = 0;
		return;
	}
	unsigned char c = (unsigned char)*p;
	if (is_id_start(c)) {
		const char *q = p + 1;
		while (q < end && is_id_char((unsigned char)*q))
			q++;
		if (c == '%' && q == p + 1)
			ptx_lex_fail(lx, NULL, "invalid identifier '%%'");
		t->kind = T_ID;
		t->n = (size_t)(q - p);
		if (lx->on_gx_name) {
			const char *b = (c == '%' || c == '$') ? p + 1 : p;
			if (q - b >= 4 && !memcmp(b, "__gx", 4))
				lx->on_gx_name(lx->arg, p, t->n);
		}
		lx->cur = q;
		return;
	}
	if (c == '.' && p + 1 < end && is_id_char((unsigned char)p[1]) && p[1] != '$') {
		const char *q = p + 1;
		for (;;) {
			while (q < end && is_id_char((unsigned char)*q))
				q++;
			if (q + 2 < end && q[0] == ':' && q[1] == ':' && is_id_char((unsigned char)q[2])) {
				q += 2;
				continue;
			}
			break;
		}
		t->kind = T_DOT;
		t->n = (size_t)(q - p);
		lx->cur = q;
		return;
	}
	if (is_digit(c)) {
		const char *q = p;
		int flt = 0;
		if (c == '0' && q + 1 < end && (q[1] == 'f' || q[1] == 'F' || q[1] == 'd' || q[1] == 'D')) {
			size_t want = (q[1] == 'f' || q[1] == 'F') ? 8 : 16;
			q += 2;
			size_t k = 0;
			while (q < end && is_hex((unsigned char)*q))
				q++, k++;
			if (k != want)
				ptx_lex_fail(lx, NULL, "invalid floating-point constant");
			flt = 1;
		} else if (c == '0' && q + 1 < end && (q[1] == 'x' || q[1] == 'X')) {
			q += 2;
			const char *h = q;
			while (q < end && is_hex((unsigned char)*q))
				q++;
			if (q == h)
				ptx_lex_fail(lx, NULL, "invalid integer constant");
		} else if (c == '0' && q + 1 < end && (q[1] == 'b' || q[1] == 'B')) {
			q += 2;
			const char *h = q;
			while (q < end && (*q == '0' || *q == '1'))
				q++;
			if (q == h)
				ptx_lex_fail(lx, NULL, "invalid integer constant");
		} else {
			while (q < end && is_digit((unsigned char)*q))
				q++;
			if (q + 1 < end && *q == '.' && is_digit((unsigned char)q[1])) {
				flt = 1;
				q++;
				while (q < end && is_digit((unsigned char)*q))
					q++;
			}
			if (q < end && (*q == 'e' || *q == 'E')) {
				const char *e = q + 1;
				if (e < end && (*e == '+' || *e == '-'))
					e++;
				if (e < end && is_digit((unsigned char)*e)) {
					flt = 1;
					q = e;
					while (q < end && is_digit((unsigned char)*q))
						q++;
				}
			}
		}
		if (!flt && q < end && (*q == 'U' || *q == 'u'))
			q++;
		if (q < end && is_id_char((unsigned char)*q))
			ptx_lex_fail(lx, NULL, "invalid numeric constant");
		t->kind = flt ? T_FLOAT : T_INT;
		t->n = (size_t)(q - p);
		lx->cur = q;
		return;
	}
	if (c == '"') {
		const char *q = scan_string(lx, p);
		t->kind = T_STR;
		t->n = (size_t)(q - p);
		lx->cur = q;
		return;
	}
	if (memchr(",;:{}[]()<>=+-!@|*/~&^.?", c, 25) && c) {
		t->kind = T_PUNCT;
		t->n = 1;
		lx->cur = p + 1;
		return;
	}
	if (c >= 0x20 && c < 0x7f)
		ptx_lex_fail(lx, NULL, "unexpected character '%c'", c);
	ptx_lex_fail(lx, NULL, "unexpected byte 0x%02x", c);
}

void ptx_lex_rewind(struct ptx_lexer *lx, const struct ptx_tok *t)
{
	lx->cur = t->p;
	lx->line = t->line;
	lx->ls = t->ls;
}

/* Verbatim text becomes a C string: a NUL inside would cut it short. */
static void no_nul(struct ptx_lexer *lx, const struct ptx_tok *t, const char *p, size_t n)
{
	if (memchr(p, 0, n))
		ptx_lex_fail(lx, t, "unexpected byte 0x00 in directive");
}

static void trim(const char **p, size_t *n)
{
	while (*n && ((*p)[*n - 1] == ' ' || (*p)[*n - 1] == '\t' || (*p)[*n - 1] == '\r' ||
		      (*p)[*n - 1] == '\n'))
		(*n)--;
}

void ptx_lex_raw_line(struct ptx_lexer *lx, const struct ptx_tok *t, const char **pp, size_t *np)
{
	ptx_lex_rewind(lx, t);
	const char *p = lx->cur, *end = lx->end;
	while (p < end && *p != '\n') {
		if (*p == '"') {
			p = scan_string(lx, p);
			continue;
		}
		if (*p == '/' && p + 1 < end && (p[1] == '/' || p[1] == '*'))
			break;
		p++;
	}
	*pp = lx->cur;
	*np = (size_t)(p - lx->cur);
	trim(pp, np);
	no_nul(lx, t, *pp, *np);
	lx->cur = p;
}

/* Shared by raw_stmt and raw_expr. mode 0: statement, 1: expression. */
static void raw_scan(struct ptx_lexer *lx, const struct ptx_tok *t, const char **pp, size_t *np,
		     int mode)
{
	ptx_lex_rewind(lx, t);
	const char *start = lx->cur, *end = lx->end;
	int depth = 0;
	const char *p = start;
	/* An expression ends at its last character of code: a comment after it
	 * is not part of it (kept, `a // c` would be emitted as `a // c;`, the
	 * statement's ';' commented out; found by fuzz_ptx) */
	const char *code_end = start;
	for (;;) {
		if (p >= end) {
			if (mode == 1)
				break;
			lx->cur = p;
			ptx_lex_fail(lx, t, "unterminated directive (missing ';')");
		}
		char c = *p;
		if (c == '"') {
			p = scan_string(lx, p);
			code_end = p;
			continue;
		}
		if (c == '/' && p + 1 < end && (p[1] == '/' || p[1] == '*')) {
			lx->cur = p;
			skip_ws(lx);
			p = lx->cur;
			continue;
		}
		if (c == '\n') {
			lx->line++;
			lx->ls = p + 1;
		} else if (c == '{' || c == '(' || c == '[') {
			depth++;
		} else if (c == '}' || c == ')' || c == ']') {
			if (depth == 0) {
				if (mode == 1)
					break;
				lx->cur = p;
				ptx_lex_fail(lx, NULL, "unbalanced '%c'", c);
			}
			depth--;
			if (mode == 0 && depth == 0 && c == '}') {
				p++;
				/* a block closes the directive; take a directly following ';' */
				const char *q = p;
				while (q < end && (*q == ' ' || *q == '\t'))
					q++;
				if (q < end && *q == ';')
					p = q + 1;
				break;
			}
		} else if (depth == 0 && (c == ';' || (mode == 1 && c == ','))) {
			if (mode == 0)
				p++;
			break;
		}
		if (c != ' ' && c != '\t' && c != '\r' && c != '\n')
			code_end = p + 1;
		p++;
	}
	*pp = start;
	*np = (size_t)((mode == 1 ? code_end : p) - start);
	trim(pp, np);
	no_nul(lx, t, *pp, *np);
	lx->cur = p;
}

void ptx_lex_raw_stmt(struct ptx_lexer *lx, const struct ptx_tok *t, const char **p, size_t *n)
{
	raw_scan(lx, t, p, n, 0);
}

void ptx_lex_raw_expr(struct ptx_lexer *lx, const struct ptx_tok *t, const char **p, size_t *n)
{
	raw_scan(lx, t, p, n, 1);
}
