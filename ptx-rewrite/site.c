/* site.c — a hook site emitted inline, where the hook is (site_internal.h).
 *
 * Why inline and not a call to a trampoline .func: ptxas does not inline
 * .funcs, so every out-of-line trampoline cost a CALL/RET pair, a convergence
 * barrier around it and eager special-register reads, on the critical path
 * of every warp (+32 % on vadd with empty entry/exit hooks on the H200). At
 * the site the same warp-level model costs a few instructions:
 *
 *   {                                     // declarations of the site
 *   @!%guard bra OUT;                     // lanes whose instruction is off
 *   <uniform early exits: @p bra.uni OUT> (inlined entry/exit handlers)
 *   activemask.b32 %m;                    // the lanes that are here
 *   elect.sync %l|%q, %m;                 // sm_90+: one leader, its lane id
 *      (older targets: laneid, brev + bfind.shiftamt = lowest lane, setp)
 *   @!%q bra END;
 *   <a sampling mem site: the leader's 1-in-N test, @!%q bra END>
 *   <context words the handler reads, computed here and only here:
 *    special registers are read by the leader, after the election>
 *   <handler body inlined, context loads → those registers>       (inline)
 *   | <the words as .param scalars; call F's word clone> (call, copyable F)
 *   | <the words stored to a per-thread .local struct gdev_ctx; call F> (call)
 *   END:
 *   bar.warp.sync %m;                     // not at exit sites; OUT is END there
 *   OUT:
 *   }
 *
 * The context of a called handler is its call's parameters (words_clone) or,
 * when its body cannot be copied, lives in the thread's own .local copy:
 * two divergent lane groups of one warp reaching hooks at different times
 * each have their own leader, so a per-warp slot could be overwritten by one
 * group while the other's handler still reads it; a per-thread copy cannot.
 * Only the words the handler may read are stored (handler.c), so an
 * analysable handler touches one or two local lines, not the whole struct.
 *
 * Without a policy the built-in handler is chosen by opts->stubs: ELIDE (the
 * empty handler has no effect, so the site is left out altogether), CALL
 * (election + call of an empty .func: the mechanism's cost), PROBE (a handler
 * reading every field, inlined) and PROBE_CALL (the same, called). Decisions
 * of entry/exit/mem/fence handlers are not used, so nothing is broadcast.
 * Every name starts with the module's fresh prefix.
 *
 * Helpers in their own files (site_parts_internal.h): the words (site_words.c), the
 * uniform early exits (site_uniform.c), the sample gate of mem sites
 * (site_sample.c), the built-in probe (probe.c). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx-rewrite/passlib_internal.h"
#include "ptx-rewrite/policy_internal.h"
#include "ptx-rewrite/site_internal.h"
#include "ptx-rewrite/site_parts_internal.h"
#include "ptx-rewrite/tramp_internal.h"

/* Inlining limits, in handler instructions (the JIT's tools: 60-260). */
#define PTX_INLINE_MAX	      1024 /* entry/exit, and mem/fence within the budget below */
#define PTX_INLINE_MAX_MEM    160  /* mem/fence past the budget, or GX_PTX_F_MEM_SMALL_INLINE */
/* A mem/fence handler is copied to every memory instruction: those over
 * PTX_INLINE_MAX_MEM are inlined until the module holds this many of their
 * instructions (memtrace's ~490: 67 sites), then called by every lane.
 * ptxas took 17 s on a kernel with 134 inlined and 266 called. */
#define PTX_INLINE_MEM_BUDGET 32768

void ptx_sites_init(struct ptx_sites *s, struct ptx_module *m, struct ptx_pass_ctx *ctx, struct ptx_policy *pol,
		    struct ptx_tramps *tr)
{
	*s = (struct ptx_sites){ .m = m, .ctx = ctx, .pol = pol, .tr = tr };
	s->handlers.m = m;
	s->inl.m = m;
	s->inl.locals = &s->locals;
}

void ptx_sites_free(struct ptx_sites *s)
{
	ptx_handlers_free(&s->handlers);
	ptx_fn_locals_free(&s->locals);
}

/* The built-in probe handler, added to the module on first use. */
static const char *probe(struct ptx_sites *s)
{
	if (!s->probe)
		s->probe = ptx_probe_add(s->m, s->pol);
	return s->probe;
}

/* elect.sync: sm_90 and PTX ISA 8.0. */
static int can_elect(const struct ptx_module *m)
{
	return ptx_module_target_sm(m) >= 90 && m->version &&
	       m->version->version.major * 10 + m->version->version.minor >= 80;
}

/* The names and shared operands of the sites, made once per module. */
static const struct ptx_site_regs *site_regs(struct ptx_sites *s)
{
	struct ptx_module *m = s->m;
	const char *P = m->fresh_prefix;
	if (s->regs)
		return s->regs;
	struct ptx_site_regs *r = ptx_alloc(m, sizeof(*r));
	if (!r)
		return NULL;
	r->q = ptx_sprintf(m, "%%%s_q", P);
	r->m = ptx_sprintf(m, "%%%s_m", P);
	r->l = ptx_sprintf(m, "%%%s_l", P);
	r->t = ptx_sprintf(m, "%%%s_t", P);
	r->w = ptx_sprintf(m, "%%%s_w", P);
	r->x = ptx_sprintf(m, "%%%s_x", P);
	r->c0 = ptx_sprintf(m, "%s_c0", P);
	r->cr = ptx_sprintf(m, "%s_cr", P);
	r->a = ptx_sprintf(m, "%%%s_a", P);
	r->oq = ptx_opnd_id(m, r->q);
	r->om = ptx_opnd_id(m, r->m);
	r->ol = ptx_opnd_id(m, r->l);
	r->ot = ptx_opnd_id(m, r->t);
	r->ox = ptx_opnd_id(m, r->x);
	r->oa = ptx_opnd_id(m, r->a);
	r->oc0 = ptx_opnd_id(m, r->c0);
	r->ocr = ptx_opnd_id(m, r->cr);
	if (!r->a || !r->oq || !r->om || !r->ol || !r->ot || !r->ox || !r->oa || !r->oc0 || !r->ocr || !r->w)
		return NULL;
	size_t wl = strlen(r->w);
	const char *cw = ptx_sprintf(m, "%s_cw", P);
	if (!cw)
		return NULL;
	for (unsigned i = 0; i < PTX_CTX_WORDS; i++) {
		char num[4] = { (char)(i < 10 ? '0' + i : '0' + i / 10), (char)('0' + i % 10), 0 };
		size_t nl = i < 10 ? 1 : 2;
		if (!(r->ow[i] = ptx_opnd_id(m, ptx_concat(m, r->w, wl, num, nl))) ||
		    !(r->cw[i] = ptx_concat(m, cw, strlen(cw), num, nl)) || !(r->ocw[i] = ptx_opnd_id(m, r->cw[i])))
			return NULL;
	}
	r->reconverge = !(s->ctx->opts->flags & GX_PTX_F_NO_RECONVERGE);
	s->regs = r;
	return r;
}

const char *ptx_site_addr_reg(struct ptx_sites *s)
{
	const struct ptx_site_regs *r = site_regs(s);
	return r ? r->a : NULL;
}

