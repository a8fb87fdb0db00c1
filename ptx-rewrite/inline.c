/* inline.c — an analysed handler's body (handler.c) inlined at a hook
 * site, with its context loads turned into moves from the site's word
 * registers (ctx_words_internal.h). The body is turned into an IR template once per
 * handler; each site copies it with fresh names (inline_internal.h). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx-rewrite/fnlocal_internal.h"
#include "ptx-rewrite/handler_internal.h"
#include "ptx-rewrite/inline_internal.h"
#include "ptx-rewrite/ptx_internal.h"

/* The body of an inlinable handler, prepared once (tmpl_build) as IR with
 * every name that a site renames replaced by a slot; a site (tmpl_clone)
 * makes the slots' names and copies the statements, sharing what no site
 * changes (modifiers, immediates, names that are not renamed).
 *
 * Registers are renamed once ("%r5" → "%__gx_h_r5"): every site declares
 * them in its own `{ }` scope, like its other registers, so copies at
 * different sites cannot meet, and operands naming them are shared. Slots,
 * renamed per site: a label ("$L__BB0_1" → "$__gx_h7_L__BB0_1", labels are
 * per function), a .local depot (→ the site function's copy,
 * fnlocal.c) and the site's end label. In template
 * operands, an ID's ival is its slot + 1 (0: not renamed, -1: copied at
 * every site because a later pass may rewrite it in place: %ctaid/%nctaid,
 * pass_persistent.c) and a compound operand's ival is 1 when it must be
 * copied; sites get copies with ival 0, as the parser makes them. */
enum slot_kind { SLOT_REG, SLOT_LABEL, SLOT_LOCAL, SLOT_END };

struct slot {
	enum slot_kind kind;
	const char *name;   /* original name (REG, LABEL, LOCAL) */
	const char *suffix; /* REG/LABEL: what follows the site prefix */
	size_t suffix_len;
	const char *fixed;	     /* REG: the name at every site */
	const struct ptx_decl *decl; /* LOCAL */
};

struct tstmt {
	struct ptx_stmt s;
	unsigned guard, name; /* slot + 1 of the guard / decl or label name, 0: kept */
	unsigned char top;    /* a top-level declaration: to the site's head */
	unsigned char ren;    /* some operand must be copied */
};

struct ptx_inl_tmpl {
	struct tstmt *st;
	size_t n;
	struct slot *slots;
	size_t nslots;
};

struct hent {
	const char *name;
	unsigned key, kind, val;
};

struct tb { /* template under construction */
	struct ptx_module *m;
	struct ptx_an *a;
	const struct ptx_site_regs *r;
	const char **labels;
	size_t nlabels;
	struct tstmt *st;
	size_t n, cap;
	struct slot *slots;
	size_t nslots, capslots;
	unsigned end;	   /* slot + 1 of the end label */
	struct hent *htab; /* slot_add, name_slot */
	size_t hn, hcap;
	size_t nalias; /* registers replaced by context words */
};

/* Lookups while building a template: (kind, name) → slot + 1, and a name's
 * renaming (NAME_QUERY) → name_slot's answer + 1. Open addressing, grown at
 * half full; a handler mentions a few hundred distinct names at most. */
#define NAME_QUERY 7u
#define NAME_ALIAS 8u /* a register that is a context word: val = word + 1 */
#define NAME_DEFS  9u /* definitions of a register: val = count */

