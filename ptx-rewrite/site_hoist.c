/* site_hoist.c — a site's invariant values computed at its function's
 * start (GX_PTX_F_HOIST_SITE, issue 40).
 *
 * Why: on a kernel of many short blocks, the cost of an exit site is the
 * latency of the leader's path after the kernel's last store — special
 * registers, the runtime block's words from the constant bank, the shard
 * and bounds arithmetic that make a counter's or record slot's address —
 * not its writes (GPU runs 113-115, bench/probe_ab: the same site with its
 * writes predicated off costs the same). Hoisting the constant-bank loads
 * alone gained nothing: ptxas sinks a constant load back to its use. What
 * it cannot sink is a value made from registers read once at the start
 * (%smid and %warpid are volatile, GX_PTX_F_HOIST_WARP), so the whole
 * chain moves: each instruction of the site whose operands are all
 * invariant — immediates, module symbols, constant-bank loads, the
 * start registers, per-thread constant special registers, and values
 * already moved — goes to the function's start into a fresh register,
 * where its latency overlaps the kernel's first loads.
 *
 * Only what is safe to run on every thread at the start, unconditionally:
 * pure ALU instructions without a guard, carry or division (integer
 * division is a long sequence every thread would pay), and `ld.const` from
 * a symbol. Only registers the site's own scope declares and defines once
 * (a register with one definition in the handler's SSA-shaped code is
 * dominated by it wherever it is read). A value moved by an earlier site of
 * the function with the same instruction is reused. A kernel whose measured
 * registers (opts->persist_regs) leave less headroom under the register cap
 * than the values kept live across it is left as it was: a spill would
 * cost more than the latency saved. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ptx-rewrite/gx_ptx.h"
#include "ptx-rewrite/passlib_internal.h"
#include "ptx-rewrite/site_parts_internal.h"

/* A register the site's scope declares (or names). */
struct hreg {
	const char *name;
	const char *type; /* its declaration's type, NULL: not declared at the site's top level */
	unsigned defs;
	const struct ptx_insn *def; /* its first definition */
	bool same_defs;		    /* every definition the same instruction (a value
				     * the uniform prefix and the handler both compute) */
	const char *to;		    /* the start register it became */
	bool shadowed;		    /* also declared in a nested scope */
	bool used;		    /* read by the site's remaining code */
	bool needed;		    /* for an address or a branch of the code that stays */
};

struct hoist {
	struct ptx_module *m;
	struct ptx_func *fn;
	struct hreg *r;
	size_t n, cap;
	const struct ptx_stmt **decls; /* the site scope's register declarations */
	size_t ndecls;
	const char *start[3]; /* the start registers: %<P>_sm, _hw, _wi */
};

static int name_in_decl(const struct ptx_decl *d, const char *name)
{
	size_t l = strlen(d->name);
	if (strncmp(name, d->name, l))
		return 0;
	if (!d->range)
		return name[l] == 0;
	const char *p = name + l;
	if (!*p || (p[0] == '0' && p[1]))
		return 0;
	char *end;
	unsigned long v = strtoul(p, &end, 10);
	return !*end && v < d->range;
}

static struct hreg *reg_get(struct hoist *h, const char *name)
{
	for (size_t i = 0; i < h->n; i++)
		if (!strcmp(h->r[i].name, name))
			return &h->r[i];
	if (h->n == h->cap) {
		size_t nc = h->cap ? 2 * h->cap : 64;
		struct hreg *nr = realloc(h->r, nc * sizeof(*nr));
		if (!nr)
			return NULL;
		h->r = nr;
		h->cap = nc;
	}
	struct hreg *r = &h->r[h->n++];
	*r = (struct hreg){ .name = name };
	for (size_t i = 0; i < h->ndecls; i++)
		if (name_in_decl(&h->decls[i]->decl, name))
			r->type = h->decls[i]->decl.type;
	return r;
}

