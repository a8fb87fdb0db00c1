/* ptx_ir.c — the module, its allocation helpers and the editing/query helpers the passes use
 * (insertion, fresh names, opcode classification). Parsing is ptx_parse.c,
 * printing ptx_emit.c, inserting PTX text ptx_text.c (it parses: this file
 * stays below the parser). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx-rewrite/ptx_ir_internal.h"
#include "ptx-rewrite/ptx_arena_internal.h"

static void *arena_alloc_al(struct ptx_arena *a, size_t size, size_t align)
{
	return ptx_arena_alloc(a, size, align);
}

static void *arena_alloc(struct ptx_arena *a, size_t size)
{
	return ptx_arena_alloc(a, size, 8);
}

void *ptx_alloc(struct ptx_module *m, size_t size)
{
	void *p = arena_alloc(m->arena, size);
	if (p)
		memset(p, 0, size);
	return p;
}

char *ptx_strndup(struct ptx_module *m, const char *s, size_t n)
{
	char *p = arena_alloc_al(m->arena, n + 1, 1);
	if (!p)
		return NULL;
	memcpy(p, s, n);
	p[n] = 0;
	return p;
}

char *ptx_concat(struct ptx_module *m, const char *a, size_t alen, const char *b, size_t blen)
{
	char *p = arena_alloc_al(m->arena, alen + blen + 1, 1);
	if (!p)
		return NULL;
	memcpy(p, a, alen);
	memcpy(p + alen, b, blen);
	p[alen + blen] = 0;
	return p;
}

char *ptx_strdup(struct ptx_module *m, const char *s)
{
	return ptx_strndup(m, s, strlen(s));
}

char *ptx_vsprintf(struct ptx_module *m, const char *fmt, va_list ap)
{
	/* one formatting pass for the common short case */
	char small[512];
	va_list aq;
	va_copy(aq, ap);
	int n = vsnprintf(small, sizeof(small), fmt, aq);
	va_end(aq);
	if (n < 0)
		return NULL;
	if ((size_t)n < sizeof(small))
		return ptx_strndup(m, small, (size_t)n);
	char *p = arena_alloc_al(m->arena, (size_t)n + 1, 1);
	if (p)
		vsnprintf(p, (size_t)n + 1, fmt, ap);
	return p;
}

char *ptx_sprintf(struct ptx_module *m, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *p = ptx_vsprintf(m, fmt, ap);
	va_end(ap);
	return p;
}

struct ptx_module *ptx_module_new(void)
{
	struct ptx_module *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->arena = ptx_arena_new(0);
	if (!m->arena) {
		free(m);
		return NULL;
	}
	m->fresh_prefix = "__gx";
	return m;
}

void ptx_module_free(struct ptx_module *m)
{
	if (!m)
		return;
	ptx_arena_free(m->arena);
	free(m);
}

/* ---------------------------------------------------- editing statements */

void ptx_insert_before(struct ptx_func *fn, struct ptx_stmt *pos, struct ptx_stmt *first,
		       struct ptx_stmt *last)
{
	if (!first)
		return;
	struct ptx_stmt *prev = pos ? pos->prev : fn->tail;
	first->prev = prev;
	last->next = pos;
	if (prev)
		prev->next = first;
	else
		fn->head = first;
	if (pos)
		pos->prev = last;
	else
		fn->tail = last;
}

void ptx_insert_after(struct ptx_func *fn, struct ptx_stmt *pos, struct ptx_stmt *first,
		      struct ptx_stmt *last)
{
	ptx_insert_before(fn, pos ? pos->next : fn->head, first, last);
}

void ptx_stmt_remove(struct ptx_func *fn, struct ptx_stmt *s)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		fn->head = s->next;
	if (s->next)
		s->next->prev = s->prev;
	else
		fn->tail = s->prev;
	s->prev = s->next = NULL;
}