static unsigned hkey(const char *s, unsigned kind)
{
	unsigned h = 2166136261u ^ kind;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static struct hent *hfind(struct tb *t, const char *name, unsigned kind)
{
	if (2 * (t->hn + 1) > t->hcap) {
		size_t cap = t->hcap ? 2 * t->hcap : 256;
		struct hent *n = calloc(cap, sizeof(*n));
		if (!n)
			return NULL;
		for (size_t i = 0; i < t->hcap; i++) {
			struct hent *e = &t->htab[i];
			if (!e->name)
				continue;
			size_t j = e->key & (cap - 1);
			while (n[j].name)
				j = (j + 1) & (cap - 1);
			n[j] = *e;
		}
		free(t->htab);
		t->htab = n;
		t->hcap = cap;
	}
	unsigned k = hkey(name, kind);
	size_t j = k & (t->hcap - 1);
	for (; t->htab[j].name; j = (j + 1) & (t->hcap - 1))
		if (t->htab[j].key == k && t->htab[j].kind == kind &&
		    (t->htab[j].name == name || !strcmp(t->htab[j].name, name)))
			return &t->htab[j];
	/* a new entry: the caller fills val */
	t->htab[j] = (struct hent){ name, k, kind, 0 };
	t->hn++;
	return &t->htab[j];
}

static unsigned slot_add(struct tb *t, enum slot_kind kind, const char *name, const struct ptx_decl *decl)
{
	struct hent *e = NULL;
	if (kind == SLOT_END) {
		for (size_t i = 0; i < t->nslots; i++)
			if (t->slots[i].kind == SLOT_END)
				return (unsigned)i + 1;
	} else {
		if (!(e = hfind(t, name, kind)))
			return 0;
		if (e->val)
			return e->val;
	}
	if (t->nslots == t->capslots) {
		size_t cap = t->capslots ? 2 * t->capslots : 32;
		struct slot *n = realloc(t->slots, cap * sizeof(*n));
		if (!n)
			return 0;
		t->slots = n;
		t->capslots = cap;
	}
	struct slot *s = &t->slots[t->nslots];
	*s = (struct slot){ .kind = kind, .name = name, .decl = decl };
	if (kind == SLOT_REG || kind == SLOT_LABEL) {
		s->suffix = name + (name[0] == '%' || name[0] == '$');
		s->suffix_len = strlen(s->suffix);
	}
	t->nslots++;
	if (e)
		e->val = (unsigned)t->nslots;
	return (unsigned)t->nslots;
}

/* The slot + 1 of a name a site renames (ren_id of the text path), 0 if it
 * is kept; UINT_MAX on ENOMEM. */
static unsigned name_slot(struct tb *t, const char *name)
{
	struct hent *q = hfind(t, name, NAME_QUERY);
	if (!q)
		return UINT_MAX;
	if (q->val)
		return q->val - 1;
	enum slot_kind k;
	unsigned s = 0;
	if (name[0] == '%' && ptx_an_regdecl(t->a->regs, t->a->nregs, name)) {
		k = SLOT_REG;
	} else {
		k = SLOT_END;
		for (size_t i = 0; i < t->nlabels && k == SLOT_END; i++)
			if (!strcmp(t->labels[i], name))
				k = SLOT_LABEL;
		if (k == SLOT_END) {
			/* a .local depot (made before any query), or kept */
			struct hent *l = hfind(t, name, SLOT_LOCAL);
			if (!l)
				return UINT_MAX;
			s = l->val; /* 0: not one (the entry stays, answering 0) */
		}
	}
	if (k != SLOT_END && !(s = slot_add(t, k, name, NULL)))
		return UINT_MAX;
	/* hfind may have moved the table: look the query up again */
	if (!(q = hfind(t, name, NAME_QUERY)))
		return UINT_MAX;
	q->val = s + 1;
	return s;
}

static struct tstmt *tstmt_new(struct tb *t, enum ptx_stmt_kind kind)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;
		struct tstmt *n = realloc(t->st, cap * sizeof(*n));
		if (!n)
			return NULL;
		t->st = n;
		t->cap = cap;
	}
	struct tstmt *s = &t->st[t->n++];
	memset(s, 0, sizeof(*s));
	s->s.kind = kind;
	return s;
}

/* A template copy of operand o with its names marked; *copy set when a
 * site must copy it. NULL on ENOMEM. */
static struct ptx_opnd *topnd(struct tb *t, const struct ptx_opnd *o, int *copy)
{
	struct ptx_opnd *c = ptx_alloc(t->m, sizeof(*c));
	if (!c)
		return NULL;
	*c = *o;
	if (o->kind == PTX_OPND_ID && o->text) {
		if (t->nalias && o->text[0] == '%' && !o->neg) {
			struct hent *al = hfind(t, o->text, NAME_ALIAS);
			if (!al)
				return NULL;
			if (al->val)
				return t->r->ow[al->val - 1]; /* shared: never marked */
		}
		unsigned s = name_slot(t, o->text);
		if (s == UINT_MAX)
			return NULL;
		c->ival = s ? (long long)s : (o->text[0] == '%' && (o->text[1] == 'c' || o->text[1] == 'n')) ? -1 : 0;
		*copy |= c->ival != 0;
		return c;
	}
	if (o->kind == PTX_OPND_VEC || o->kind == PTX_OPND_ADDR || o->kind == PTX_OPND_LIST ||
	    o->kind == PTX_OPND_PIPE) {
		int sub = 0;
		if (o->n) {
			c->elems = ptx_alloc(t->m, o->n * sizeof(*c->elems));
			if (!c->elems)
				return NULL;
			for (unsigned i = 0; i < o->n; i++)
				if (o->elems[i] && !(c->elems[i] = topnd(t, o->elems[i], &sub)))
					return NULL;
		}
		c->ival = sub;
		*copy |= sub;
	}
	return c;
}