/* The context words a word clone computes itself rather than taking them as
 * parameters: those read from special registers (its handler runs on the
 * leader lane, so %tid and %laneid in the clone are the leader's), except
 * %ctaid/%nctaid and the unit derived from them when the persistent
 * transform rewrites the kernel's reads of those (it does not reach the
 * clone). And size, op and space (words 6-8) travel as one parameter, the
 * site's packed info. Every parameter is a register live at the call:
 * memtrace's call took 11 (10 words and the leader flag), and under the
 * kernel's register cap the loops around its call sites spilled. */
#define PTX_W_INFO (7u << 6)
static unsigned clone_own_words(const struct ptx_sites *s)
{
	unsigned sreg = 0xfffu << 12 | 1u << 24 | 1u << 25 | 1u << 26 | 1u << 27;
	if (s->ctx->opts->persistent)
		sreg &= ~(0x3fu << 12 | 1u << 27);
	return sreg;
}

/* A called handler that the inliner could copy (h->inlinable: too large for
 * its hook, or a probe-call site) is called through a clone of it that takes
 * the words it reads as `.param .b32` scalars: the body is the inliner's
 * copy (context loads → moves from %<P>_w<i>, `ret` → the clone's end),
 * the words come from ld.param at its start. Under the call ABI those are
 * registers: no .local context, no store per word and no load back. The
 * .local context it replaces cost the leader a store and a load per word
 * of a struct that local memory interleaves across the warp's lanes (+9.9x
 * on a 1M-block vadd with a probe reading every word, run 6). Made once per
 * handler, right after it. NULL on error (m->err set or ENOMEM). */
static const char *words_clone(struct ptx_sites *s, struct ptx_handler *h, const struct ptx_site_regs *r, bool all,
			       int *err)
{
	struct ptx_module *m = s->m;
	*err = 0;
	const char **made = all ? &h->wclone_all : &h->wclone;
	if (*made)
		return *made;
	const char *name = ptx_fresh_name(m, "", "hw");
	const char *end = ptx_fresh_name(m, "$", "Lw");
	struct ptx_item *at = ptx_find_func(m, h->name);
	if (!name || !end || !at) {
		*err = -ENOMEM;
		return NULL;
	}
	/* .func (.param .b32 N_r) N(.param .b32 N_w<i>, ...)
	 * { .reg .b32 %<P>_w<30>; .reg .b32 %<P>_t; ld.param.b32 %<P>_w<i>, [N_w<i>]; ...
	 *   END: st.param.b32 [N_r], 0; ret; }  -- built as IR, the body goes before END */
	unsigned own = h->words & clone_own_words(s), info = h->words & PTX_W_INFO;
	unsigned passed = h->words & ~own & ~PTX_W_INFO;
	unsigned nw = (unsigned)__builtin_popcount(passed) + all + !!info;
	struct ptx_item *it = ptx_alloc(m, sizeof(*it));
	struct ptx_decl *pd = ptx_alloc(m, (nw + 1) * sizeof(*pd));
	const char *rname = ptx_sprintf(m, "%s_r", name);
	const char *qname = all ? ptx_sprintf(m, "%s_q", name) : "";
	if (!it || !pd || !rname || !qname) {
		*err = -ENOMEM;
		return NULL;
	}
	it->kind = PTX_ITEM_FUNC;
	struct ptx_func *f = &it->func;
	f->has_rets = f->has_params = f->has_body = 1;
	f->name = name;
	f->nrets = 1;
	f->rets = pd;
	f->nparams = nw;
	f->params = pd + 1;
	pd[0] = (struct ptx_decl){ .space = PTX_SPACE_PARAM, .space_str = ".param", .type = ".b32", .name = rname };
	struct ptx_chain c = { 0 };
	struct ptx_stmt *wd = ptx_chain_decl(m, &c, PTX_SPACE_REG, ".b32", r->w);
	if (wd)
		wd->decl.range = PTX_CTX_WORDS;
	ptx_chain_decl(m, &c, PTX_SPACE_REG, ".b32", r->t);
	unsigned n = 1;
	if (all) { /* the leader flag first: the other lanes return at once */
		ptx_chain_decl(m, &c, PTX_SPACE_REG, ".pred", r->q);
		pd[n++] = (struct ptx_decl){
			.space = PTX_SPACE_PARAM, .space_str = ".param", .type = ".b32", .name = qname
		};
		INSN(&c, "ld", PTX_MODS(".param", ".b32"), r->ot, ptx_opnd_addr(m, ptx_opnd_id(m, qname), 0));
		INSN(&c, "setp", PTX_MODS(".eq", ".u32"), r->oq, r->ot, ptx_opnd_int(m, 0));
		ptx_chain_insn(m, &c, r->q, 0, "bra", 0, NULL, 1, ptx_opnd_id(m, end));
	}
	for (unsigned i = 0; i < PTX_CTX_WORDS; i++) {
		if (!(passed & 1u << i))
			continue;
		const char *pn = ptx_sprintf(m, "%s_w%u", name, i);
		if (!pn) {
			*err = -ENOMEM;
			return NULL;
		}
		pd[n++] = (struct ptx_decl){
			.space = PTX_SPACE_PARAM, .space_str = ".param", .type = ".b32", .name = pn
		};
		INSN(&c, "ld", PTX_MODS(".param", ".b32"), r->ow[i], ptx_opnd_addr(m, ptx_opnd_id(m, pn), 0));
	}
	if (info) { /* size | op << 16 | space << 24, unpacked */
		const char *pn = ptx_sprintf(m, "%s_info", name);
		if (!pn) {
			*err = -ENOMEM;
			return NULL;
		}
		pd[n++] = (struct ptx_decl){
			.space = PTX_SPACE_PARAM, .space_str = ".param", .type = ".b32", .name = pn
		};
		INSN(&c, "ld", PTX_MODS(".param", ".b32"), r->ot, ptx_opnd_addr(m, ptx_opnd_id(m, pn), 0));
		if (info & 1u << 6)
			INSN(&c, "and", PTX_MODS(".b32"), r->ow[6], r->ot, ptx_opnd_int(m, 0xffff));
		if (info & 1u << 7)
			INSN(&c, "bfe", PTX_MODS(".u32"), r->ow[7], r->ot, ptx_opnd_int(m, 16), ptx_opnd_int(m, 8));
		if (info & 1u << 8)
			INSN(&c, "shr", PTX_MODS(".u32"), r->ow[8], r->ot, ptx_opnd_int(m, 24));
	}
	/* the leader's own words: its special registers, its lane */
	if (own & 1u << 26)
		INSN(&c, "mov", PTX_MODS(".u32"), r->ow[26], ptx_opnd_id(m, "%laneid"));
	if ((own & ~(1u << 26)) && ptx_site_words(m, &c, r, own & ~(1u << 26), 0, 0, 0, 0, NULL, 0)) {
		*err = -ENOMEM;
		return NULL;
	}
	ptx_chain_label(m, &c, end);
	struct ptx_stmt *lab = c.tail;
	INSN(&c, "st", PTX_MODS(".param", ".b32"), ptx_opnd_addr(m, ptx_opnd_id(m, rname), 0), ptx_opnd_int(m, 0));
	ptx_chain_insn(m, &c, NULL, 0, "ret", 0, NULL, 0);
	if (c.failed) {
		*err = -ENOMEM;
		return NULL;
	}
	f->head = c.head;
	f->tail = c.tail;
	struct ptx_item *first = it, *last = it;
	ptx_policy_insert_after(s->pol, m, at, first, last);
	struct ptx_chain decls = { 0 }, body = { 0 };
	if ((*err = ptx_handler_inline(&s->inl, &it->func, h, &decls, &body, r, end)))
		return NULL;
	ptx_chain_append(&decls, &body);
	if (decls.failed) {
		*err = -ENOMEM;
		return NULL;
	}
	if (decls.head)
		ptx_insert_before(&it->func, lab, decls.head, decls.tail);
	*made = name;
	return name;
}