static struct hreg *reg_find(struct hoist *h, const char *name)
{
	for (size_t i = 0; i < h->n; i++)
		if (!strcmp(h->r[i].name, name))
			return &h->r[i];
	return NULL;
}

static bool same_value(const struct ptx_insn *a, const struct ptx_insn *b);

/* Count the definitions in destination operand o of instruction in. */
static int count_defs(struct hoist *h, const struct ptx_insn *in, const struct ptx_opnd *o, int depth)
{
	if (!o)
		return 0;
	if (o->kind == PTX_OPND_ID && o->text && o->text[0] == '%') {
		struct hreg *r = reg_get(h, o->text);
		if (!r)
			return -ENOMEM;
		if (!r->defs++) {
			r->def = in;
			r->same_defs = true;
		} else if (o != in->ops[0] || !same_value(r->def, in)) {
			r->same_defs = false;
		}
		if (depth != 1 || in->guard)
			r->same_defs = false;
		return 0;
	}
	if (o->kind == PTX_OPND_VEC || o->kind == PTX_OPND_LIST || o->kind == PTX_OPND_PIPE)
		for (unsigned i = 0; i < o->n; i++)
			if (count_defs(h, in, o->elems[i], depth))
				return -ENOMEM;
	return 0;
}

/* Special registers with one value per thread for the whole kernel. Not
 * %smid / %warpid (volatile: the start registers stand for them), clocks,
 * timers or counters. */
static bool const_sreg(const char *t)
{
	static const char *const pre[] = {
		"%tid.", "%ntid.", "%ctaid.", "%nctaid.", "%laneid", "%lanemask_", "%gridid"
	};
	for (size_t i = 0; i < GX_ARRAY_SIZE(pre); i++)
		if (!strncmp(t, pre[i], strlen(pre[i])))
			return true;
	return false;
}

static bool is_start_reg(const struct hoist *h, const char *t)
{
	for (size_t i = 0; i < GX_ARRAY_SIZE(h->start); i++)
		if (h->start[i] && !strcmp(h->start[i], t))
			return true;
	return false;
}

/* Is `name` a variable of the module (declared before every function
 * that reads it, so before the start code too)? Not a function's own
 * .local or .shared buffer: declared further down its body. */
static bool module_var(const struct hoist *h, const char *name)
{
	if (ptx_devrt_block(name) >= 0)
		return true; /* declared at the module's top once linked */
	ptx_for_each_item(h->m, it) if (it->kind == PTX_ITEM_DECL && it->decl.name &&
					name_in_decl(&it->decl, name)) return true;
	return false;
}

/* Is source operand o invariant (a value the function's start has)? */
static bool invariant_src(struct hoist *h, const struct ptx_opnd *o, bool in_ld)
{
	if (!o || o->neg)
		return false;
	switch (o->kind) {
	case PTX_OPND_INT:
	case PTX_OPND_FLOAT:
		return !in_ld;
	case PTX_OPND_ID:
		if (!o->text)
			return false;
		if (o->text[0] == '%') {
			if (in_ld)
				return false;
			struct hreg *r = reg_find(h, o->text);
			return (r && r->to) || is_start_reg(h, o->text) || const_sreg(o->text);
		}
		/* a module variable's address */
		return module_var(h, o->text);
	case PTX_OPND_ADDR:
		/* [symbol+off] of a constant-bank load */
		return in_ld && o->n == 1 && o->elems[0] && o->elems[0]->kind == PTX_OPND_ID && o->elems[0]->text &&
		       module_var(h, o->elems[0]->text);
	default:
		return false;
	}
}

/* Opcodes safe and cheap on every thread at the start: pure, no implicit
 * state (carry), no division. */
