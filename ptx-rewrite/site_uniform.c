/* site_uniform.c — the uniform prefix of an inlined handler.
 *
 * A handler that leaves early on a warp-uniform test (launchlate: "not block
 * 0"; threadhist: "not warp 0") made every warp elect a leader, diverge
 * (BSSY/BSYNC) and run the test on one lane. The tests at the head of the
 * inlined body that read only warp-uniform values — the words below, the
 * uniform special registers, constants and registers computed from those —
 * are copied before the election as `@p bra.uni END`: a warp that does not
 * qualify takes one uniform branch and never diverges. The body keeps its own
 * copy of the tests (the leader re-evaluates them, same values). */
#include <stdlib.h>
#include <string.h>

#include "ptx-rewrite/site_parts_internal.h"

#define PTX_UNI_WORDS (0xfu | 0x7u << 6 | 1u << 11 | 0x3fu << 12 | 0x7u << 21 | 1u << 24 | 1u << 25 | 1u << 27)
#define PTX_UNI_MAX   64 /* instructions scanned */

struct uni {
	const char **regs; /* registers holding warp-uniform values */
	size_t n, cap;
};

static int uni_has(const struct uni *u, const char *name)
{
	for (size_t i = 0; i < u->n; i++)
		if (!strcmp(u->regs[i], name))
			return 1;
	return 0;
}

static void uni_set(struct uni *u, const char *name, int on)
{
	for (size_t i = 0; i < u->n; i++)
		if (!strcmp(u->regs[i], name)) {
			if (!on)
				u->regs[i] = u->regs[--u->n];
			return;
		}
	if (!on)
		return;
	if (u->n == u->cap) {
		size_t cap = u->cap ? 2 * u->cap : 32;
		const char **n = realloc(u->regs, cap * sizeof(*n));
		if (!n)
			return; /* not recorded: only makes the prefix shorter */
		u->regs = n;
		u->cap = cap;
	}
	u->regs[u->n++] = name;
}

static int uni_sreg(const char *t)
{
	static const char *const sr[] = { "%ctaid.", "%nctaid.", "%ntid.", "%smid", "%nsmid", "%gridid", NULL };
	for (unsigned i = 0; sr[i]; i++)
		if (!strncmp(t, sr[i], strlen(sr[i])))
			return 1;
	return 0;
}

/* The statement after label `name` in chain c, or NULL. */
static struct ptx_stmt *after_label(const struct ptx_chain *c, const char *name)
{
	for (struct ptx_stmt *s = c->head; s; s = s->next)
		if (s->kind == PTX_STMT_LABEL && !strcmp(s->text, name))
			return s->next;
	return NULL;
}

/* Does label `t` lead straight to the site's end (dead moves of constants,
 * then `bra END`)? The template turns the handler's `ret` into that. */
static int exits_to(const struct ptx_chain *c, const char *t, const char *end)
{
	if (!strcmp(t, end))
		return 1;
	for (struct ptx_stmt *s = after_label(c, t); s; s = s->next) {
		if (s->kind == PTX_STMT_LABEL)
			continue;
		if (s->kind != PTX_STMT_INSN || s->insn.guard)
			return 0;
		const struct ptx_insn *in = &s->insn;
		if (!strcmp(in->opcode, "mov") && in->nops == 2 && in->ops[1] && in->ops[1]->kind == PTX_OPND_INT)
			continue;
		return !strcmp(in->opcode, "bra") && in->nops == 1 && in->ops[0] && in->ops[0]->kind == PTX_OPND_ID &&
		       !strcmp(in->ops[0]->text, end);
	}
	return 0;
}

/* Side-effect-free: scanned past (cvta: the stack frame's address, which a
 * handler with a map key on its stack computes first). */
static int pure_op(const char *op)
{
	static const char *const ops[] = { "mov", "add",  "sub",  "mul", "mad",	 "and", "or",  "xor", "not", "shl",
					   "shr", "setp", "selp", "cvt", "cvta", "min", "max", "neg", "bfe", NULL };
	for (unsigned i = 0; ops[i]; i++)
		if (!strcmp(op, ops[i]))
			return 1;
	return 0;
}

/* Copy into `pre` the uniform tests at the head of the inlined body `hb`
 * (see above), each preceded by the words it reads that are not computed
 * yet: a warp that leaves at the first test has read only what that test
 * needs (launchlate's "not block 0" reads %ctaid, not the %tid words of its
 * warp test: on the H200, with all words first, its stencil cost +5.3 %,
 * computed as needed +3.4 %; every special-register read before the test
 * delays the kernel's own start). *words: the words computed on the way to
 * the last exit (the body's path). Returns the number of early exits copied
 * (0: nothing usable, pre left empty). */