/* The handler of a site inlined? Not those the analysis refuses, nor
 * mem/fence handlers over the small limit once the module's budget is
 * spent (GX_PTX_F_MEM_SMALL_INLINE: never), nor a sampled binding's over
 * the small limit. A handler called by the elected leader at a memory
 * site is what split warps for good (GPU runs 94-98: every store of
 * memtrace's golden kernel recorded as 1 + 31 lanes, tool_bench's reduce
 * hung under the gate); inlined, 626 records for 626 accesses (run 98),
 * and so when every lane calls (site_plan). A sampled handler runs once in
 * N accesses: inlined, the kernel capped at its registers spilled on its
 * hot path (run 101: vadd 4.7x against 1.05x called). */
static int inlines(const struct ptx_sites *s, const struct ptx_handler *h, unsigned hook, int force_call,
		   unsigned every)
{
	if (!h->inlinable || h->ninsn > PTX_INLINE_MAX || force_call)
		return 0;
	if (!(hook & (GDEV_HOOK_MEM | GDEV_HOOK_FENCE)) || h->ninsn <= PTX_INLINE_MAX_MEM)
		return 1;
	if ((hook & GDEV_HOOK_MEM) && every > 1 && !(s->ctx->opts->flags & GX_PTX_F_SAMPLE_INLINE))
		return 0;
	return !(s->ctx->opts->flags & GX_PTX_F_MEM_SMALL_INLINE) &&
	       s->mem_inl_insn + h->ninsn <= PTX_INLINE_MEM_BUDGET;
}

/* The handler a site of func (NULL: the built-in one chosen by opts->stubs)
 * would run, in *h, and whether it must be called (*force_call). 1 found,
 * 0 no handler (elided or an empty called stub), -errno. */
static int site_handler(struct ptx_sites *s, const char *func, struct ptx_handler **h, int *force_call)
{
	const struct gx_ptx_rewrite_opts *o = s->ctx->opts;
	*force_call = 0;
	if (!func) {
		if (o->stubs != GX_PTX_STUBS_PROBE && o->stubs != GX_PTX_STUBS_PROBE_CALL)
			return 0;
		*force_call = o->stubs == GX_PTX_STUBS_PROBE_CALL;
		if (!(func = probe(s)))
			return gx_err(-ENOMEM);
	}
	int err = ptx_handler_get(&s->handlers, func, h);
	return err ? err : 1;
}

int ptx_site_inlines(struct ptx_sites *s, unsigned hook, const char *func, size_t *ninsn)
{
	struct ptx_handler *h;
	int force_call, r = site_handler(s, func, &h, &force_call);
	if (r <= 0)
		return r;
	*ninsn = h->ninsn;
	return inlines(s, h, hook, force_call, hook & GDEV_HOOK_MEM ? ptx_site_sample_every(s, func) : 0);
}

int ptx_site_uniform_exit(struct ptx_sites *s, struct ptx_func *fn, const char *func)
{
	struct ptx_handler *h;
	int force_call, err = site_handler(s, func, &h, &force_call);
	if (err <= 0)
		return err;
	if (!inlines(s, h, GDEV_HOOK_ENTRY, force_call, 0))
		return 0;
	if (h->uni_exit >= 0)
		return h->uni_exit;
	/* Inline it once into scratch chains (never inserted) and look for the
	 * prefix; the site counter is restored so that the real sites' names
	 * do not depend on this probe. */
	const struct ptx_site_regs *r = site_regs(s);
	if (!r)
		return gx_err(-ENOMEM);
	struct ptx_chain hd = { 0 }, hb = { 0 }, pre = { 0 };
	unsigned id = s->inl.nr_inlined, words = 0;
	err = ptx_handler_inline(&s->inl, fn, h, &hd, &hb, r, "$__gx_probe_end");
	s->inl.nr_inlined = id;
	if (err)
		return err;
	int nx = ptx_site_uniform_prefix(s->m, r, &hb, "$__gx_probe_end", "$__gx_probe_out", 0, 0, GDEV_HOOK_ENTRY,
					 &pre, &words, 0);
	if (nx < 0)
		return nx;
	h->uni_exit = nx > 0;
	return h->uni_exit;
}

/* ---- ptx_site_insert, step by step */

/* One site under construction. */
struct site {
	struct ptx_sites *s;
	struct ptx_module *m;
	const struct ptx_site_regs *r;
	struct ptx_func *fn;
	unsigned hook, info;
	unsigned long long kid;
	const struct ptx_chain *addr;
	const char *func;      /* the handler (or stub) called or inlined */
	struct ptx_handler *h; /* NULL for a stub */
	int stub, force_call, inl;
	bool all;		      /* called by every arriving lane (not GX_PTX_F_MEM_LEADER_CALL) */
	unsigned need;		      /* the context words the handler reads */
	unsigned every;		      /* a mem site's 1 in N (ptx_site_sample_every), 0 elsewhere */
	const char *end, *hend, *out; /* labels: END, the handler's end, OUT */
	bool remat, sync;
	struct ptx_chain hd, bd; /* the site's declarations and body */
	struct ptx_chain hb;	 /* an inlined entry/exit handler's body */
	int hb_done;
	bool t0;	    /* GX_PTX_F_BLOCK_T0: thread 0 of the block alone runs the body */
	unsigned pre_words; /* words its uniform prefix computed */
	unsigned layout;    /* PTX_SITE_* (ptx_site_layout) */
	bool flush;	    /* a deferred sample's call: words from the pending registers (s->defer) */
};

/* The handler: the bound one, or without a policy the built-in one chosen
 * by opts->stubs. 1 a site is built, 0 the site is left out (elided), -errno. */
static int site_choose(struct site *st, const char *func)
{
	struct ptx_sites *s = st->s;
	const struct gx_ptx_rewrite_opts *o = s->ctx->opts;
	if (!func) {
		switch (o->stubs) {
		case GX_PTX_STUBS_CALL:
			st->stub = 1;
			func = ptx_tramp_stub(s->tr, st->hook);
			break;
		case GX_PTX_STUBS_PROBE:
		case GX_PTX_STUBS_PROBE_CALL:
			st->force_call = o->stubs == GX_PTX_STUBS_PROBE_CALL;
			func = probe(s);
			break;
		default:
			s->nr_elided++;
			return 0;
		}
		if (!func)
			return gx_err(-ENOMEM);
	}
	st->func = func;
	return 1;
}