/* Must a site copy template operand o? */
static int tmarked(const struct ptx_opnd *o)
{
	return o->ival && (o->kind == PTX_OPND_ID || o->kind == PTX_OPND_VEC || o->kind == PTX_OPND_ADDR ||
			   o->kind == PTX_OPND_LIST || o->kind == PTX_OPND_PIPE);
}

/* Append instruction `opcode mods ops` (ops already template operands). */
static struct tstmt *tinsn(struct tb *t, const char *guard, int guard_neg, const char *opcode, unsigned nmods,
			   const char *const *mods, unsigned nops, struct ptx_opnd **ops)
{
	struct tstmt *s = tstmt_new(t, PTX_STMT_INSN);
	const char **md = nmods ? ptx_alloc(t->m, nmods * sizeof(*md)) : NULL;
	struct ptx_opnd **o = nops ? ptx_alloc(t->m, nops * sizeof(*o)) : NULL;
	if (!s || (nmods && !md) || (nops && !o))
		return NULL;
	for (unsigned i = 0; i < nops; i++) {
		if (!ops[i])
			return NULL;
		o[i] = ops[i];
		s->ren |= tmarked(ops[i]);
	}
	if (nmods)
		memcpy(md, mods, nmods * sizeof(*md));
	s->s.insn = (struct ptx_insn){ guard, (unsigned char)(guard && guard_neg), opcode, nmods, md, nops, o };
	return s;
}

/* A renamed register as a template operand. */
static struct ptx_opnd *treg(struct tb *t, const char *name)
{
	struct ptx_opnd *o = ptx_opnd_id(t->m, name);
	unsigned s = o ? name_slot(t, name) : 0;
	if (!o || s == UINT_MAX)
		return NULL;
	o->ival = s;
	return o;
}

/* The value of `es` bytes at context offset `off` (signed: sx) into register
 * dst of dsize bytes, from the word registers. */
static int load_words(struct tb *t, const char *dst, unsigned dsize, long long off, unsigned es, int sx)
{
	struct ptx_module *m = t->m;
	struct ptx_opnd *const *W = t->r->ow;
	unsigned w = (unsigned)(off / 4);
	struct ptx_opnd *ops[4];
	if (w >= PTX_CTX_WORDS || (es == 8 && w + 1 >= PTX_CTX_WORDS))
		return -EINVAL;
	if (!(ops[0] = treg(t, dst)))
		return -ENOMEM;
	if (es == 8) {
		if (dsize == 8) {
			struct ptx_opnd *e[2] = { W[w], W[w + 1] };
			ops[1] = ptx_opnd_vec(m, 2, e);
			return tinsn(t, NULL, 0, "mov", PTX_MODS(".b64"), 2, ops) ? 0 : -ENOMEM;
		}
		/* a 64-bit load into a narrower register: low part */
		ops[1] = W[w];
		return tinsn(t, NULL, 0, "mov", PTX_MODS(".b32"), 2, ops) ? 0 : -ENOMEM;
	}
	struct ptx_opnd *src = W[w];
	if (es != 4) {
		struct ptx_opnd *b[4] = { t->r->ot, W[w], ptx_opnd_int(m, (off % 4) * 8), ptx_opnd_int(m, es * 8) };
		if (!tinsn(t, NULL, 0, "bfe", PTX_MODS(sx ? ".s32" : ".u32"), 4, b))
			return -ENOMEM;
		src = t->r->ot;
	}
	ops[1] = src;
	struct tstmt *s;
	if (dsize == 8)
		s = sx ? tinsn(t, NULL, 0, "cvt", PTX_MODS(".s64", ".s32"), 2, ops)
		       : tinsn(t, NULL, 0, "cvt", PTX_MODS(".u64", ".u32"), 2, ops);
	else if (dsize == 2)
		s = tinsn(t, NULL, 0, "cvt", PTX_MODS(".u16", ".u32"), 2, ops);
	else
		s = tinsn(t, NULL, 0, "mov", PTX_MODS(".b32"), 2, ops);
	return s ? 0 : -ENOMEM;
}