int ptx_site_uniform_prefix(struct ptx_module *m, const struct ptx_site_regs *r, const struct ptx_chain *hb,
			    const char *end, const char *out, unsigned long long kid, unsigned info, unsigned hook,
			    struct ptx_chain *pre, unsigned *words, unsigned layout)
{
	struct uni u = { 0 };
	struct ptx_chain c = { 0 };
	unsigned have = 0, have_at_exit = 0;
	int exits = 0, steps = 0;
	for (unsigned i = 0; i < PTX_CTX_WORDS; i++)
		if (PTX_UNI_WORDS & 1u << i)
			uni_set(&u, r->ow[i]->text, 1);
	struct ptx_stmt *s = hb->head;
	while (s && steps++ < PTX_UNI_MAX) {
		if (s->kind == PTX_STMT_LABEL) {
			s = s->next;
			continue;
		}
		if (s->kind != PTX_STMT_INSN)
			break;
		const struct ptx_insn *in = &s->insn;
		if (!strcmp(in->opcode, "bra") && in->nops == 1 && in->ops[0] && in->ops[0]->kind == PTX_OPND_ID) {
			const char *t = in->ops[0]->text;
			if (!in->guard) { /* forward jump: follow it */
				struct ptx_stmt *n = after_label(hb, t), *x = s;
				while (x && x != n)
					x = x->next;
				if (!n || !x)
					break;
				s = n;
				continue;
			}
			if (!uni_has(&u, in->guard))
				break;
			if (exits_to(hb, t, end)) { /* @p bra EXIT */
				ptx_chain_insn(m, &c, in->guard, in->guard_neg, "bra", PTX_MODS(".uni"), 1,
					       ptx_opnd_id(m, out));
				exits++;
				have_at_exit = have;
				s = s->next;
				continue;
			}
			/* @p bra GO; bra EXIT (LLVM's shape): @!p bra END, go on at GO */
			const struct ptx_stmt *nx = s->next;
			struct ptx_stmt *go = after_label(hb, t), *x = s;
			while (x && x != go)
				x = x->next;
			if (!nx || nx->kind != PTX_STMT_INSN || nx->insn.guard || strcmp(nx->insn.opcode, "bra") ||
			    nx->insn.nops != 1 || !nx->insn.ops[0] || nx->insn.ops[0]->kind != PTX_OPND_ID ||
			    !exits_to(hb, nx->insn.ops[0]->text, end) || !go || !x)
				break;
			ptx_chain_insn(m, &c, in->guard, !in->guard_neg, "bra", PTX_MODS(".uni"), 1,
				       ptx_opnd_id(m, out));
			exits++;
			have_at_exit = have;
			s = go;
			continue;
		}
		if (in->guard || !pure_op(in->opcode) || !in->nops || !in->ops[0] || in->ops[0]->kind != PTX_OPND_ID)
			break;
		int ok = 1;
		unsigned used = 0;
		for (unsigned i = 1; ok && i < in->nops; i++) {
			const struct ptx_opnd *o = in->ops[i];
			if (!o || (o->kind != PTX_OPND_ID && o->kind != PTX_OPND_INT && o->kind != PTX_OPND_FLOAT)) {
				ok = -1;
				break;
			}
			if (o->kind != PTX_OPND_ID)
				continue;
			ok = uni_has(&u, o->text) || uni_sreg(o->text);
			for (unsigned k = 0; ok && k < PTX_CTX_WORDS; k++)
				if (!strcmp(o->text, r->ow[k]->text))
					used |= 1u << k;
		}
		if (ok < 0)
			break;
		/* a value the prefix cannot compute uniformly: not copied, and
		 * whatever reads it is not uniform either */
		uni_set(&u, in->ops[0]->text, ok);
		if (!ok) {
			s = s->next;
			continue;
		}
		if (used & ~have) {
			if (ptx_site_words(m, &c, r, used, have, kid, info, hook, NULL, layout))
				c.failed = 1;
			have |= ptx_words_closure(used, layout);
		}
		if (!ptx_insn_dup(m, &c, in))
			break;
		s = s->next;
	}
	free(u.regs);
	if (!exits || c.failed) {
		*words = 0;
		return c.failed ? -ENOMEM : 0;
	}
	/* drop what follows the last exit (computed for later tests only) */
	struct ptx_stmt *last = c.tail;
	while (last && strcmp(last->insn.opcode, "bra"))
		last = last->prev;
	if (last) {
		last->next = NULL;
		c.tail = last;
	}
	*words = have_at_exit;
	ptx_chain_append(pre, &c);
	return exits;
}