/* What the handler reads, and whether it is inlined (logged once when not). */
static int site_plan(struct site *st)
{
	if (st->stub)
		return 0;
	int err = ptx_handler_get(&st->s->handlers, st->func, &st->h);
	if (err)
		return err;
	struct ptx_handler *h = st->h;
	st->need = h->words;
	/* entry/exit sites are few per kernel; a mem/fence handler is
	 * copied to every memory instruction, so only small ones are */
	st->every = st->hook & GDEV_HOOK_MEM ? ptx_site_sample_every(st->s, st->func) : 0;
	st->inl = inlines(st->s, h, st->hook, st->force_call, st->every);
	if (st->inl && (st->hook & (GDEV_HOOK_MEM | GDEV_HOOK_FENCE)) && h->ninsn > PTX_INLINE_MAX_MEM)
		st->s->mem_inl_insn += h->ninsn;
	/* a called mem/fence handler with words: called by every arriving lane,
	 * the leader flag its first parameter (GPU run 98: 626 records for 626
	 * accesses, where the leader's call split the warp) */
	st->all = !st->inl && !st->force_call && h->inlinable && st->need &&
		  (st->hook & (GDEV_HOOK_MEM | GDEV_HOOK_FENCE)) &&
		  !(st->s->ctx->opts->flags & GX_PTX_F_MEM_LEADER_CALL);
	if (!st->inl && !st->force_call && !h->logged) {
		h->logged = 1;
		ptx_pass_log(st->s->ctx,
			     "hooks: handler %s is called, not inlined (%s); "
			     "context words %s",
			     st->func, !h->inlinable ? (h->why ? h->why : "?") : "too large for this hook",
			     h->inlinable		     ? "passed as parameters"
			     : h->words == PTX_CTX_ALL_WORDS ? "stored: all"
							     : "stored: those it reads");
	}
	return 0;
}

/* The labels, and the scope's declarations. */
static int site_open(struct site *st, struct ptx_stmt *pos, const struct ptx_prologue *pro)
{
	struct ptx_module *m = st->m;
	const struct ptx_site_regs *r = st->r;
	struct ptx_chain *hd = &st->hd;
	if (!(st->end = ptx_fresh_name(m, "$", "Lh")))
		return gx_err(-ENOMEM);
	/* An entry site after the kernel's prologue (pass_hooks.c:
	 * entry_site_pos): the handler's path ends at HEND, re-executes the
	 * prologue there and goes on to END, so no kernel value is live across
	 * the handler; lanes and warps that skip it keep theirs. */
	st->remat = (st->hook & GDEV_HOOK_ENTRY) && pro && pro->begin && pos == pro->end;
	st->hend = st->remat ? ptx_fresh_name(m, "$", "Lr") : st->end;
	if (!st->hend)
		return gx_err(-ENOMEM);
	ptx_chain_scope(m, hd, 1);
	ptx_chain_decl(m, hd, PTX_SPACE_REG, ".pred", r->q);
	ptx_chain_decl(m, hd, PTX_SPACE_REG, ".b32", r->m);
	ptx_chain_decl(m, hd, PTX_SPACE_REG, ".b32", r->l);
	ptx_chain_decl(m, hd, PTX_SPACE_REG, ".b32", r->t);
	if (st->need) {
		struct ptx_stmt *d = ptx_chain_decl(m, hd, PTX_SPACE_REG, ".b32", r->w);
		if (d)
			d->decl.range = PTX_CTX_WORDS;
	}
	if (st->need & 0x30u)
		ptx_chain_decl(m, hd, PTX_SPACE_REG, ".b64", r->a);
	if (!st->inl) {
		ptx_chain_decl(m, hd, PTX_SPACE_REG, ".b64", r->x);
		ptx_chain_decl(m, hd, PTX_SPACE_PARAM, ".b64", r->c0);
		ptx_chain_decl(m, hd, PTX_SPACE_PARAM, ".b32", r->cr);
	}
	/* The lanes that reach the election leave together: bar.warp.sync on
	 * their mask (the election's activemask) after END. Without it ptxas did
	 * not always reconverge the leader with the other lanes after a handler
	 * with loops (the ring reservation): on the H200 warp 0 of block 0 then
	 * ran the rest of a grid-stride kernel diverged, and launchlate cost
	 * +40 % (vadd) and +79 % (reduce); with a barrier on all arriving lanes
	 * +0.8 % and -0.1 % (this form, with uniform exits past the barrier, was
	 * not measured). Not at exit sites: the lanes leave the kernel there, and
	 * waiting for the leader's record only delays them (kernelretsnoop +40 %
	 * on vadd with it). GX_PTX_F_NO_RECONVERGE (GX_PTX_RECONVERGE=0) leaves it out (A/B). */
	st->sync = r->reconverge && !(st->hook & GDEV_HOOK_EXIT);
	/* Lanes whose instruction is off and warps leaving by a uniform early
	 * exit never reach the election: they go past the barrier (OUT). */
	st->out = st->sync ? ptx_fresh_name(m, "$", "Lo") : st->end;
	return st->out ? 0 : gx_err(-ENOMEM);
}

/* A kernel with a site keeps the original's registers (the shim
 * measured them; gx_ptx_opts_reg_cap): the handler's path, called or
 * cold behind the gate, may spill, never cost the kernel resident warps
 * nor make a launch the original fits fail (GPU run 94: memtrace raised
 * tool_bench's 1,024-thread gemm past 64 registers, and the driver
 * refused its launches). Memory sites 8 more with GX_PTX_F_MEM_CAP_SLACK. */
static int site_cap(const struct site *st)
{
	const struct gx_ptx_rewrite_opts *o = st->s->ctx->opts;
	if (!st->fn->is_entry || !gx_ptx_opts_reg_cap(o, st->hook))
		return 0;
	return ptx_kernel_cap_regs(st->m, o, st->fn, st->fn->name,
				   (st->hook & GDEV_HOOK_MEM) && (o->flags & GX_PTX_F_MEM_CAP_SLACK) ? 8 : 0);
}

/* The guard's branch; an inlined entry/exit handler's body (into hb), so
 * that its uniform early exits go before the election (site_uniform.c);
 * the election. */