static int is_signed_load(const struct ptx_insn *in)
{
	for (unsigned i = 0; i < in->nmods; i++)
		if (in->mods[i][0] == '.' && in->mods[i][1] == 's' && in->mods[i][2] >= '0' && in->mods[i][2] <= '9')
			return 1;
	return 0;
}

/* A statement of the handler, names marked. */
static int tcopy(struct tb *t, const struct ptx_stmt *s, int top)
{
	struct tstmt *d = tstmt_new(t, s->kind);
	if (!d)
		return -ENOMEM;
	d->s = *s;
	d->s.prev = d->s.next = NULL;
	d->top = (unsigned char)top;
	unsigned n = 0;
	if (s->kind == PTX_STMT_DECL) {
		/* a register declaration is always renamed, `%r<32>` included */
		if (s->decl.space == PTX_SPACE_REG && s->decl.name[0] == '%') {
			if (!(n = slot_add(t, SLOT_REG, s->decl.name, NULL)))
				n = UINT_MAX;
		} else {
			n = name_slot(t, s->decl.name);
		}
		d->name = n;
	} else if (s->kind == PTX_STMT_LABEL) {
		d->name = n = name_slot(t, s->text);
	} else if (s->kind == PTX_STMT_INSN) {
		if (s->insn.guard)
			d->guard = n = name_slot(t, s->insn.guard);
		if (n != UINT_MAX && s->insn.nops) {
			struct ptx_opnd **ops = ptx_alloc(t->m, s->insn.nops * sizeof(*ops));
			if (!ops)
				return -ENOMEM;
			for (unsigned i = 0; i < s->insn.nops; i++) {
				int copy = 0;
				if (!(ops[i] = topnd(t, s->insn.ops[i], &copy)))
					return -ENOMEM;
				d->ren |= (unsigned char)copy;
			}
			d->s.insn.ops = ops;
		}
	}
	return n == UINT_MAX ? -ENOMEM : 0;
}

/* Count the definitions of registers in o, a destination operand. */
static int count_defs(struct tb *t, const struct ptx_opnd *o)
{
	if (!o)
		return 0;
	if (o->kind == PTX_OPND_ID && o->text) {
		struct hent *e = hfind(t, o->text, NAME_DEFS);
		if (!e)
			return -ENOMEM;
		e->val++;
		return 0;
	}
	if (o->kind == PTX_OPND_VEC || o->kind == PTX_OPND_LIST || o->kind == PTX_OPND_PIPE)
		for (unsigned i = 0; i < o->n; i++)
			if (count_defs(t, o->elems[i]))
				return -ENOMEM;
	return 0;
}

/* Context loads whose register can simply be the word's register: a 32-bit
 * word into a 32-bit register (`mov.b32 R, W` otherwise) that nothing else
 * in the handler writes. Its mentions then name the word (which only the
 * site's prelude writes) and the move goes: ptxas would propagate the copy
 * anyway, and a handler copied to every memory instruction costs less text
 * to make, emit and JIT. Not with nested register declarations (a name
 * could mean two registers) or operands kept as expressions. */