static bool pure_opcode(const struct ptx_insn *in)
{
	static const char *const ok[] = { "mov",  "add", "sub", "mul",	"mad",	"mul24", "mad24", "shl",
					  "shr",  "and", "or",	"xor",	"not",	"cnot",	 "neg",	  "abs",
					  "min",  "max", "cvt", "cvta", "setp", "selp",	 "popc",  "clz",
					  "brev", "bfe", "bfi", "prmt", "ld" };
	bool found = false;
	for (size_t i = 0; i < GX_ARRAY_SIZE(ok) && !found; i++)
		found = !strcmp(in->opcode, ok[i]);
	if (!found)
		return false;
	for (unsigned i = 0; i < in->nmods; i++)
		if (!strcmp(in->mods[i], ".cc") || !strcmp(in->mods[i], ".volatile") ||
		    !strncmp(in->mods[i], ".sat", 4))
			return false;
	if (!strcmp(in->opcode, "ld"))
		return ptx_insn_has_mod(in, ".const") && in->nops == 2;
	if (!strcmp(in->opcode, "cvta"))
		return !ptx_insn_has_mod(in, ".local") &&
		       !ptx_insn_has_mod(in, ".shared"); /* per-thread/per-block windows: fine, but keep it to global */
	return true;
}

/* The site-scope register instruction s defines if it can move; NULL if not. */
static struct hreg *movable(struct hoist *h, const struct ptx_stmt *s)
{
	const struct ptx_insn *in = &s->insn;
	if (in->guard || in->nops < 2 || !pure_opcode(in))
		return NULL;
	const struct ptx_opnd *d = in->ops[0];
	if (!d || d->kind != PTX_OPND_ID || d->neg || !d->text || d->text[0] != '%')
		return NULL;
	struct hreg *r = reg_find(h, d->text);
	if (!r || !r->type || r->shadowed || !r->same_defs || r->to)
		return NULL;
	bool ld = !strcmp(in->opcode, "ld");
	for (unsigned i = 1; i < in->nops; i++)
		if (!invariant_src(h, in->ops[i], ld))
			return NULL;
	return r;
}

/* o with its moved registers renamed: o itself when none is in it, else a
 * copy (statements copied from a handler share its operand objects). */
static struct ptx_opnd *rename_opnd(struct hoist *h, struct ptx_opnd *o, int *err)
{
	if (!o)
		return o;
	if (o->kind == PTX_OPND_ID) {
		struct hreg *r = o->text && o->text[0] == '%' ? reg_find(h, o->text) : NULL;
		if (!r || !r->to)
			return o;
		struct ptx_opnd *c = ptx_opnd_id(h->m, r->to);
		if (!c) {
			*err = -ENOMEM;
			return o;
		}
		c->neg = o->neg;
		return c;
	}
	if (!o->n)
		return o;
	struct ptx_opnd **el = NULL;
	for (unsigned i = 0; i < o->n; i++) {
		struct ptx_opnd *e = rename_opnd(h, o->elems[i], err);
		if (e == o->elems[i] || *err)
			continue;
		if (!el) {
			if (!(el = ptx_alloc(h->m, o->n * sizeof(*el)))) {
				*err = -ENOMEM;
				return o;
			}
			memcpy(el, o->elems, o->n * sizeof(*el));
		}
		el[i] = e;
	}
	if (!el)
		return o;
	struct ptx_opnd *c = ptx_alloc(h->m, sizeof(*c));
	if (!c) {
		*err = -ENOMEM;
		return o;
	}
	*c = *o;
	c->elems = el;
	return c;
}

/* s's operands (from `from` on) and guard renamed in place (a fresh
 * operand array when any changes). */
static int rename_insn(struct hoist *h, struct ptx_insn *in, unsigned from)
{
	int err = 0;
	struct ptx_opnd **ops = NULL;
	for (unsigned i = from; i < in->nops; i++) {
		struct ptx_opnd *o = rename_opnd(h, in->ops[i], &err);
		if (err)
			return err;
		if (o == in->ops[i])
			continue;
		if (!ops) {
			if (!(ops = ptx_alloc(h->m, in->nops * sizeof(*ops))))
				return -ENOMEM;
			memcpy(ops, in->ops, in->nops * sizeof(*ops));
		}
		ops[i] = o;
	}
	if (ops)
		in->ops = ops;
	if (in->guard) {
		struct hreg *r = reg_find(h, in->guard);
		if (r && r->to)
			in->guard = r->to;
	}
	return 0;
}