static int site_elect(struct site *st, const char *guard, int guard_neg)
{
	struct ptx_module *m = st->m;
	const struct ptx_site_regs *r = st->r;
	struct ptx_chain *bd = &st->bd;
	int err = 0;
	if (guard)
		ptx_chain_insn(m, bd, guard, !guard_neg, "bra", 0, NULL, 1, ptx_opnd_id(m, st->out));
	if (st->inl && (st->hook & (GDEV_HOOK_ENTRY | GDEV_HOOK_EXIT))) {
		err = ptx_handler_inline(&st->s->inl, st->fn, st->h, &st->hd, &st->hb, r, st->hend);
		st->hb_done = 1;
		struct ptx_chain pre = { 0 };
		/* a block probe gated on thread 0 (GX_PTX_F_BLOCK_T0): the
		 * body's own warp and lane tests pass there, and nothing
		 * needs to go before an election that is not made */
		st->t0 = st->s->block_site && (st->s->ctx->opts->flags & GX_PTX_F_BLOCK_T0) && !st->all;
		int nx = err || st->t0 ? 0
				       : ptx_site_uniform_prefix(m, r, &st->hb, st->hend, st->out, st->kid, st->info,
								 st->hook, &pre, &st->pre_words, st->layout);
		if (nx < 0)
			err = nx;
		if (nx > 0)
			ptx_chain_append(bd, &pre);
	}
	/* a sampling handler (its binding's sample, opts->mem_sample): 1 warp
	 * access in N reaches the handler, decided before the election by a
	 * voted countdown (run 101: with the handler called by every lane,
	 * vadd 1.05x, reduce 1.13x, gemm and stencil 1.39x at 1 in 1024), by a
	 * voted hash (GX_PTX_F_SAMPLE_EARLY), or after it by the leader's hash
	 * (GX_PTX_F_SAMPLE_LEADER) */
	unsigned every = st->every;
	unsigned fl = st->s->ctx->opts->flags;
	int early = !(fl & GX_PTX_F_SAMPLE_LEADER) || (fl & GX_PTX_F_SAMPLE_EARLY);
	if (!err && every > 1 && early) {
		int g = ptx_site_sample_gate(m, st->fn, bd, r, every, st->kid, st->s->ctx->res->nr_hooks, st->out,
					     fl & GX_PTX_F_SAMPLE_EARLY ? PTX_GATE_VOTE : PTX_GATE_COUNT);
		if (g < 0)
			err = g;
	}
	if (!err)
		err = site_cap(st);
	if (st->t0) {
		/* (%tid.x | %tid.y | %tid.z) != 0 leaves: one test on every
		 * thread in place of the warp test, the election and the
		 * body's lane-0 test on warp 0's last instructions (GPU run
		 * 117: each of those costs a short block ~30 cycles) */
		INSN(bd, "mov", PTX_MODS(".u32"), r->ot, ptx_opnd_id(m, "%tid.x"));
		if (!(st->layout & PTX_SITE_FLAT)) {
			INSN(bd, "mov", PTX_MODS(".u32"), r->ol, ptx_opnd_id(m, "%tid.y"));
			INSN(bd, "or", PTX_MODS(".b32"), r->ot, r->ot, r->ol);
			INSN(bd, "mov", PTX_MODS(".u32"), r->ol, ptx_opnd_id(m, "%tid.z"));
			INSN(bd, "or", PTX_MODS(".b32"), r->ot, r->ot, r->ol);
		}
		INSN(bd, "setp", PTX_MODS(".ne", ".u32"), r->oq, r->ot, ptx_opnd_int(m, 0));
		ptx_chain_insn(m, bd, r->q, 0, "bra", 0, NULL, 1, ptx_opnd_id(m, st->out));
		if (st->sync) /* the mask END's bar.warp.sync waits on */
			INSN(bd, "activemask", PTX_MODS(".b32"), r->om);
		/* what thread 0's words are, as immediates: ptxas then folds
		 * the body's own warp and lane tests (the active mask is thread
		 * 0 alone: the others left at the gate) */
		static const struct {
			unsigned char w, v;
		} k[] = { { 9, 1 }, { 10, 1 }, { 18, 0 }, { 19, 0 }, { 20, 0 }, { 25, 0 } };
		for (size_t i = 0; i < GX_ARRAY_SIZE(k); i++)
			if (st->need & 1u << k[i].w) {
				INSN(bd, "mov", PTX_MODS(".b32"), r->ow[k[i].w], ptx_opnd_int(m, k[i].v));
				st->pre_words |= 1u << k[i].w;
			}
		return err;
	}
	INSN(bd, "activemask", PTX_MODS(".b32"), r->om);
	if (can_elect(m)) {
		INSN(bd, "elect", PTX_MODS(".sync"), ptx_opnd_pipe(m, r->ol, r->oq), r->om);
	} else {
		INSN(bd, "mov", PTX_MODS(".u32"), r->ot, ptx_opnd_id(m, "%laneid"));
		INSN(bd, "brev", PTX_MODS(".b32"), r->ol, r->om);
		INSN(bd, "bfind", PTX_MODS(".shiftamt", ".u32"), r->ol, r->ol);
		INSN(bd, "setp", PTX_MODS(".eq", ".u32"), r->oq, r->ot, r->ol);
	}
	if (!st->all) /* the other lanes wait at END (converged call: they make it too) */
		ptx_chain_insn(m, bd, r->q, 1, "bra", 0, NULL, 1, ptx_opnd_id(m, st->end));
	if (!err && every > 1 && !early) {
		/* the leader's gate; for a converged call the leader flag takes
		 * it (no branch: every lane makes the call) */
		int g = ptx_site_sample_gate(m, st->fn, bd, r, every, st->kid, st->s->ctx->res->nr_hooks, st->end,
					     st->all ? PTX_GATE_FLAG : PTX_GATE_LEADER);
		if (g < 0)
			err = g;
	}
	return err;
}

/* The leader's part: the words, then the handler inlined, or called with
 * the words as parameters (words_clone), or called with them in the
 * function's .local context (or none: a stub or a handler reading none). */