static int find_aliases(struct tb *t, struct ptx_func *fn)
{
	struct ptx_an *a = t->a;
	int depth = 0;
	for (struct ptx_stmt *s = fn->head; s; s = s->next) {
		depth += s->kind == PTX_STMT_OPEN ? 1 : s->kind == PTX_STMT_CLOSE ? -1 : 0;
		if (s->kind == PTX_STMT_DECL && s->decl.space == PTX_SPACE_REG && depth)
			return 0;
		if (s->kind != PTX_STMT_INSN)
			continue;
		for (unsigned i = 0; i < s->insn.nops; i++)
			if (s->insn.ops[i] && s->insn.ops[i]->kind == PTX_OPND_EXPR)
				return 0;
		if (s->insn.nops && s->insn.ops[0]->kind != PTX_OPND_ADDR && count_defs(t, s->insn.ops[0]))
			return -ENOMEM;
	}
	for (struct ptx_stmt *s = fn->head; s; s = s->next) {
		struct ptx_opinfo oi;
		struct ctxreg *c;
		if (s->kind != PTX_STMT_INSN || !(c = ptx_an_ctx_load(a, &s->insn, &oi)) || oi.elem_size != 4)
			continue;
		long long off = c->delta + s->insn.ops[1]->off;
		const struct ptx_opnd *dst = s->insn.ops[0];
		unsigned n = dst->kind == PTX_OPND_VEC ? dst->n : 1;
		for (unsigned i = 0; i < n; i++) {
			const struct ptx_opnd *e = dst->kind == PTX_OPND_VEC ? dst->elems[i] : dst;
			long long eo = off + 4 * (long long)i;
			if (!ptx_an_is_id(e) || e->neg || eo % 4 || eo < 0 || eo / 4 >= PTX_CTX_WORDS)
				continue;
			struct regdecl *rd = ptx_an_regdecl(a->regs, a->nregs, e->text);
			struct hent *d = hfind(t, e->text, NAME_DEFS);
			if (!d)
				return -ENOMEM;
			if (!rd || rd->size != 4 || d->val != 1)
				continue;
			struct hent *al = hfind(t, e->text, NAME_ALIAS);
			if (!al)
				return -ENOMEM;
			al->val = (unsigned)(eo / 4) + 1;
			t->nalias++;
		}
	}
	return 0;
}

/* Template operand o with its register slots replaced by their fixed
 * names; returns whether a site must still copy it. */
static int fix_opnd(struct tb *t, struct ptx_opnd *o)
{
	if (!tmarked(o))
		return 0;
	if (o->kind == PTX_OPND_ID) {
		if (o->ival > 0 && t->slots[o->ival - 1].kind == SLOT_REG) {
			o->text = t->slots[o->ival - 1].fixed;
			o->ival = 0;
		}
		return o->ival != 0;
	}
	int sub = 0;
	for (unsigned i = 0; i < o->n; i++)
		if (o->elems[i])
			sub |= fix_opnd(t, o->elems[i]);
	o->ival = sub;
	return sub;
}

/* Registers get their names now ("%<P>_h_" + name), once for all sites. */
static int fix_regs(struct tb *t)
{
	struct ptx_module *m = t->m;
	char pfx[64];
	int pl = snprintf(pfx, sizeof(pfx), "%%%s_h_", m->fresh_prefix);
	if (pl <= 0 || (size_t)pl >= sizeof(pfx))
		return -ENAMETOOLONG;
	for (size_t i = 0; i < t->nslots; i++) {
		struct slot *sl = &t->slots[i];
		if (sl->kind == SLOT_REG && !(sl->fixed = ptx_concat(m, pfx, (size_t)pl, sl->suffix, sl->suffix_len)))
			return -ENOMEM;
	}
	for (size_t i = 0; i < t->n; i++) {
		struct tstmt *ts = &t->st[i];
		if (ts->name && t->slots[ts->name - 1].kind == SLOT_REG) {
			if (ts->s.kind == PTX_STMT_DECL)
				ts->s.decl.name = t->slots[ts->name - 1].fixed;
			else
				ts->s.text = t->slots[ts->name - 1].fixed;
			ts->name = 0;
		}
		if (ts->s.kind != PTX_STMT_INSN)
			continue;
		if (ts->guard && t->slots[ts->guard - 1].kind == SLOT_REG) {
			ts->s.insn.guard = t->slots[ts->guard - 1].fixed;
			ts->guard = 0;
		}
		int ren = 0;
		for (unsigned k = 0; k < ts->s.insn.nops; k++)
			ren |= fix_opnd(t, ts->s.insn.ops[k]);
		ts->ren = (unsigned char)ren;
	}
	return 0;
}