static bool opnd_eq(const struct ptx_opnd *a, const struct ptx_opnd *b)
{
	if (!a || !b)
		return a == b;
	if (a->kind != b->kind || a->neg != b->neg || a->off != b->off || a->n != b->n)
		return false;
	if ((a->text || b->text) && (!a->text || !b->text || strcmp(a->text, b->text)))
		return false;
	for (unsigned i = 0; i < a->n; i++)
		if (!opnd_eq(a->elems[i], b->elems[i]))
			return false;
	return true;
}

/* Does a (moved, its destination a start value) compute what b does (its
 * sources renamed already)? */
static bool same_value(const struct ptx_insn *a, const struct ptx_insn *b)
{
	if (a->guard || a->nops != b->nops || a->nmods != b->nmods || strcmp(a->opcode, b->opcode))
		return false;
	for (unsigned i = 0; i < a->nmods; i++)
		if (strcmp(a->mods[i], b->mods[i]))
			return false;
	for (unsigned i = 1; i < a->nops; i++)
		if (!opnd_eq(a->ops[i], b->ops[i]))
			return false;
	return true;
}

/* The start register of a moved instruction from `from` on (up to the
 * first statement not of the start code) computing what `in` does, or
 * NULL. Only the moved ones (named prefix...): the warp index's start code
 * writes its register several times. */
static const char *find_moved(const struct ptx_stmt *from, const struct ptx_insn *in, const char *prefix, size_t lp)
{
	for (const struct ptx_stmt *s = from; s && s->line == 0 && s->col == PTX_COL_START_REG; s = s->next)
		if (s->kind == PTX_STMT_INSN && s->insn.nops && s->insn.ops[0] && s->insn.ops[0]->text &&
		    !strncmp(s->insn.ops[0]->text, prefix, lp) && same_value(&s->insn, in))
			return s->insn.ops[0]->text;
	return NULL;
}

/* Registers (32-bit units) the kernel may add under its cap without a
 * spill: the cap (ptx_kernel_cap_regs: the measured count rounded up to 8,
 * at least 32, or the kernel's own .maxnreg) less the measured count; -1
 * when nothing was measured (no cap: ptxas is free). */
static int headroom(const struct ptx_func *fn, const struct gx_ptx_rewrite_opts *o)
{
	unsigned regs = 0;
	for (size_t i = 0; i < o->nr_persist_regs; i++)
		if (o->persist_regs[i].name && !strcmp(o->persist_regs[i].name, fn->name))
			regs = o->persist_regs[i].regs;
	if (!regs)
		return -1;
	unsigned cap = (regs + 7) / 8 * 8;
	if (cap < 32)
		cap = 32;
	for (unsigned i = 0; i < fn->nperf; i++)
		if (!strcmp(fn->perf[i].name, ".maxnreg") && fn->perf[i].nvals && fn->perf[i].vals[0] < cap)
			cap = fn->perf[i].vals[0];
	return cap > regs ? (int)(cap - regs) : 0;
}

static unsigned reg_units(const char *type)
{
	unsigned sz = type ? ptx_type_size(type) : 0;
	return sz > 4 ? (sz + 3) / 4 : 1; /* a predicate or a 32-bit value: one */
}

/* Plan: which of the chain's instructions move (in order: a value moves
 * only after those it is made from). Returns how many, or -ENOMEM. */