static int site_handle(struct site *st)
{
	struct ptx_module *m = st->m;
	const struct ptx_site_regs *r = st->r;
	struct ptx_chain *bd = &st->bd, *hd = &st->hd;
	unsigned need = st->need;
	bool cloned = !st->inl && !st->stub && need && st->h->inlinable;
	/* a word clone computes its own words (clone_own_words) and takes the
	 * packed info: the site computes only the rest */
	unsigned own = cloned ? need & clone_own_words(st->s) : 0, info = cloned ? need & PTX_W_INFO : 0;
	/* a flush's address and lanes are the kept sample's (below) */
	const struct ptx_defer *d = st->flush ? st->s->defer : NULL;
	unsigned kept = d ? 0x30u | 1u << 10 : 0;
	int err = ptx_site_words(m, bd, r, need & ~own & ~info & ~kept, st->pre_words, st->kid, st->info, st->hook,
				 need & 0x30u ? st->addr : NULL, st->layout);
	if (d && (need & ~own & 0x30u)) { /* the sampled access's address and lanes */
		struct ptx_opnd *e[2] = { r->ow[4], r->ow[5] };
		INSN(bd, "mov", PTX_MODS(".b64"), ptx_opnd_vec(m, 2, e), ptx_opnd_id(m, d->pa));
	}
	if (d && (need & ~own & 1u << 10))
		INSN(bd, "mov", PTX_MODS(".b32"), r->ow[10], ptx_opnd_id(m, d->pl));
	const char *wclone = NULL;
	if (!err && cloned)
		wclone = words_clone(st->s, st->h, r, st->all, &err);
	if (err)
		return err;
	if (st->hb_done) {
		ptx_chain_append(bd, &st->hb);
		return 0;
	}
	if (st->inl)
		return ptx_handler_inline(&st->s->inl, st->fn, st->h, hd, bd, r, st->hend);
	if (wclone) {
		struct ptx_opnd *args[PTX_CTX_WORDS + 1];
		unsigned n = 0;
		if (st->all) { /* the leader flag, as the clone's first parameter */
			const char *qp = ptx_sprintf(m, "%s_cq", m->fresh_prefix);
			if (!qp)
				return gx_err(-ENOMEM);
			args[n] = ptx_opnd_id(m, qp);
			ptx_chain_decl(m, hd, PTX_SPACE_PARAM, ".b32", qp);
			INSN(bd, "selp", PTX_MODS(".b32"), r->ot, ptx_opnd_int(m, 1), ptx_opnd_int(m, 0), r->oq);
			INSN(bd, "st", PTX_MODS(".param", ".b32"), ptx_opnd_addr(m, args[n], 0), r->ot);
			n++;
		}
		for (unsigned i = 0; i < PTX_CTX_WORDS; i++) {
			if (!(need & ~own & ~info & 1u << i))
				continue;
			const char *pn = r->cw[i]; /* names made once per module */
			args[n] = r->ocw[i];
			ptx_chain_decl(m, hd, PTX_SPACE_PARAM, ".b32", pn);
			INSN(bd, "st", PTX_MODS(".param", ".b32"), ptx_opnd_addr(m, args[n], 0), r->ow[i]);
			n++;
		}
		if (info) { /* size | op << 16 | space << 24 */
			const char *pn = ptx_sprintf(m, "%s_ci", m->fresh_prefix);
			if (!pn)
				return gx_err(-ENOMEM);
			args[n] = ptx_opnd_id(m, pn);
			ptx_chain_decl(m, hd, PTX_SPACE_PARAM, ".b32", pn);
			INSN(bd, "st", PTX_MODS(".param", ".b32"), ptx_opnd_addr(m, args[n], 0),
			     d ? ptx_opnd_id(m, d->pi) : ptx_opnd_int(m, st->info));
			n++;
		}
		ptx_chain_insn(m, bd, NULL, 0, "call", 0, NULL, 3, ptx_opnd_list(m, 1, &r->ocr), ptx_opnd_id(m, wclone),
			       ptx_opnd_list(m, n, args));
		return 0;
	}
	if (st->stub || !need) {
		INSN(bd, "mov", PTX_MODS(".u64"), r->ox, ptx_opnd_int(m, 0));
	} else {
		const char *ctx = ptx_fn_local(&st->s->locals, m, st->fn, NULL, NULL);
		if (!ctx)
			return -ENOMEM;
		ptx_site_store_words(m, bd, r, need, ctx, st->layout);
		INSN(bd, "mov", PTX_MODS(".u64"), r->ox, ptx_opnd_id(m, ctx));
		INSN(bd, "cvta", PTX_MODS(".local", ".u64"), r->ox, r->ox);
	}
	INSN(bd, "st", PTX_MODS(".param", ".b64"), ptx_opnd_addr(m, r->oc0, 0), r->ox);
	ptx_chain_insn(m, bd, NULL, 0, "call", 0, NULL, 3, ptx_opnd_list(m, 1, &r->ocr), ptx_opnd_id(m, st->func),
		       ptx_opnd_list(m, 1, &r->oc0));
	return 0;
}

/* The re-executed prologue (HEND), END, the barrier and OUT, the scope's
 * end. */
static int site_close(struct site *st, const struct ptx_prologue *pro)
{
	struct ptx_module *m = st->m;
	struct ptx_chain *bd = &st->bd;
	int err = 0;
	if (st->remat) {
		ptx_chain_label(m, bd, st->hend);
		for (const struct ptx_stmt *p = pro->begin; p; p = p->next) {
			if (p->kind == PTX_STMT_INSN && !ptx_insn_dup(m, bd, &p->insn))
				err = -ENOMEM;
			if (p == pro->last)
				break;
		}
	}
	ptx_chain_label(m, bd, st->end);
	if (st->sync) {
		INSN(bd, "bar", PTX_MODS(".warp", ".sync"), st->r->om);
		ptx_chain_label(m, bd, st->out);
	}
	ptx_chain_scope(m, bd, 0);
	return err;
}

/* The site's code (st->hd, then st->bd) in place: before `at`, or after
 * it; err: what building it returned. 0 or -errno. */
static int site_commit(struct site *st, int err, struct ptx_stmt *at, bool after)
{
	ptx_chain_append(&st->hd, &st->bd);
	if (!err && st->hd.failed)
		err = -ENOMEM;
	if (!err)
		err = ptx_site_hoist_sregs(st->m, st->fn, &st->hd, st->layout);
	if (err)
		return gx_err(err);
	if (after)
		ptx_insert_after(st->fn, at, st->hd.head, st->hd.tail);
	else
		ptx_insert_before(st->fn, at, st->hd.head, st->hd.tail);
	st->m->emit_hint += (size_t)st->hd.n * 32; /* bytes per line of site code, about */
	return 0;
}

/* The context words a deferred sample carries to its call: the kernel id
 * (the function's), the address and the active lanes (kept); the clone
 * computes the rest (block, SM) the same at the flush; the packed info
 * travels kept too. */
#define PTX_DEFER_WORDS (3u | 0x30u | 1u << 10)

/* Does this sampled memory site keep its sample for the loop's way out
 * (s->defer)? Only the count gate's voted form, a handler called by every
 * lane through a word clone that needs no other word, in a loop of the
 * scan, and one handler per function (the flushes call it). */
static bool deferrable(const struct site *st, const struct ptx_stmt *pos)
{
	const struct ptx_defer *d = st->s->defer;
	unsigned fl = st->s->ctx->opts->flags;
	if (!d || !(st->hook & GDEV_HOOK_MEM) || st->every <= 1 ||
	    (fl & (GX_PTX_F_SAMPLE_LEADER | GX_PTX_F_SAMPLE_EARLY)) || !ptx_can_vote_sync(st->m) || !st->all ||
	    st->inl || st->stub || !st->h || !st->h->inlinable)
		return false;
	unsigned params = st->need & ~clone_own_words(st->s) & ~PTX_W_INFO;
	return !(params & ~PTX_DEFER_WORDS) && ptx_defer_in_loop(d, pos) &&
	       (!d->func || (!strcmp(d->func, st->func) && d->every == st->every));
}

/* The kept samples' buffer and registers, declared at fn's start by its
 * first deferred site (none kept). */