struct ptx_stmt *ptx_func_entry_point(struct ptx_func *fn)
{
	for (struct ptx_stmt *s = fn->head; s; s = s->next)
		if (s->kind != PTX_STMT_DECL && s->kind != PTX_STMT_VERBATIM &&
		    !(s->line == 0 && s->col == PTX_COL_START_REG))
			return s;
	return NULL;
}

void ptx_insert_start_regs(struct ptx_func *fn, struct ptx_stmt *head, struct ptx_stmt *tail)
{
	for (struct ptx_stmt *s = head; s; s = s == tail ? NULL : s->next) {
		s->line = 0;
		s->col = PTX_COL_START_REG;
	}
	ptx_insert_before(fn, fn->head, head, tail);
}

const char *ptx_fresh_name(struct ptx_module *m, const char *sigil, const char *what)
{
	/* "%s%s_%s%u" without printf: one per hook site */
	char buf[128], num[12], *p = num + sizeof(num);
	size_t ls = strlen(sigil), lp = strlen(m->fresh_prefix), lw = strlen(what);
	if (ls + lp + lw + 1 + sizeof(num) > sizeof(buf))
		return ptx_sprintf(m, "%s%s_%s%u", sigil, m->fresh_prefix, what, m->fresh_seq++);
	unsigned v = m->fresh_seq++;
	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	size_t ln = (size_t)(num + sizeof(num) - p), n = 0;
	memcpy(buf, sigil, ls), n += ls;
	memcpy(buf + n, m->fresh_prefix, lp), n += lp;
	buf[n++] = '_';
	memcpy(buf + n, what, lw), n += lw;
	memcpy(buf + n, p, ln), n += ln;
	return ptx_strndup(m, buf, n);
}

const char *ptx_new_reg(struct ptx_module *m, struct ptx_func *fn, const char *type)
{
	struct ptx_stmt *s = ptx_alloc(m, sizeof(*s));
	const char *name = ptx_fresh_name(m, "%", "r");
	const char *ty = ptx_strdup(m, type);
	if (!s || !name || !ty)
		return NULL;
	s->kind = PTX_STMT_DECL;
	s->decl.space = PTX_SPACE_REG;
	s->decl.space_str = ".reg";
	s->decl.type = ty;
	s->decl.name = name;
	ptx_insert_before(fn, fn->head, s, s);
	return name;
}

/* --------------------------------------------------------- editing items */

void ptx_item_insert_before(struct ptx_module *m, struct ptx_item *pos, struct ptx_item *first,
			    struct ptx_item *last)
{
	if (!first)
		return;
	struct ptx_item *prev = pos ? pos->prev : m->tail;
	first->prev = prev;
	last->next = pos;
	if (prev)
		prev->next = first;
	else
		m->head = first;
	if (pos)
		pos->prev = last;
	else
		m->tail = last;
}

void ptx_item_insert_after(struct ptx_module *m, struct ptx_item *pos, struct ptx_item *first,
			   struct ptx_item *last)
{
	ptx_item_insert_before(m, pos ? pos->next : m->head, first, last);
}

void ptx_item_remove(struct ptx_module *m, struct ptx_item *it)
{
	if (it->prev)
		it->prev->next = it->next;
	else
		m->head = it->next;
	if (it->next)
		it->next->prev = it->prev;
	else
		m->tail = it->prev;
	it->prev = it->next = NULL;
	if (m->version == it)
		m->version = NULL;
	if (m->target == it)
		m->target = NULL;
	if (m->address_size == it)
		m->address_size = NULL;
}

struct ptx_item *ptx_find_func(struct ptx_module *m, const char *name)
{
	struct ptx_item *decl = NULL;
	ptx_for_each_item(m, it) {
		if (it->kind != PTX_ITEM_FUNC || strcmp(it->func.name, name))
			continue;
		if (it->func.has_body)
			return it;
		if (!decl)
			decl = it;
	}
	return decl;
}