static int tmpl_build(struct ptx_module *m, struct ptx_handler *h, const struct ptx_site_regs *r)
{
	struct ptx_func *fn = h->fn;
	struct ptx_an a = *h->an; /* arrays in the arena: read only here */
	struct tb t = { .m = m, .a = &a, .r = r };
	int err = -ENOMEM;
	/* labels; .local depots first, in order (a site creates them in
	 * this order, before anything else) */
	for (struct ptx_stmt *s = fn->head; s; s = s->next) {
		if (s->kind == PTX_STMT_LABEL) {
			const char **n = realloc(t.labels, (t.nlabels + 1) * sizeof(*n));
			if (!n)
				goto out;
			t.labels = n;
			t.labels[t.nlabels++] = s->text;
		} else if (s->kind == PTX_STMT_DECL && s->decl.space == PTX_SPACE_LOCAL) {
			if (!slot_add(&t, SLOT_LOCAL, s->decl.name, &s->decl))
				goto out;
		}
	}
	if (!(t.end = slot_add(&t, SLOT_END, NULL, NULL)))
		goto out;
	if ((err = find_aliases(&t, fn)))
		goto out;
	err = -ENOMEM;
	int depth = 0;
	for (struct ptx_stmt *s = fn->head; s; s = s->next) {
		depth += s->kind == PTX_STMT_OPEN ? 1 : s->kind == PTX_STMT_CLOSE ? -1 : 0;
		if (s->kind == PTX_STMT_DECL) {
			if (s->decl.space == PTX_SPACE_LOCAL)
				continue;
			/* top-level declarations go to the site's head, nested ones stay */
			if ((err = tcopy(&t, s, !depth)))
				goto out;
			continue;
		}
		if (s->kind == PTX_STMT_VERBATIM && !strncmp(s->text, ".loc", 4))
			continue;
		if (s->kind != PTX_STMT_INSN) {
			if ((err = tcopy(&t, s, 0)))
				goto out;
			continue;
		}
		const struct ptx_insn *in = &s->insn;
		const char *d;
		long long delta;
		struct ptx_opinfo oi;
		struct ctxreg *c;
		if (ptx_an_param_load(&a, in) || ptx_an_ctx_copy(&a, in, &d, &delta) || ptx_an_ret_store(&a, in))
			continue;
		err = -ENOMEM;
		if (!strcmp(in->opcode, "ret")) {
			/* ret → bra END (guard kept) */
			unsigned g = in->guard ? name_slot(&t, in->guard) : 0;
			struct ptx_opnd *o = ptx_opnd_id(m, "");
			if (g == UINT_MAX || !o)
				goto out;
			o->ival = t.end;
			struct tstmt *b = tinsn(&t, in->guard, in->guard_neg, "bra", 0, NULL, 1, &o);
			if (!b)
				goto out;
			b->guard = g;
			continue;
		}
		if ((c = ptx_an_ctx_load(&a, in, &oi))) {
			long long off = c->delta + in->ops[1]->off;
			const struct ptx_opnd *dst = in->ops[0];
			unsigned n = dst->kind == PTX_OPND_VEC ? dst->n : 1;
			for (unsigned i = 0; i < n; i++) {
				const struct ptx_opnd *e = dst->kind == PTX_OPND_VEC ? dst->elems[i] : dst;
				if (!e || e->kind == PTX_OPND_SINK)
					continue;
				if (!ptx_an_is_id(e)) {
					err = -EINVAL;
					goto out;
				}
				struct regdecl *rd = ptx_an_regdecl(a.regs, a.nregs, e->text);
				struct hent *al = t.nalias ? hfind(&t, e->text, NAME_ALIAS) : NULL;
				if (t.nalias && !al)
					goto out;
				if (al && al->val)
					continue; /* the register is the word itself */
				if ((err = load_words(&t, e->text, rd ? rd->size : oi.elem_size,
						      off + (long long)i * oi.elem_size, oi.elem_size,
						      is_signed_load(in))))
					goto out;
			}
			continue;
		}
		if ((err = tcopy(&t, s, 0)))
			goto out;
	}
	if ((err = fix_regs(&t)))
		goto out;
	err = -ENOMEM;
	struct ptx_inl_tmpl *tp = ptx_alloc(m, sizeof(*tp));
	struct tstmt *st = t.n ? ptx_alloc_raw(m, t.n * sizeof(*st)) : NULL;
	struct slot *sl = ptx_alloc_raw(m, t.nslots * sizeof(*sl));
	if (!tp || (t.n && !st) || !sl)
		goto out;
	if (t.n)
		memcpy(st, t.st, t.n * sizeof(*st));
	memcpy(sl, t.slots, t.nslots * sizeof(*sl));
	*tp = (struct ptx_inl_tmpl){ st, t.n, sl, t.nslots };
	h->tmpl = tp;
	err = 0;
out:
	free(t.labels);
	free(t.htab);
	free(t.st);
	free(t.slots);
	if (err == -EINVAL)
		snprintf(m->err, sizeof(m->err), "internal error: inlining %s", fn->name);
	return err;
}