static int defer_regs(struct ptx_sites *s, struct ptx_func *fn, struct ptx_defer *d, const struct site *st)
{
	struct ptx_module *m = s->m;
	const char *P = m->fresh_prefix;
	struct ptx_decl buf = {
		.space = PTX_SPACE_LOCAL, .space_str = ".local", .align = 8, .type = ".b8", .ndims = 1
	};
	buf.dims[0] = PTX_DEFER_SLOTS * 16;
	d->dbuf = ptx_fn_local(&s->locals, m, fn, d, &buf);
	d->pn = ptx_sprintf(m, "%%%s_dpn", P);
	d->fi = ptx_sprintf(m, "%%%s_dfi", P);
	d->pa = ptx_sprintf(m, "%%%s_dpa", P);
	d->pl = ptx_sprintf(m, "%%%s_dpl", P);
	d->pi = ptx_sprintf(m, "%%%s_dpi", P);
	d->dq = ptx_sprintf(m, "%%%s_dq", P);
	d->dr = ptx_sprintf(m, "%%%s_dr", P);
	d->dd = ptx_sprintf(m, "%%%s_dd", P);
	if (!d->dbuf || !d->pn || !d->fi || !d->pa || !d->pl || !d->pi || !d->dq || !d->dr || !d->dd)
		return -ENOMEM;
	struct ptx_chain c = { 0 };
	ptx_chain_decl(m, &c, PTX_SPACE_REG, ".b32", d->pn);
	ptx_chain_decl(m, &c, PTX_SPACE_REG, ".b32", d->fi);
	ptx_chain_decl(m, &c, PTX_SPACE_REG, ".b64", d->pa);
	ptx_chain_decl(m, &c, PTX_SPACE_REG, ".b32", d->pl);
	ptx_chain_decl(m, &c, PTX_SPACE_REG, ".b32", d->pi);
	ptx_chain_decl(m, &c, PTX_SPACE_REG, ".pred", d->dq);
	ptx_chain_decl(m, &c, PTX_SPACE_REG, ".pred", d->dr);
	ptx_chain_decl(m, &c, PTX_SPACE_REG, ".b32", d->dd);
	INSN(&c, "mov", PTX_MODS(".u32"), ptx_opnd_id(m, d->pn), ptx_opnd_int(m, 0));
	INSN(&c, "mov", PTX_MODS(".u32"), ptx_opnd_id(m, d->fi), ptx_opnd_int(m, 0));
	INSN(&c, "mov", PTX_MODS(".u32"), ptx_opnd_id(m, d->dd), ptx_opnd_int(m, 0));
	if (c.failed)
		return -ENOMEM;
	ptx_insert_start_regs(fn, c.head, c.tail);
	d->func = st->func;
	d->kid = st->kid;
	d->every = st->every;
	return 0;
}

/* x = the address of slot `idx` of the kept samples' buffer. */
static void defer_slot(struct ptx_module *m, struct ptx_chain *c, const struct ptx_defer *d, struct ptx_opnd *x,
		       struct ptx_opnd *idx)
{
	INSN(c, "mov", PTX_MODS(".u64"), x, ptx_opnd_id(m, d->dbuf));
	INSN(c, "mad", PTX_MODS(".wide", ".u32"), x, idx, ptx_opnd_int(m, 16), x);
}

/* A deferred site, without a branch: the countdown, and on the sampled
 * access the lane's address, the sample's stamp and the site's info into
 * the next slot of the lane's kept samples (when they are full: counted in
 * dd, which the flush reports), all predicated. Every lane making the access keeps it (the
 * flush groups the lanes by stamp). No vote, no election, no call. GPU run
 * 129 (H100): the voted gate, or the countdown behind a divergent branch,
 * kept ptxas from overlapping the loads of nvcc's 4-way unrolled loop in
 * the cooperative sample's block 0 (2.2-2.4x); native code there issues
 * the four together. */
static int site_defer(struct site *st, struct ptx_stmt *pos, const char *guard, int guard_neg)
{
	struct ptx_module *m = st->m;
	struct ptx_defer *d = st->s->defer;
	const struct ptx_site_regs *r = st->r;
	int err = d->func ? 0 : defer_regs(st->s, st->fn, d, st);
	if (err)
		return gx_err(-ENOMEM);
	struct ptx_chain *c = &st->bd;
	ptx_chain_scope(m, c, 1);
	ptx_chain_decl(m, c, PTX_SPACE_REG, ".pred", r->q);
	ptx_chain_decl(m, c, PTX_SPACE_REG, ".b64", r->a);
	ptx_chain_decl(m, c, PTX_SPACE_REG, ".b64", r->x);
	struct ptx_opnd *stamp = NULL;
	int g = ptx_site_sample_pred(m, st->fn, c, r, st->every, guard, guard_neg, &stamp);
	if (g < 0)
		return gx_err(g);
	/* slots full: counted (dd), reported at the flush */
	struct ptx_opnd *pn = ptx_opnd_id(m, d->pn), *dd = ptx_opnd_id(m, d->dd);
	INSN(c, "setp", PTX_MODS(".ge", ".and", ".u32"), ptx_opnd_id(m, d->dr), pn, ptx_opnd_int(m, PTX_DEFER_SLOTS),
	     r->oq);
	ptx_chain_insn(m, c, d->dr, 0, "add", PTX_MODS(".u32"), 3, dd, dd, ptx_opnd_int(m, 1));
	INSN(c, "setp", PTX_MODS(".lt", ".and", ".u32"), r->oq, pn, ptx_opnd_int(m, PTX_DEFER_SLOTS), r->oq);
	if (st->addr && st->addr->head) {
		if (ptx_chain_copy(m, c, st->addr))
			return gx_err(-ENOMEM);
	} else {
		INSN(c, "mov", PTX_MODS(".b64"), r->oa, ptx_opnd_int(m, 0));
	}
	defer_slot(m, c, d, r->ox, pn);
	ptx_chain_insn(m, c, r->q, 0, "st", PTX_MODS(".local", ".u64"), 2, ptx_opnd_addr(m, r->ox, 0), r->oa);
	ptx_chain_insn(m, c, r->q, 0, "st", PTX_MODS(".local", ".u32"), 2, ptx_opnd_addr(m, r->ox, 8), stamp);
	ptx_chain_insn(m, c, r->q, 0, "st", PTX_MODS(".local", ".u32"), 2, ptx_opnd_addr(m, r->ox, 12),
		       ptx_opnd_int(m, st->info));
	ptx_chain_insn(m, c, r->q, 0, "add", PTX_MODS(".u32"), 3, pn, pn, ptx_opnd_int(m, 1));
	ptx_chain_scope(m, c, 0);
	if ((err = site_commit(st, site_cap(st), pos, false)))
		return err;
	st->s->ctx->res->nr_hooks++;
	d->nr_sites++;
	return 0;
}