int ptx_func_add_param(struct ptx_module *m, struct ptx_func *fn, const struct ptx_decl *d)
{
	struct ptx_decl *p = ptx_alloc(m, sizeof(*p) * (fn->nparams + 1));
	if (!p)
		return gx_err(-ENOMEM);
	if (fn->nparams)
		memcpy(p, fn->params, sizeof(*p) * fn->nparams);
	p[fn->nparams++] = *d;
	fn->params = p;
	fn->has_params = 1;
	return 0;
}

/* ---------------------------------------------------------- classification */

unsigned ptx_type_size(const char *t)
{
	if (!t || t[0] != '.')
		return 0;
	t++;
	if (!strcmp(t, "pred"))
		return 0;
	/* packed pairs: f16x2, bf16x2, e4m3x2, e5m2x2 ... */
	size_t n = strlen(t);
	int pair = n > 2 && t[n - 2] == 'x' && t[n - 1] == '2';
	unsigned sz = 0;
	if (!strncmp(t, "bf16", 4) || !strncmp(t, "f16", 3))
		sz = 2;
	else if (!strncmp(t, "e4m3", 4) || !strncmp(t, "e5m2", 4) || !strncmp(t, "e2m3", 4) ||
		 !strncmp(t, "e3m2", 4))
		sz = 1;
	else if (!strcmp(t, "tf32"))
		sz = 4;
	else if ((t[0] == 'b' || t[0] == 'u' || t[0] == 's' || t[0] == 'f') && t[1] >= '0' &&
		 t[1] <= '9') {
		unsigned bits = 0;
		const char *p = t + 1;
		while (*p >= '0' && *p <= '9' && bits < 1024)
			bits = bits * 10 + (unsigned)(*p++ - '0');
		if (*p && !(pair && p == t + n - 2))
			return 0;
		if (bits != 8 && bits != 16 && bits != 32 && bits != 64 && bits != 128)
			return 0;
		sz = bits / 8;
	} else
		return 0;
	return pair ? sz * 2 : sz;
}

enum ptx_space ptx_space_of(const char *w)
{
	if (!w || w[0] != '.')
		return PTX_SPACE_NONE;
	static const struct {
		const char *name;
		enum ptx_space sp;
	} tab[] = {
		{"reg", PTX_SPACE_REG},       {"sreg", PTX_SPACE_SREG},
		{"const", PTX_SPACE_CONST},   {"global", PTX_SPACE_GLOBAL},
		{"local", PTX_SPACE_LOCAL},   {"param", PTX_SPACE_PARAM},
		{"shared", PTX_SPACE_SHARED}, {"tex", PTX_SPACE_TEX},
	};
	for (size_t i = 0; i < GX_ARRAY_SIZE(tab); i++) {
		if (tab[i].name[0] != w[1])
			continue;
		size_t n = strlen(tab[i].name);
		if (!strncmp(w + 1, tab[i].name, n) && (w[1 + n] == 0 || w[1 + n] == ':'))
			return tab[i].sp;
	}
	return PTX_SPACE_NONE;
}

int ptx_insn_has_mod(const struct ptx_insn *in, const char *mod)
{
	for (unsigned i = 0; i < in->nmods; i++)
		if (!strcmp(in->mods[i], mod))
			return 1;
	return 0;
}