/* A site's names: slot i is names[i]; as an operand, the one object
 * ops[i] (made on first use) for every mention in the site. */
struct site_names {
	const char **names;
	struct ptx_opnd **ops;
};

/* A site's copy of template operand o. */
static struct ptx_opnd *clone_opnd(struct ptx_module *m, const struct ptx_opnd *o, struct site_names *sn)
{
	if (!tmarked(o))
		return (struct ptx_opnd *)o;
	if (o->kind == PTX_OPND_ID && o->ival > 0 && !o->neg) {
		struct ptx_opnd **slot = &sn->ops[o->ival - 1];
		if (!*slot)
			*slot = ptx_opnd_id(m, sn->names[o->ival - 1]);
		return *slot;
	}
	struct ptx_opnd *c = ptx_alloc_raw(m, sizeof(*c));
	if (!c)
		return NULL;
	*c = *o;
	c->ival = 0;
	if (o->kind == PTX_OPND_ID) {
		if (o->ival > 0)
			c->text = sn->names[o->ival - 1];
		return c;
	}
	c->elems = ptx_alloc_raw(m, o->n * sizeof(*c->elems));
	if (!c->elems)
		return NULL;
	for (unsigned i = 0; i < o->n; i++)
		if (!(c->elems[i] = o->elems[i] ? clone_opnd(m, o->elems[i], sn) : NULL) && o->elems[i])
			return NULL;
	return c;
}

int ptx_handler_inline(struct ptx_inliner *in, struct ptx_func *site_fn, struct ptx_handler *h, struct ptx_chain *decls,
		       struct ptx_chain *body, const struct ptx_site_regs *r, const char *end)
{
	struct ptx_module *m = in->m;
	unsigned id = in->nr_inlined++;
	int err;
	if (!h->tmpl && (err = tmpl_build(m, h, r)))
		return gx_err(err);
	const struct ptx_inl_tmpl *tp = h->tmpl;
	/* the site's names: "$<P>_h<id>_" + label (made when needed) */
	char pfx[64];
	int pl = 0;
	const char **names = ptx_alloc_raw(m, tp->nslots * sizeof(*names));
	struct site_names sn = { names, ptx_alloc(m, tp->nslots * sizeof(*sn.ops)) };
	if (!names || !sn.ops)
		return gx_err(-ENOMEM);
	for (size_t i = 0; i < tp->nslots; i++) {
		const struct slot *s = &tp->slots[i];
		switch (s->kind) {
		case SLOT_REG:
			names[i] = s->fixed;
			break;
		case SLOT_LABEL:
			if (!pl && ((pl = snprintf(pfx, sizeof(pfx), "$%s_h%u_", m->fresh_prefix, id)) <= 0 ||
				    (size_t)pl >= sizeof(pfx)))
				return gx_err(-ENAMETOOLONG);
			names[i] = ptx_concat(m, pfx, (size_t)pl, s->suffix, s->suffix_len);
			break;
		case SLOT_LOCAL:
			names[i] = ptx_fn_local(in->locals, m, site_fn, h, s->decl);
			break;
		case SLOT_END:
			names[i] = end;
			break;
		}
		if (!names[i])
			return gx_err(-ENOMEM);
	}
	for (size_t i = 0; i < tp->n; i++) {
		const struct tstmt *t = &tp->st[i];
		struct ptx_stmt *d = ptx_alloc_raw(m, sizeof(*d));
		if (!d)
			return gx_err(-ENOMEM);
		*d = t->s;
		ptx_chain_link(t->top ? decls : body, d);
		if (d->kind == PTX_STMT_DECL) {
			if (t->name)
				d->decl.name = names[t->name - 1];
			continue;
		}
		if (d->kind == PTX_STMT_LABEL) {
			if (t->name)
				d->text = names[t->name - 1];
			continue;
		}
		if (d->kind != PTX_STMT_INSN)
			continue;
		if (t->guard)
			d->insn.guard = names[t->guard - 1];
		if (!t->ren)
			continue;
		struct ptx_opnd **ops = ptx_alloc_raw(m, d->insn.nops * sizeof(*ops));
		if (!ops)
			return gx_err(-ENOMEM);
		for (unsigned k = 0; k < d->insn.nops; k++)
			if (!(ops[k] = clone_opnd(m, t->s.insn.ops[k], &sn)))
				return gx_err(-ENOMEM);
		d->insn.ops = ops;
	}
	return 0;
}