int ptx_site_flushes(struct ptx_sites *s, struct ptx_func *fn)
{
	struct ptx_defer *d = s->defer;
	if (!d || !d->nr_sites)
		return 0;
	struct ptx_module *m = s->m;
	/* every flush of fn calls the same handler the same way */
	struct site one = { .s = s, .m = m, .fn = fn, .hook = GDEV_HOOK_MEM, .kid = d->kid, .flush = true };
	int layout = ptx_site_layout(m, fn, s->ctx->opts), err;
	if (layout < 0)
		return layout;
	one.layout = (unsigned)layout;
	if (!(one.r = site_regs(s)) || site_choose(&one, d->func) <= 0)
		return gx_err(-ENOMEM);
	if ((err = site_plan(&one)))
		return err;
	one.every = 0; /* sampled already */
	const struct ptx_site_regs *r = one.r;
	struct ptx_opnd *pn = ptx_opnd_id(m, d->pn), *fi = ptx_opnd_id(m, d->fi);
	for (size_t i = 0; i < d->nr_exits; i++) {
		struct site st = one;
		struct ptx_stmt *at = d->exits[i].at;
		if ((err = site_open(&st, at, NULL)))
			return err;
		/* Each lane keeps the samples it took part in (site_defer):
		 * the warp calls the handler once for each sample, oldest
		 * first — the lowest lane with one left leads with its own
		 * address, the lanes holding the same stamp are its lanes and
		 * hand theirs over with it; a lane with none left but samples
		 * it could not keep leads one GDEV_MEM_LOST call with their
		 * count; every arriving lane calls; nothing left: all go past. */
		struct ptx_chain *bd = &st.bd;
		const char *loop = ptx_fresh_name(m, "$", "Lf"), *done = ptx_fresh_name(m, "$", "Le");
		struct ptx_opnd *dq = ptx_opnd_id(m, d->dq), *dr = ptx_opnd_id(m, d->dr), *pl = ptx_opnd_id(m, d->pl);
		struct ptx_opnd *pa = ptx_opnd_id(m, d->pa), *pi = ptx_opnd_id(m, d->pi), *dd = ptx_opnd_id(m, d->dd);
		if (!loop || !done || !dq || !dr || !pl || !pa || !pi || !dd)
			return gx_err(-ENOMEM);
		ptx_chain_label(m, bd, loop);
		INSN(bd, "setp", PTX_MODS(".ne", ".u32"), r->oq, pn, ptx_opnd_int(m, 0));
		INSN(bd, "setp", PTX_MODS(".ne", ".or", ".u32"), r->oq, dd, ptx_opnd_int(m, 0), r->oq);
		INSN(bd, "activemask", PTX_MODS(".b32"), r->om);
		INSN(bd, "vote", PTX_MODS(".sync", ".ballot", ".b32"), r->ot, r->oq, r->om);
		INSN(bd, "setp", PTX_MODS(".eq", ".u32"), r->oq, r->ot, ptx_opnd_int(m, 0));
		ptx_chain_insn(m, bd, r->q, 0, "bra", PTX_MODS(".uni"), 1, ptx_opnd_id(m, done));
		INSN(bd, "brev", PTX_MODS(".b32"), r->ol, r->ot);
		INSN(bd, "bfind", PTX_MODS(".shiftamt", ".u32"), r->ol, r->ol);
		defer_slot(m, bd, d, r->ox, fi);
		INSN(bd, "ld", PTX_MODS(".local", ".u64"), pa, ptx_opnd_addr(m, r->ox, 0));
		INSN(bd, "ld", PTX_MODS(".local", ".u32"), pl, ptx_opnd_addr(m, r->ox, 8));
		INSN(bd, "ld", PTX_MODS(".local", ".u32"), pi, ptx_opnd_addr(m, r->ox, 12));
		/* dq: this lane's oldest is the leader's sample (none when
		 * the leader reports lost samples: its pn is 0) */
		INSN(bd, "shfl", PTX_MODS(".sync", ".idx", ".b32"), r->ot, pl, r->ol, ptx_opnd_int(m, 31), r->om);
		INSN(bd, "setp", PTX_MODS(".eq", ".u32"), dq, pl, r->ot);
		INSN(bd, "setp", PTX_MODS(".ne", ".and", ".u32"), dq, pn, ptx_opnd_int(m, 0), dq);
		INSN(bd, "shfl", PTX_MODS(".sync", ".idx", ".b32"), r->ot, pn, r->ol, ptx_opnd_int(m, 31), r->om);
		INSN(bd, "setp", PTX_MODS(".ne", ".and", ".u32"), dq, r->ot, ptx_opnd_int(m, 0), dq);
		INSN(bd, "vote", PTX_MODS(".sync", ".ballot", ".b32"), pl, dq, r->om);
		INSN(bd, "popc", PTX_MODS(".b32"), pl, pl);
		INSN(bd, "setp", PTX_MODS(".eq", ".u32"), dr, r->ot, ptx_opnd_int(m, 0));
		INSN(bd, "mov", PTX_MODS(".u32"), r->ot, ptx_opnd_id(m, "%laneid"));
		INSN(bd, "setp", PTX_MODS(".eq", ".u32"), r->oq, r->ot, r->ol);
		/* a leader with no sample left reports its lost ones */
		INSN(bd, "and", PTX_MODS(".pred"), dr, dr, r->oq);
		ptx_chain_insn(m, bd, d->dr, 0, "mov", PTX_MODS(".b64"), 2, pa, ptx_opnd_int(m, 0));
		ptx_chain_insn(m, bd, d->dr, 0, "mov", PTX_MODS(".u32"), 2, pl, ptx_opnd_int(m, 1));
		ptx_chain_insn(m, bd, d->dr, 0, "min", PTX_MODS(".u32"), 3, pi, dd, ptx_opnd_int(m, 0xffff));
		ptx_chain_insn(m, bd, d->dr, 0, "or", PTX_MODS(".b32"), 3, pi, pi,
			       ptx_opnd_int(m, (long long)GDEV_MEM_LOST << 16));
		ptx_chain_insn(m, bd, d->dr, 0, "mov", PTX_MODS(".u32"), 2, dd, ptx_opnd_int(m, 0));
		/* the group takes the sample off (the call needs only the
		 * words loaded); a lane emptied starts over at slot 0 */
		ptx_chain_insn(m, bd, d->dq, 0, "add", PTX_MODS(".u32"), 3, fi, fi, ptx_opnd_int(m, 1));
		INSN(bd, "setp", PTX_MODS(".eq", ".and", ".u32"), dq, fi, pn, dq);
		ptx_chain_insn(m, bd, d->dq, 0, "mov", PTX_MODS(".u32"), 2, pn, ptx_opnd_int(m, 0));
		ptx_chain_insn(m, bd, d->dq, 0, "mov", PTX_MODS(".u32"), 2, fi, ptx_opnd_int(m, 0));
		err = site_handle(&st);
		ptx_chain_insn(m, bd, NULL, 0, "bra", PTX_MODS(".uni"), 1, ptx_opnd_id(m, loop));
		ptx_chain_label(m, bd, done);
		if (!err)
			err = ptx_site_sample_resync(m, fn, bd, r, d->every);
		if (!err)
			err = site_close(&st, NULL);
		if ((err = site_commit(&st, err, at, d->exits[i].after)))
			return err;
	}
	return 0;
}

int ptx_site_insert(struct ptx_sites *s, struct ptx_func *fn, struct ptx_stmt *pos, unsigned hook, const char *func,
		    unsigned long long kid, const struct ptx_chain *addr, unsigned info, const char *guard,
		    int guard_neg, const struct ptx_prologue *pro)
{
	struct ptx_module *m = s->m;
	struct site st = { .s = s, .m = m, .fn = fn, .hook = hook, .kid = kid, .addr = addr, .info = info };
	int err = site_choose(&st, func);
	if (err <= 0)
		return err;
	int layout = ptx_site_layout(m, fn, s->ctx->opts);
	if (layout < 0)
		return layout;
	st.layout = (unsigned)layout;
	if (!(st.r = site_regs(s)))
		return gx_err(-ENOMEM);
	if ((err = site_plan(&st)))
		return err;
	if (deferrable(&st, pos))
		return site_defer(&st, pos, guard, guard_neg);
	if ((err = site_open(&st, pos, pro)))
		return err;
	err = site_elect(&st, guard, guard_neg);
	if (!err)
		err = site_handle(&st);
	if (!err)
		err = site_close(&st, pro);
	if ((err = site_commit(&st, err, pos, false)))
		return err;
	s->ctx->res->nr_hooks++;
	return 0;
}