static int plan(struct hoist *h, struct ptx_chain *c)
{
	int depth = 0, n = 0;
	/* the site scope's declarations (depth 1), and names nested scopes declare again */
	for (struct ptx_stmt *s = c->head; s; s = s == c->tail ? NULL : s->next) {
		depth += s->kind == PTX_STMT_OPEN ? 1 : s->kind == PTX_STMT_CLOSE ? -1 : 0;
		if (s->kind != PTX_STMT_DECL || s->decl.space != PTX_SPACE_REG || depth != 1)
			continue;
		const struct ptx_stmt **nd = realloc(h->decls, (h->ndecls + 1) * sizeof(*nd));
		if (!nd)
			return -ENOMEM;
		h->decls = nd;
		h->decls[h->ndecls++] = s;
	}
	depth = 0;
	for (struct ptx_stmt *s = c->head; s; s = s == c->tail ? NULL : s->next) {
		depth += s->kind == PTX_STMT_OPEN ? 1 : s->kind == PTX_STMT_CLOSE ? -1 : 0;
		if (s->kind == PTX_STMT_DECL && s->decl.space == PTX_SPACE_REG && depth > 1) {
			/* a nested declaration hides a site-scope name inside it */
			for (size_t i = 0; i < h->n; i++)
				for (size_t j = 0; j < h->ndecls; j++)
					if (name_in_decl(&s->decl, h->r[i].name) &&
					    name_in_decl(&h->decls[j]->decl, h->r[i].name))
						h->r[i].shadowed = true;
			for (size_t j = 0; j < h->ndecls; j++)
				if (!h->decls[j]->decl.range && name_in_decl(&s->decl, h->decls[j]->decl.name)) {
					struct hreg *r = reg_get(h, h->decls[j]->decl.name);
					if (!r)
						return -ENOMEM;
					r->shadowed = true;
				}
		}
		if (s->kind == PTX_STMT_INSN && s->insn.nops && count_defs(h, &s->insn, s->insn.ops[0], depth))
			return -ENOMEM;
	}
	/* a name declared again in a nested scope after its uses were
	 * counted: checked once more against every nested declaration */
	depth = 0;
	for (struct ptx_stmt *s = c->head; s; s = s == c->tail ? NULL : s->next) {
		depth += s->kind == PTX_STMT_OPEN ? 1 : s->kind == PTX_STMT_CLOSE ? -1 : 0;
		if (s->kind == PTX_STMT_DECL && s->decl.space == PTX_SPACE_REG && depth > 1)
			for (size_t i = 0; i < h->n; i++)
				if (name_in_decl(&s->decl, h->r[i].name))
					h->r[i].shadowed = true;
	}
	depth = 0;
	for (struct ptx_stmt *s = c->head; s; s = s == c->tail ? NULL : s->next) {
		depth += s->kind == PTX_STMT_OPEN ? 1 : s->kind == PTX_STMT_CLOSE ? -1 : 0;
		if (s->kind != PTX_STMT_INSN || depth != 1)
			continue;
		struct hreg *r = movable(h, s);
		if (r) {
			r->to = r->name; /* planned: renamed when it moves */
			n++;
		}
	}
	return n;
}

/* The planned register instruction s defines (plan(): its `to` is its own
 * name until it moves), or NULL. */
static struct hreg *planned_def(struct hoist *h, const struct ptx_stmt *s)
{
	const struct ptx_opnd *d = s->insn.nops ? s->insn.ops[0] : NULL;
	if (s->insn.guard || !d || d->kind != PTX_OPND_ID || !d->text)
		return NULL;
	struct hreg *r = reg_find(h, d->text);
	return r && r->to && r->same_defs ? r : NULL;
}

static void mark_opnd(struct hoist *h, const struct ptx_opnd *o)
{
	if (!o)
		return;
	if (o->kind == PTX_OPND_ID && o->text && o->text[0] == '%') {
		struct hreg *r = reg_find(h, o->text);
		if (r && r->to)
			r->used = true;
	}
	for (unsigned i = 0; i < o->n; i++)
		mark_opnd(h, o->elems[i]);
}

/* The planned values an instruction that stays reads. */
static void mark_uses(struct hoist *h, const struct ptx_insn *in)
{
	for (unsigned i = 0; i < in->nops; i++)
		mark_opnd(h, in->ops[i]);
	if (in->guard)
		mark_opnd(h, &(struct ptx_opnd){ .kind = PTX_OPND_ID, .text = in->guard });
}