enum ptx_op_class ptx_classify(const struct ptx_insn *in, struct ptx_opinfo *info)
{
	static const struct {
		const char *op;
		enum ptx_op_class cls;
		int addr_op;
	} tab[] = {
		{"ld", PTX_OP_LD, 1},        {"ldu", PTX_OP_LD, 1},
		{"st", PTX_OP_ST, 0},        {"atom", PTX_OP_ATOM, 1},
		{"red", PTX_OP_RED, 0},      {"membar", PTX_OP_FENCE, -1},
		{"fence", PTX_OP_FENCE, -1}, {"ret", PTX_OP_RET, -1},
		{"exit", PTX_OP_EXIT, -1},   {"trap", PTX_OP_TRAP, -1},
		{"brkpt", PTX_OP_TRAP, -1},  {"call", PTX_OP_CALL, -1},
		{"bra", PTX_OP_BRA, -1},     {"brx", PTX_OP_BRA, -1},
		{"bar", PTX_OP_BAR, -1},     {"barrier", PTX_OP_BAR, -1},
		{"prefetch", PTX_OP_PREFETCH, 0}, {"prefetchu", PTX_OP_PREFETCH, 0},
		{"applypriority", PTX_OP_PREFETCH, 0}, {"discard", PTX_OP_PREFETCH, 0},
		{"cp", PTX_OP_ASYNC_COPY, -1}, {"tex", PTX_OP_TEX, -1},
		{"tld4", PTX_OP_TEX, -1},    {"suld", PTX_OP_TEX, -1},
		{"sust", PTX_OP_TEX, -1},    {"sured", PTX_OP_TEX, -1},
		{"txq", PTX_OP_TEX, -1},     {"suq", PTX_OP_TEX, -1},
	};
	memset(info, 0, sizeof(*info));
	info->addr_op = -1;
	info->vec = 1;
	/* Called for every instruction by every pass: the first byte rules out
	 * nearly all entries before a strcmp. */
	for (size_t i = 0; i < GX_ARRAY_SIZE(tab); i++) {
		if (tab[i].op[0] != in->opcode[0] || strcmp(in->opcode, tab[i].op))
			continue;
		info->cls = tab[i].cls;
		info->addr_op = tab[i].addr_op;
		break;
	}
	if (info->addr_op >= (int)in->nops)
		info->addr_op = -1;
	switch (info->cls) {
	case PTX_OP_LD:
	case PTX_OP_ST:
	case PTX_OP_ATOM:
	case PTX_OP_RED:
	case PTX_OP_PREFETCH:
		break;
	default:
		return info->cls;
	}
	info->space = PTX_SPACE_GENERIC;
	int have_space = 0;
	for (unsigned i = 0; i < in->nmods; i++) {
		const char *md = in->mods[i];
		enum ptx_space sp = ptx_space_of(md);
		if (sp != PTX_SPACE_NONE && !have_space) {
			info->space = sp;
			have_space = 1;
			continue;
		}
		if (!strcmp(md, ".v2"))
			info->vec = 2;
		else if (!strcmp(md, ".v4"))
			info->vec = 4;
		else if (!strcmp(md, ".v8"))
			info->vec = 8;
		else if (!strcmp(md, ".nc"))
			info->nc = 1;
		else {
			unsigned sz = ptx_type_size(md);
			if (sz)
				info->elem_size = sz;
		}
	}
	info->size = info->vec * info->elem_size;
	return info->cls;
}

int ptx_call_parts(const struct ptx_insn *in, struct ptx_call_parts *cp)
{
	memset(cp, 0, sizeof(*cp));
	unsigned i = 0;
	if (strcmp(in->opcode, "call"))
		return gx_err(-EINVAL);
	if (i < in->nops && in->ops[i]->kind == PTX_OPND_LIST) {
		/* (rets), callee ... or just (args) would be malformed: a callee comes first */
		if (i + 1 < in->nops && in->ops[i + 1]->kind == PTX_OPND_ID)
			cp->rets = in->ops[i++];
	}
	if (i >= in->nops || in->ops[i]->kind != PTX_OPND_ID)
		return gx_err(-EINVAL);
	cp->callee = in->ops[i++];
	if (i < in->nops && in->ops[i]->kind == PTX_OPND_LIST)
		cp->args = in->ops[i++];
	if (i < in->nops && in->ops[i]->kind == PTX_OPND_ID)
		cp->proto = in->ops[i++];
	return i == in->nops ? 0 : gx_err(-EINVAL);
}

unsigned ptx_module_target_sm(const struct ptx_module *m)
{
	if (!m->target)
		return 0;
	for (unsigned i = 0; i < m->target->target.n; i++) {
		unsigned v;
		if (sscanf(m->target->target.names[i], "sm_%u", &v) == 1)
			return v;
	}
	return 0;
}