/* 32-bit units of the planned values the code that stays reads. */
static unsigned live_units(struct hoist *h, struct ptx_chain *c)
{
	for (size_t i = 0; i < h->n; i++)
		h->r[i].used = false;
	int depth = 0;
	for (struct ptx_stmt *s = c->head; s; s = s == c->tail ? NULL : s->next) {
		depth += s->kind == PTX_STMT_OPEN ? 1 : s->kind == PTX_STMT_CLOSE ? -1 : 0;
		if (s->kind == PTX_STMT_INSN && !(depth == 1 && planned_def(h, s)))
			mark_uses(h, &s->insn);
	}
	unsigned live = 0;
	for (size_t i = 0; i < h->n; i++)
		if (h->r[i].to && h->r[i].used)
			live += reg_units(h->r[i].type);
	return live;
}

static void need_opnd(struct hoist *h, const struct ptx_opnd *o, bool *more)
{
	if (!o)
		return;
	if (o->kind == PTX_OPND_ID && o->text && o->text[0] == '%') {
		struct hreg *r = reg_find(h, o->text);
		if (r && !r->needed)
			r->needed = *more = true;
	}
	for (unsigned i = 0; i < o->n; i++)
		need_opnd(h, o->elems[i], more);
}

static void need_guard(struct hoist *h, const struct ptx_insn *in, bool *more)
{
	if (in->guard)
		need_opnd(h, &(struct ptx_opnd){ .kind = PTX_OPND_ID, .text = in->guard }, more);
}

/* The plan narrowed to what the site's addresses and branch predicates are
 * made from: a record's data words are then made at the exit, from values
 * that moved (kernelretsnoop keeps seven 64-bit words: 14 registers across
 * the whole kernel, more than a kernel near its cap has room for). */
static void plan_narrow(struct hoist *h, struct ptx_chain *c)
{
	bool more = false;
	for (struct ptx_stmt *s = c->head; s; s = s == c->tail ? NULL : s->next) {
		if (s->kind != PTX_STMT_INSN)
			continue;
		need_guard(h, &s->insn, &more);
		for (unsigned i = 0; i < s->insn.nops; i++)
			if (s->insn.ops[i] && s->insn.ops[i]->kind == PTX_OPND_ADDR)
				need_opnd(h, s->insn.ops[i], &more);
	}
	/* back through whatever defines a needed register (a name a nested
	 * scope declares again counts as one: more than needed, never less) */
	while (more) {
		more = false;
		for (struct ptx_stmt *s = c->head; s; s = s == c->tail ? NULL : s->next) {
			const struct ptx_opnd *d = s->kind == PTX_STMT_INSN && s->insn.nops ? s->insn.ops[0] : NULL;
			struct hreg *r = d && d->kind == PTX_OPND_ID && d->text ? reg_find(h, d->text) : NULL;
			if (!r || !r->needed)
				continue;
			need_guard(h, &s->insn, &more);
			for (unsigned i = 1; i < s->insn.nops; i++)
				need_opnd(h, s->insn.ops[i], &more);
		}
	}
	for (size_t i = 0; i < h->n; i++)
		if (h->r[i].to && !h->r[i].needed)
			h->r[i].to = NULL;
}

int ptx_site_hoist(struct ptx_module *m, struct ptx_func *fn, struct ptx_chain *c, const struct gx_ptx_rewrite_opts *o,
		   unsigned *moved)
{
	*moved = 0;
	if (!(o->flags & GX_PTX_F_HOIST_SITE) || o->persistent || !c->head || c->head->kind != PTX_STMT_OPEN)
		return 0; /* the persistent transform re-reads %ctaid per unit: nothing per block moves */
	struct hoist h = { .m = m, .fn = fn };
	h.start[0] = ptx_sprintf(m, "%%%s_sm", m->fresh_prefix);
	h.start[1] = ptx_sprintf(m, "%%%s_hw", m->fresh_prefix);
	h.start[2] = ptx_sprintf(m, "%%%s_wi", m->fresh_prefix);
	const char *prefix = ptx_sprintf(m, "%%%s_iv", m->fresh_prefix);
	int err = !h.start[0] || !h.start[1] || !h.start[2] || !prefix ? -ENOMEM : 0;
	for (size_t i = 0; !err && i < GX_ARRAY_SIZE(h.start); i++)
		if (!ptx_head_declares(fn, h.start[i]))
			h.start[i] = NULL; /* not made in this function: not a start value */
	int n = err ? err : plan(&h, c);
	if (n <= 0) {
		err = n;
		goto out;
	}
	/* What stays live across the kernel: the planned values the code that
	 * stays reads. Where that is more than the cap leaves room for, only
	 * what its addresses and branches need moves (plan_narrow); where even
	 * that is too much, nothing. */
	size_t lp = strlen(prefix);
	int room = headroom(fn, o);
	if (room >= 0 && (int)live_units(&h, c) > room) {
		plan_narrow(&h, c);
		if ((int)live_units(&h, c) > room)
			goto out; /* nothing moved: the chain is as it was */
	}
	/* Move, in order (a planned value's sources are planned values before
	 * it): each reused from the start code or appended to it; then the
	 * code that stays renamed. */
	struct ptx_chain sc = { 0 };
	int depth = 0;
	for (struct ptx_stmt *s = c->head, *nx; s; s = nx) {
		nx = s == c->tail ? NULL : s->next;
		depth += s->kind == PTX_STMT_OPEN ? 1 : s->kind == PTX_STMT_CLOSE ? -1 : 0;
		struct hreg *r = s->kind == PTX_STMT_INSN && depth == 1 ? planned_def(&h, s) : NULL;
		if (!r)
			continue;
		if (r->to != r->name) /* the same value again: moved already */
			goto unlink;
		if ((err = rename_insn(&h, &s->insn, 1)))
			goto out;
		const char *to = find_moved(fn->head, &s->insn, prefix, lp);
		if (!to)
			to = find_moved(sc.head, &s->insn, prefix, lp);
		if (!to) {
			struct ptx_stmt *d = NULL;
			if ((to = ptx_fresh_name(m, "%", "iv"))) {
				ptx_chain_decl(m, &sc, PTX_SPACE_REG, r->type, to);
				if ((d = ptx_insn_dup(m, &sc, &s->insn)))
					d->insn.ops[0] = ptx_opnd_id(m, to);
			}
			if (!d || !d->insn.ops[0]) {
				err = -ENOMEM;
				goto out;
			}
			d->line = 0;
			d->col = PTX_COL_START_REG;
			sc.tail->prev->line = 0; /* the declaration */
			sc.tail->prev->col = PTX_COL_START_REG;
		}
		r->to = to;
	unlink:
		if (s->prev)
			s->prev->next = s->next;
		if (s->next)
			s->next->prev = s->prev;
		if (c->head == s)
			c->head = s->next;
		if (c->tail == s)
			c->tail = s->prev;
		(*moved)++;
	}
	for (struct ptx_stmt *s = c->head; s && !err; s = s == c->tail ? NULL : s->next)
		if (s->kind == PTX_STMT_INSN)
			err = rename_insn(&h, &s->insn, 0);
	if (err)
		goto out;
	if (sc.failed) {
		err = -ENOMEM;
		goto out;
	}
	if (sc.head) {
		/* after the start code already there (the start registers these read) */
		struct ptx_stmt *pos = fn->head;
		while (pos && pos->line == 0 && pos->col == PTX_COL_START_REG)
			pos = pos->next;
		ptx_insert_before(fn, pos, sc.head, sc.tail);
	}
out:
	free(h.r);
	free(h.decls);
	return err ? gx_err(err) : 0;
}
