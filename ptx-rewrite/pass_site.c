/* pass_site.c — a hook site emitted inline, where the hook is.
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
 * Only the words the handler may read are stored (pass_inline.c), so an
 * analysable handler touches one or two local lines, not the whole struct.
 *
 * Without a policy the built-in handler is chosen by opts->stubs: ELIDE (the
 * empty handler has no effect, so the site is left out altogether), CALL
 * (election + call of an empty .func: the mechanism's cost), PROBE (a handler
 * reading every field, inlined) and PROBE_CALL (the same, called). Decisions
 * of entry/exit/mem/fence handlers are not used, so nothing is broadcast.
 * Every name starts with the module's fresh prefix. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx-rewrite/passes.h"

/* Inlining limits, in handler instructions (the JIT's tools: 60-260). */
#define PTX_INLINE_MAX 1024	/* entry/exit */
#define PTX_INLINE_MAX_MEM 160	/* mem/fence: one copy per memory instruction */

/* The built-in probe: reads all of struct gdev_ctx with the load shapes
 * LLVM emits (64-bit, vector, 32-bit into a 64-bit register) and stores
 * their hash only if it equals a constant, so ptxas keeps every read:
 *
 *   .global .align 4 .u32 P_probe_sink;
 *   .func (.param .b32 P_probe_r) P_probe(.param .b64 P_probe_c)
 *   {
 *   	.reg .pred %p<2>; .reg .b32 %r<32>; .reg .b64 %rd<8>;
 *   	ld.param.u64 %rd1, [P_probe_c];
 *   	ld.u64 %rd2, [%rd1]; ld.u64 %rd3, [%rd1+8]; ld.u64 %rd4, [%rd1+16];
 *   	ld.v2.u32 {%r1, %r2}, [%rd1+24];
 *   	ld.v4.u32 {%r3, %r4, %r5, %r6}, [%rd1+32];   ... {%r19, ..., %r22}, [%rd1+96];
 *   	ld.u32 %rd5, [%rd1+112];
 *   	xor.b64 %rd2, %rd2, %rd3; xor.b64 %rd2, %rd2, %rd4; xor.b64 %rd2, %rd2, %rd5;
 *   	cvt.u32.u64 %r23, %rd2; shr.u64 %rd2, %rd2, 32; cvt.u32.u64 %r24, %rd2;
 *   	xor.b32 %r23, %r23, %r24; xor.b32 %r23, %r23, %r1; ... %r22;
 *   	setp.ne.u32 %p1, %r23, 1641009;	// never in practice: keeps the reads
 *   	@%p1 bra $P_probe_done;
 *   	st.global.u32 [P_probe_sink], %r23;
 *   $P_probe_done:
 *   	mov.b32 %r25, 0; st.param.b32 [P_probe_r], %r25; ret;
 *   }
 *
 * Built as IR (it is added to every module the bench and tests rewrite with
 * it, and parsing its text cost as much as a tenth of such a rewrite). */
#define INSN(c, opcode, mods, ...)                                                         \
	ptx_chain_insn(m, c, NULL, 0, opcode, mods,                                        \
		       (unsigned)(sizeof((struct ptx_opnd *[]){__VA_ARGS__}) /             \
				  sizeof(struct ptx_opnd *)),                              \
		       __VA_ARGS__)

static const char *const probe_r[] = {
	"%r0",	"%r1",	"%r2",	"%r3",	"%r4",	"%r5",	"%r6",	"%r7",	"%r8",
	"%r9",	"%r10", "%r11", "%r12", "%r13", "%r14", "%r15", "%r16", "%r17",
	"%r18", "%r19", "%r20", "%r21", "%r22", "%r23", "%r24", "%r25",
};
static const char *const probe_rd[] = {"%rd0", "%rd1", "%rd2", "%rd3", "%rd4", "%rd5"};

static struct ptx_item *probe_item(struct ptx_module *m, enum ptx_item_kind kind)
{
	struct ptx_item *it = ptx_alloc(m, sizeof(*it));
	if (it)
		it->kind = kind;
	return it;
}

static void probe_param(struct ptx_decl *d, const char *type, const char *name)
{
	d->space = PTX_SPACE_PARAM;
	d->space_str = ".param";
	d->type = type;
	d->name = name;
}

#define ID(n) ptx_opnd_id(m, n)
#define AT(b, off) ptx_opnd_addr(m, ID(b), off)

static const char *probe_name(struct ptx_passes *ps)
{
	struct ptx_module *m = ps->m;
	const char *P = m->fresh_prefix;
	if (ps->probe_added)
		return ps->probe_added;
	const char *name = ptx_sprintf(m, "%s_probe", P);
	const char *sink = ptx_sprintf(m, "%s_probe_sink", P);
	const char *pr = ptx_sprintf(m, "%s_probe_r", P);
	const char *pc = ptx_sprintf(m, "%s_probe_c", P);
	const char *done = ptx_sprintf(m, "$%s_probe_done", P);
	struct ptx_item *g = probe_item(m, PTX_ITEM_DECL), *f = probe_item(m, PTX_ITEM_FUNC);
	struct ptx_decl *pp = ptx_alloc(m, 2 * sizeof(*pp));
	if (!name || !sink || !pr || !pc || !done || !g || !f || !pp)
		return NULL;
	g->decl.space = PTX_SPACE_GLOBAL;
	g->decl.space_str = ".global";
	g->decl.align = 4;
	g->decl.type = ".u32";
	g->decl.name = sink;
	probe_param(&pp[0], ".b32", pr);
	probe_param(&pp[1], ".b64", pc);
	struct ptx_func *fn = &f->func;
	fn->has_rets = fn->has_params = fn->has_body = 1;
	fn->name = name;
	fn->nrets = fn->nparams = 1;
	fn->rets = &pp[0];
	fn->params = &pp[1];

	struct ptx_chain c = {0};
	struct ptx_stmt *d;
	if ((d = ptx_chain_decl(m, &c, PTX_SPACE_REG, ".pred", "%p")))
		d->decl.range = 2;
	if ((d = ptx_chain_decl(m, &c, PTX_SPACE_REG, ".b32", "%r")))
		d->decl.range = 32;
	if ((d = ptx_chain_decl(m, &c, PTX_SPACE_REG, ".b64", "%rd")))
		d->decl.range = 8;
	const char *const *R = probe_r, *const *RD = probe_rd;
	INSN(&c, "ld", PTX_MODS(".param", ".u64"), ID(RD[1]), AT(pc, 0));
	for (int i = 0; i < 3; i++)
		INSN(&c, "ld", PTX_MODS(".u64"), ID(RD[2 + i]), AT(RD[1], 8 * i));
	struct ptx_opnd *v2[2] = {ID(R[1]), ID(R[2])};
	INSN(&c, "ld", PTX_MODS(".v2", ".u32"), ptx_opnd_vec(m, 2, v2), AT(RD[1], 24));
	for (int k = 0; k < 5; k++) {
		struct ptx_opnd *v4[4];
		for (int i = 0; i < 4; i++)
			v4[i] = ID(R[3 + 4 * k + i]);
		INSN(&c, "ld", PTX_MODS(".v4", ".u32"), ptx_opnd_vec(m, 4, v4),
		     AT(RD[1], 32 + 16 * k));
	}
	INSN(&c, "ld", PTX_MODS(".u32"), ID(RD[5]), AT(RD[1], 112));
	for (int i = 3; i <= 5; i++)
		INSN(&c, "xor", PTX_MODS(".b64"), ID(RD[2]), ID(RD[2]), ID(RD[i]));
	INSN(&c, "cvt", PTX_MODS(".u32", ".u64"), ID(R[23]), ID(RD[2]));
	INSN(&c, "shr", PTX_MODS(".u64"), ID(RD[2]), ID(RD[2]), ptx_opnd_int(m, 32));
	INSN(&c, "cvt", PTX_MODS(".u32", ".u64"), ID(R[24]), ID(RD[2]));
	INSN(&c, "xor", PTX_MODS(".b32"), ID(R[23]), ID(R[23]), ID(R[24]));
	for (int i = 1; i <= 22; i++)
		INSN(&c, "xor", PTX_MODS(".b32"), ID(R[23]), ID(R[23]), ID(R[i]));
	INSN(&c, "setp", PTX_MODS(".ne", ".u32"), ID("%p1"), ID(R[23]),
	     ptx_opnd_int(m, 1641009));
	ptx_chain_insn(m, &c, "%p1", 0, "bra", 0, NULL, 1, ID(done));
	INSN(&c, "st", PTX_MODS(".global", ".u32"), AT(sink, 0), ID(R[23]));
	ptx_chain_label(m, &c, done);
	INSN(&c, "mov", PTX_MODS(".b32"), ID(R[25]), ptx_opnd_int(m, 0));
	INSN(&c, "st", PTX_MODS(".param", ".b32"), AT(pr, 0), ID(R[25]));
	ptx_chain_insn(m, &c, NULL, 0, "ret", 0, NULL, 0);
	if (c.failed)
		return NULL;
	fn->head = c.head;
	fn->tail = c.tail;
	g->next = f;
	f->prev = g;
	struct ptx_item *hdr = ptx_module_header_end(m);
	ptx_item_insert_after(m, ps->policy_last ? ps->policy_last : hdr, g, f);
	ps->policy_last = f;
	ps->probe_added = name;
	return name;
}

/* elect.sync: sm_90 and PTX ISA 8.0. */
static int can_elect(const struct ptx_module *m)
{
	return ptx_module_target_sm(m) >= 90 && m->version &&
	       m->version->version.major * 10 + m->version->version.minor >= 80;
}

/* The names and shared operands of the sites, made once per module. */
static const struct ptx_site_regs *site_regs(struct ptx_passes *ps)
{
	struct ptx_module *m = ps->m;
	const char *P = m->fresh_prefix;
	if (ps->site_regs)
		return ps->site_regs;
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
	r->a = ptx_tramp_addr_reg(ps);
	r->oq = ptx_opnd_id(m, r->q);
	r->om = ptx_opnd_id(m, r->m);
	r->ol = ptx_opnd_id(m, r->l);
	r->ot = ptx_opnd_id(m, r->t);
	r->ox = ptx_opnd_id(m, r->x);
	r->oa = ptx_opnd_id(m, r->a);
	r->oc0 = ptx_opnd_id(m, r->c0);
	r->ocr = ptx_opnd_id(m, r->cr);
	if (!r->oq || !r->om || !r->ol || !r->ot || !r->ox || !r->oa || !r->oc0 || !r->ocr ||
	    !r->w)
		return NULL;
	size_t wl = strlen(r->w);
	const char *cw = ptx_sprintf(m, "%s_cw", P);
	if (!cw)
		return NULL;
	for (unsigned i = 0; i < PTX_CTX_WORDS; i++) {
		char num[4] = {(char)(i < 10 ? '0' + i : '0' + i / 10), (char)('0' + i % 10), 0};
		size_t nl = i < 10 ? 1 : 2;
		if (!(r->ow[i] = ptx_opnd_id(m, ptx_concat(m, r->w, wl, num, nl))) ||
		    !(r->cw[i] = ptx_concat(m, cw, strlen(cw), num, nl)) ||
		    !(r->ocw[i] = ptx_opnd_id(m, r->cw[i])))
			return NULL;
	}
	r->reconverge = !(ps->ctx->opts->flags & GX_PTX_F_NO_RECONVERGE);
	ps->site_regs = r;
	return r;
}

/* A function-level .local for the sites of fn: the context (h NULL) or a
 * copy of handler h's depot `d`, declared once per function and handler. */
static const char *fn_local(struct ptx_passes *ps, struct ptx_func *fn,
			    const struct ptx_handler *h, const struct ptx_decl *d)
{
	struct ptx_module *m = ps->m;
	const char *from = d ? d->name : "";
	for (size_t i = 0; i < ps->nr_locals; i++) {
		struct ptx_site_local *l = &ps->locals[i];
		if (l->fn == fn && l->h == h && !strcmp(l->from, from))
			return l->to;
	}
	struct ptx_site_local *n = realloc(ps->locals, (ps->nr_locals + 1) * sizeof(*n));
	if (!n)
		return NULL;
	ps->locals = n;
	const char *to = h ? ptx_fresh_name(m, "", "d") : ptx_sprintf(m, "%s_lctx", m->fresh_prefix);
	struct ptx_stmt *s = ptx_alloc(m, sizeof(*s));
	if (!to || !s)
		return NULL;
	s->kind = PTX_STMT_DECL;
	if (d) {
		s->decl = *d;
	} else { /* .local .align 16 .b8 NAME[128]; */
		s->decl.space = PTX_SPACE_LOCAL;
		s->decl.space_str = ".local";
		s->decl.align = 16;
		s->decl.type = ".b8";
		s->decl.ndims = 1;
		s->decl.dims[0] = PTX_CTXBUF_SLOT;
	}
	s->decl.name = to;
	ptx_insert_before(fn, fn->head, s, s);
	ps->locals[ps->nr_locals++] = (struct ptx_site_local){fn, h, from, to};
	return to;
}

const char *ptx_site_local(struct ptx_passes *ps, struct ptx_func *fn, const struct ptx_handler *h,
			   const struct ptx_decl *d)
{
	return fn_local(ps, fn, h, d);
}


/* mov.b32 W<i>, v */
static void mov_imm(struct ptx_module *m, struct ptx_chain *c, const struct ptx_site_regs *r,
		    unsigned i, unsigned long long v)
{
	INSN(c, "mov", PTX_MODS(".b32"), r->ow[i], ptx_opnd_int(m, (long long)v));
}

/* The words of the context in W<i>, for the bits of `need` (leader only). */
/* `need` with the words its computed words are made from. */
static unsigned words_closure(unsigned need)
{
	if (need & 1u << 25) /* warpid = linear tid / 32 */
		need |= 0x1fu << 18;
	if (need & 1u << 27) /* unit = linear block id */
		need |= 0x1fu << 12;
	return need;
}

/* Whether kernel fn's blocks are one-dimensional by its own declaration
 * (.reqntid or .maxntid with y and z 1 or left out: PTX defaults them to 1),
 * so %tid.y and %tid.z are 0 and %ntid.y and %ntid.z 1. Triton declares
 * every kernel so. The sites then compute the warp index from %tid.x alone:
 * every warp runs that test before the election, and special-register reads
 * are what delays a warp there (docs/devbpf-perf.md). */
static int flat_block(const struct ptx_func *fn)
{
	for (unsigned i = 0; fn && i < fn->nperf; i++) {
		const struct ptx_perf *pf = &fn->perf[i];
		if ((!strcmp(pf->name, ".reqntid") || !strcmp(pf->name, ".maxntid")) && pf->nvals >= 1 &&
		    (pf->nvals < 2 || pf->vals[1] == 1) && (pf->nvals < 3 || pf->vals[2] == 1))
			return 1;
	}
	return 0;
}

/* Compute the words of `need` not in `have` (already in their registers).
 * flat: the kernel's blocks are one-dimensional (flat_block). */
static int emit_words(struct ptx_module *m, struct ptx_chain *c, const struct ptx_site_regs *r,
		      unsigned need, unsigned have, unsigned long long kid, unsigned info,
		      unsigned hook, const struct ptx_chain *addr, int flat)
{
	static const char *const sreg[12] = {"%ctaid.x", "%ctaid.y", "%ctaid.z", "%nctaid.x",
					     "%nctaid.y", "%nctaid.z", "%tid.x", "%tid.y",
					     "%tid.z", "%ntid.x", "%ntid.y", "%ntid.z"};
	struct ptx_opnd *const *W = r->ow;
	need = words_closure(need) & ~have;
	for (unsigned i = 0; i < PTX_CTX_WORDS; i++) {
		if (!(need & 1u << i))
			continue;
		switch (i) {
		case 0:
		case 1:
			mov_imm(m, c, r, i, i ? kid >> 32 : kid & 0xffffffffu);
			break;
		case 4:
		case 5:
			if (i == 5 && (need & 1u << 4))
				break;
			if (addr && addr->head) {
				struct ptx_opnd *e[2] = {W[4], W[5]};
				if (ptx_chain_copy(m, c, addr))
					return -ENOMEM;
				INSN(c, "mov", PTX_MODS(".b64"), ptx_opnd_vec(m, 2, e), r->oa);
			} else {
				mov_imm(m, c, r, 4, 0);
				mov_imm(m, c, r, 5, 0);
			}
			break;
		case 6:
			mov_imm(m, c, r, 6, info & 0xffff);
			break;
		case 7:
			mov_imm(m, c, r, 7, info >> 16 & 0xff);
			break;
		case 8:
			mov_imm(m, c, r, 8, info >> 24 & 0xff);
			break;
		case 9:
			INSN(c, "mov", PTX_MODS(".b32"), W[9], r->om);
			break;
		case 10:
			INSN(c, "popc", PTX_MODS(".b32"), W[10], r->om);
			break;
		case 11:
			mov_imm(m, c, r, 11, hook);
			break;
		case 24:
			INSN(c, "mov", PTX_MODS(".u32"), W[24], ptx_opnd_id(m, "%smid"));
			break;
		case 25:
			INSN(c, "mad", PTX_MODS(".lo", ".u32"), r->ot, W[20], W[22], W[19]);
			INSN(c, "mad", PTX_MODS(".lo", ".u32"), r->ot, r->ot, W[21], W[18]);
			INSN(c, "shr", PTX_MODS(".u32"), W[25], r->ot, ptx_opnd_int(m, 5));
			break;
		case 26:
			INSN(c, "mov", PTX_MODS(".b32"), W[26], r->ol);
			break;
		case 27:
			INSN(c, "mad", PTX_MODS(".lo", ".u32"), r->ot, W[14], W[16], W[13]);
			INSN(c, "mad", PTX_MODS(".lo", ".u32"), W[27], r->ot, W[15], W[12]);
			break;
		default:
			/* special registers: fresh operands (the persistent
			 * pass rewrites %ctaid/%nctaid reads in place) */
			if (flat && (i == 19 || i == 20)) /* %tid.y, %tid.z */
				mov_imm(m, c, r, i, 0);
			else if (flat && (i == 22 || i == 23)) /* %ntid.y, %ntid.z */
				mov_imm(m, c, r, i, 1);
			else if (i >= 12 && i < 24)
				INSN(c, "mov", PTX_MODS(".u32"), W[i], ptx_opnd_id(m, sreg[i - 12]));
			else /* launch_id (0 until the shim numbers launches), pad */
				mov_imm(m, c, r, i, 0);
		}
	}
	return c->failed ? -ENOMEM : 0;
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
static const char *words_clone(struct ptx_passes *ps, struct ptx_handler *h,
			       const struct ptx_site_regs *r, int *err)
{
	struct ptx_module *m = ps->m;
	*err = 0;
	if (h->wclone)
		return h->wclone;
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
	unsigned nw = (unsigned)__builtin_popcount(h->words);
	struct ptx_item *it = ptx_alloc(m, sizeof(*it));
	struct ptx_decl *pd = ptx_alloc(m, (nw + 1) * sizeof(*pd));
	const char *rname = ptx_sprintf(m, "%s_r", name);
	if (!it || !pd || !rname) {
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
	pd[0] = (struct ptx_decl){.space = PTX_SPACE_PARAM, .space_str = ".param", .type = ".b32",
				  .name = rname};
	struct ptx_chain c = {0};
	struct ptx_stmt *wd = ptx_chain_decl(m, &c, PTX_SPACE_REG, ".b32", r->w);
	if (wd)
		wd->decl.range = PTX_CTX_WORDS;
	ptx_chain_decl(m, &c, PTX_SPACE_REG, ".b32", r->t);
	for (unsigned i = 0, n = 1; i < PTX_CTX_WORDS; i++) {
		if (!(h->words & 1u << i))
			continue;
		const char *pn = ptx_sprintf(m, "%s_w%u", name, i);
		if (!pn) {
			*err = -ENOMEM;
			return NULL;
		}
		pd[n++] = (struct ptx_decl){.space = PTX_SPACE_PARAM, .space_str = ".param",
					    .type = ".b32", .name = pn};
		INSN(&c, "ld", PTX_MODS(".param", ".b32"), r->ow[i],
		     ptx_opnd_addr(m, ptx_opnd_id(m, pn), 0));
	}
	ptx_chain_label(m, &c, end);
	struct ptx_stmt *lab = c.tail;
	INSN(&c, "st", PTX_MODS(".param", ".b32"), ptx_opnd_addr(m, ptx_opnd_id(m, rname), 0),
	     ptx_opnd_int(m, 0));
	ptx_chain_insn(m, &c, NULL, 0, "ret", 0, NULL, 0);
	if (c.failed) {
		*err = -ENOMEM;
		return NULL;
	}
	f->head = c.head;
	f->tail = c.tail;
	struct ptx_item *first = it, *last = it;
	ptx_item_insert_after(m, at, first, last);
	if (ps->policy_last == at)
		ps->policy_last = last;
	struct ptx_chain decls = {0}, body = {0};
	if ((*err = ptx_handler_inline(ps, &it->func, h, &decls, &body, r, end)))
		return NULL;
	ptx_chain_append(&decls, &body);
	if (decls.failed) {
		*err = -ENOMEM;
		return NULL;
	}
	if (decls.head)
		ptx_insert_before(&it->func, lab, decls.head, decls.tail);
	h->wclone = name;
	return name;
}

/* The words in `need` stored to the .local context at `ctx`. */
static void store_words(struct ptx_module *m, struct ptx_chain *c, const struct ptx_site_regs *r,
			unsigned need, const char *ctx)
{
	struct ptx_opnd *const *W = r->ow;
	struct ptx_opnd *base = ptx_opnd_id(m, ctx);
	need = words_closure(need);
	for (unsigned i = 0; i < PTX_CTX_WORDS; i++) {
		if (!(need & 1u << i))
			continue;
		struct ptx_opnd *at = ptx_opnd_addr(m, base, 4 * i);
		if (!(i & 3) && (need >> i & 0xfu) == 0xfu) {
			INSN(c, "st", PTX_MODS(".local", ".v4", ".u32"), at,
			     ptx_opnd_vec(m, 4, &W[i]));
			i += 3;
		} else if (!(i & 1) && (need & 1u << (i + 1))) {
			INSN(c, "st", PTX_MODS(".local", ".v2", ".u32"), at,
			     ptx_opnd_vec(m, 2, &W[i]));
			i++;
		} else {
			INSN(c, "st", PTX_MODS(".local", ".u32"), at, W[i]);
		}
	}
}

/* The handler of a site inlined? Large handlers of mem/fence hooks are not
 * (one copy per memory instruction), nor those the analysis refuses. */
static int inlines(const struct ptx_handler *h, unsigned hook, int force_call)
{
	size_t max = hook & (GDEV_HOOK_MEM | GDEV_HOOK_FENCE) ? PTX_INLINE_MAX_MEM : PTX_INLINE_MAX;
	return h->inlinable && h->ninsn <= max && !force_call;
}

/* The handler a site of func (NULL: the built-in one chosen by opts->stubs)
 * would run, in *h, and whether it must be called (*force_call). 1 found,
 * 0 no handler (elided or an empty called stub), -errno. */
static int site_handler(struct ptx_passes *ps, const char *func, struct ptx_handler **h,
			int *force_call)
{
	const struct gx_ptx_rewrite_opts *o = ps->ctx->opts;
	*force_call = 0;
	if (!func) {
		if (o->stubs != GX_PTX_STUBS_PROBE && o->stubs != GX_PTX_STUBS_PROBE_CALL)
			return 0;
		*force_call = o->stubs == GX_PTX_STUBS_PROBE_CALL;
		if (!(func = probe_name(ps)))
			return gx_err(-ENOMEM);
	}
	int err = ptx_handler_get(ps, func, h);
	return err ? err : 1;
}

int ptx_site_inlines(struct ptx_passes *ps, unsigned hook, const char *func, size_t *ninsn)
{
	struct ptx_handler *h;
	int force_call, r = site_handler(ps, func, &h, &force_call);
	if (r <= 0)
		return r;
	*ninsn = h->ninsn;
	return inlines(h, hook, force_call);
}

static int uniform_prefix(struct ptx_module *m, const struct ptx_site_regs *r,
			  const struct ptx_chain *hb, const char *end, const char *out,
			  unsigned long long kid, unsigned info, unsigned hook,
			  struct ptx_chain *pre, unsigned *words, int flat);

int ptx_site_uniform_exit(struct ptx_passes *ps, struct ptx_func *fn, const char *func)
{
	struct ptx_handler *h;
	int force_call, err = site_handler(ps, func, &h, &force_call);
	if (err <= 0)
		return err;
	if (!inlines(h, GDEV_HOOK_ENTRY, force_call))
		return 0;
	if (h->uni_exit >= 0)
		return h->uni_exit;
	/* Inline it once into scratch chains (never inserted) and look for the
	 * prefix; the site counter is restored so that the real sites' names
	 * do not depend on this probe. */
	const struct ptx_site_regs *r = site_regs(ps);
	if (!r)
		return gx_err(-ENOMEM);
	struct ptx_chain hd = {0}, hb = {0}, pre = {0};
	unsigned id = ps->nr_inlined, words = 0;
	err = ptx_handler_inline(ps, fn, h, &hd, &hb, r, "$__gx_probe_end");
	ps->nr_inlined = id;
	if (err)
		return err;
	int nx = uniform_prefix(ps->m, r, &hb, "$__gx_probe_end", "$__gx_probe_out", 0, 0,
				GDEV_HOOK_ENTRY, &pre, &words, 0);
	if (nx < 0)
		return nx;
	h->uni_exit = nx > 0;
	return h->uni_exit;
}

/* ---- the uniform prefix of an inlined handler ----
 *
 * A handler that leaves early on a warp-uniform test (launchlate: "not block
 * 0"; threadhist: "not warp 0") made every warp elect a leader, diverge
 * (BSSY/BSYNC) and run the test on one lane. The tests at the head of the
 * inlined body that read only warp-uniform values — the words below, the
 * uniform special registers, constants and registers computed from those —
 * are copied before the election as `@p bra.uni END`: a warp that does not
 * qualify takes one uniform branch and never diverges. The body keeps its own
 * copy of the tests (the leader re-evaluates them, same values). */
#define PTX_UNI_WORDS                                                                     \
	(0xfu | 0x7u << 6 | 1u << 11 | 0x3fu << 12 | 0x7u << 21 | 1u << 24 | 1u << 25 |  \
	 1u << 27)
#define PTX_UNI_MAX 64 /* instructions scanned */

struct uni {
	const char **regs;	/* registers holding warp-uniform values */
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
	static const char *const sr[] = {"%ctaid.", "%nctaid.", "%ntid.", "%smid", "%nsmid",
					 "%gridid", NULL};
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
		if (!strcmp(in->opcode, "mov") && in->nops == 2 && in->ops[1] &&
		    in->ops[1]->kind == PTX_OPND_INT)
			continue;
		return !strcmp(in->opcode, "bra") && in->nops == 1 && in->ops[0] &&
		       in->ops[0]->kind == PTX_OPND_ID && !strcmp(in->ops[0]->text, end);
	}
	return 0;
}

static int pure_op(const char *op)
{
	static const char *const ops[] = {"mov", "add", "sub", "mul", "mad", "and", "or", "xor",
					  "not", "shl", "shr", "setp", "selp", "cvt", "min", "max",
					  "neg", "bfe", NULL};
	for (unsigned i = 0; ops[i]; i++)
		if (!strcmp(op, ops[i]))
			return 1;
	return 0;
}

/* Append a copy of `in` to c; NULL (c->failed set) when out of memory. */
static struct ptx_stmt *insn_dup(struct ptx_module *m, struct ptx_chain *c,
				 const struct ptx_insn *in)
{
	struct ptx_stmt *d = ptx_alloc(m, sizeof(*d));
	struct ptx_opnd **ops = ptx_alloc(m, in->nops * sizeof(*ops));
	if (!d || (in->nops && !ops)) {
		c->failed = 1;
		return NULL;
	}
	d->kind = PTX_STMT_INSN;
	d->insn = *in;
	for (unsigned i = 0; i < in->nops; i++) {
		ops[i] = in->ops[i];
		/* own operand objects: %ctaid/%nctaid reads are rewritten in
		 * place by the persistent transform */
		if (ops[i] && ops[i]->kind == PTX_OPND_ID && !(ops[i] = ptx_opnd_id(m, in->ops[i]->text))) {
			c->failed = 1;
			return NULL;
		}
	}
	d->insn.ops = ops;
	ptx_chain_link(c, d);
	return d;
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
static int uniform_prefix(struct ptx_module *m, const struct ptx_site_regs *r,
			  const struct ptx_chain *hb, const char *end, const char *out,
			  unsigned long long kid, unsigned info, unsigned hook,
			  struct ptx_chain *pre, unsigned *words, int flat)
{
	struct uni u = {0};
	struct ptx_chain c = {0};
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
		if (!strcmp(in->opcode, "bra") && in->nops == 1 && in->ops[0] &&
		    in->ops[0]->kind == PTX_OPND_ID) {
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
				ptx_chain_insn(m, &c, in->guard, in->guard_neg, "bra", PTX_MODS(".uni"),
					       1, ptx_opnd_id(m, out));
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
			if (!nx || nx->kind != PTX_STMT_INSN || nx->insn.guard ||
			    strcmp(nx->insn.opcode, "bra") || nx->insn.nops != 1 || !nx->insn.ops[0] ||
			    nx->insn.ops[0]->kind != PTX_OPND_ID ||
			    !exits_to(hb, nx->insn.ops[0]->text, end) || !go || !x)
				break;
			ptx_chain_insn(m, &c, in->guard, !in->guard_neg, "bra", PTX_MODS(".uni"), 1,
				       ptx_opnd_id(m, out));
			exits++;
			have_at_exit = have;
			s = go;
			continue;
		}
		if (in->guard || !pure_op(in->opcode) || !in->nops || !in->ops[0] ||
		    in->ops[0]->kind != PTX_OPND_ID)
			break;
		int ok = 1;
		unsigned used = 0;
		for (unsigned i = 1; ok && i < in->nops; i++) {
			const struct ptx_opnd *o = in->ops[i];
			if (!o || (o->kind != PTX_OPND_ID && o->kind != PTX_OPND_INT &&
				   o->kind != PTX_OPND_FLOAT)) {
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
			if (emit_words(m, &c, r, used, have, kid, info, hook, NULL, flat))
				c.failed = 1;
			have |= words_closure(used);
		}
		if (!insn_dup(m, &c, in))
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

int ptx_site_insert(struct ptx_passes *ps, struct ptx_func *fn, struct ptx_stmt *pos,
		    unsigned hook, const char *func, unsigned long long kid,
		    const struct ptx_chain *addr, unsigned info, const char *guard, int guard_neg)
{
	struct ptx_module *m = ps->m;
	const struct gx_ptx_rewrite_opts *o = ps->ctx->opts;
	const char *P = m->fresh_prefix;
	struct ptx_handler *h = NULL;
	int force_call = 0, stub = 0;
	if (!func) {
		switch (o->stubs) {
		case GX_PTX_STUBS_CALL:
			stub = 1;
			ps->stubs |= hook;
			func = ptx_sprintf(m, "%s_stub_%s", P, ptx_hook_name(hook));
			break;
		case GX_PTX_STUBS_PROBE:
		case GX_PTX_STUBS_PROBE_CALL:
			force_call = o->stubs == GX_PTX_STUBS_PROBE_CALL;
			func = probe_name(ps);
			break;
		default:
			ps->nr_elided++;
			return 0;
		}
		if (!func)
			return gx_err(-ENOMEM);
	}
	unsigned need = 0;
	int inl = 0;
	const struct ptx_site_regs *r = site_regs(ps);
	if (!r)
		return gx_err(-ENOMEM);
	if (!stub) {
		int err = ptx_handler_get(ps, func, &h);
		if (err)
			return err;
		need = h->words;
		/* entry/exit sites are few per kernel; a mem/fence handler is
		 * copied to every memory instruction, so only small ones are */
		inl = inlines(h, hook, force_call);
		if (!inl && !force_call && !h->logged) {
			h->logged = 1;
			ptx_pass_log(ps->ctx, "hooks: handler %s is called, not inlined (%s); "
				     "context words %s", func,
				     !h->inlinable ? (h->why ? h->why : "?")
						   : "too large for this hook",
				     h->inlinable ? "passed as parameters"
				     : h->words == PTX_CTX_ALL_WORDS ? "stored: all"
								     : "stored: those it reads");
		}
	}
	const char *end = ptx_fresh_name(m, "$", "Lh");
	if (!end)
		return gx_err(-ENOMEM);
	/* An entry site after the kernel's prologue (pass_hooks.c:
	 * entry_site_pos): the handler's path ends at HEND, re-executes the
	 * prologue there and goes on to END, so no kernel value is live across
	 * the handler; lanes and warps that skip it keep theirs. */
	bool remat = (hook & GDEV_HOOK_ENTRY) && ps->remat_begin && pos == ps->remat_end;
	const char *hend = remat ? ptx_fresh_name(m, "$", "Lr") : end;
	if (!hend)
		return gx_err(-ENOMEM);
	struct ptx_chain hd = {0}, bd = {0};
	ptx_chain_scope(m, &hd, 1);
	ptx_chain_decl(m, &hd, PTX_SPACE_REG, ".pred", r->q);
	ptx_chain_decl(m, &hd, PTX_SPACE_REG, ".b32", r->m);
	ptx_chain_decl(m, &hd, PTX_SPACE_REG, ".b32", r->l);
	ptx_chain_decl(m, &hd, PTX_SPACE_REG, ".b32", r->t);
	if (need) {
		struct ptx_stmt *d = ptx_chain_decl(m, &hd, PTX_SPACE_REG, ".b32", r->w);
		if (d)
			d->decl.range = PTX_CTX_WORDS;
	}
	if (need & 0x30u)
		ptx_chain_decl(m, &hd, PTX_SPACE_REG, ".b64", r->a);
	if (!inl) {
		ptx_chain_decl(m, &hd, PTX_SPACE_REG, ".b64", r->x);
		ptx_chain_decl(m, &hd, PTX_SPACE_PARAM, ".b64", r->c0);
		ptx_chain_decl(m, &hd, PTX_SPACE_PARAM, ".b32", r->cr);
	}
	struct ptx_opnd *oend = ptx_opnd_id(m, end);
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
	bool sync = r->reconverge && !(hook & GDEV_HOOK_EXIT);
	/* Lanes whose instruction is off and warps leaving by a uniform early
	 * exit never reach the election: they go past the barrier (OUT). */
	const char *out = sync ? ptx_fresh_name(m, "$", "Lo") : end;
	if (!out)
		return gx_err(-ENOMEM);
	struct ptx_opnd *oout = ptx_opnd_id(m, out);
	if (guard)
		ptx_chain_insn(m, &bd, guard, !guard_neg, "bra", 0, NULL, 1, oout);
	/* An inlined entry/exit handler: its body first (into hb), so that its
	 * uniform early exits can go before the election (uniform_prefix). */
	struct ptx_chain hb = {0};
	unsigned pre_words = 0;
	int err = 0, hb_done = 0, flat = flat_block(fn);
	if (inl && (hook & (GDEV_HOOK_ENTRY | GDEV_HOOK_EXIT))) {
		err = ptx_handler_inline(ps, fn, h, &hd, &hb, r, hend);
		hb_done = 1;
		struct ptx_chain pre = {0};
		int nx = err ? 0 : uniform_prefix(m, r, &hb, hend, out, kid, info, hook, &pre,
						   &pre_words, flat);
		if (nx < 0)
			err = nx;
		if (nx > 0)
			ptx_chain_append(&bd, &pre);
	}
	INSN(&bd, "activemask", PTX_MODS(".b32"), r->om);
	if (can_elect(m)) {
		INSN(&bd, "elect", PTX_MODS(".sync"), ptx_opnd_pipe(m, r->ol, r->oq), r->om);
	} else {
		INSN(&bd, "mov", PTX_MODS(".u32"), r->ot, ptx_opnd_id(m, "%laneid"));
		INSN(&bd, "brev", PTX_MODS(".b32"), r->ol, r->om);
		INSN(&bd, "bfind", PTX_MODS(".shiftamt", ".u32"), r->ol, r->ol);
		INSN(&bd, "setp", PTX_MODS(".eq", ".u32"), r->oq, r->ot, r->ol);
	}
	ptx_chain_insn(m, &bd, r->q, 1, "bra", 0, NULL, 1, oend);
	if (!err)
		err = emit_words(m, &bd, r, need, pre_words, kid, info, hook,
				 need & 0x30u ? addr : NULL, flat);
	/* called with the words as parameters (words_clone) */
	const char *wclone = NULL;
	if (!err && !inl && !stub && need && h->inlinable)
		wclone = words_clone(ps, h, r, &err);
	if (err)
		;
	else if (hb_done)
		ptx_chain_append(&bd, &hb);
	else if (inl)
		err = ptx_handler_inline(ps, fn, h, &hd, &bd, r, hend);
	else if (wclone) {
		struct ptx_opnd *args[PTX_CTX_WORDS];
		unsigned n = 0;
		for (unsigned i = 0; i < PTX_CTX_WORDS; i++) {
			if (!(need & 1u << i))
				continue;
			const char *pn = r->cw[i]; /* names made once per module */
			args[n] = r->ocw[i];
			ptx_chain_decl(m, &hd, PTX_SPACE_PARAM, ".b32", pn);
			INSN(&bd, "st", PTX_MODS(".param", ".b32"), ptx_opnd_addr(m, args[n], 0),
			     r->ow[i]);
			n++;
		}
		if (!err)
			ptx_chain_insn(m, &bd, NULL, 0, "call", 0, NULL, 3,
				       ptx_opnd_list(m, 1, &r->ocr), ptx_opnd_id(m, wclone),
				       ptx_opnd_list(m, n, args));
	} else if (stub || !need)
		INSN(&bd, "mov", PTX_MODS(".u64"), r->ox, ptx_opnd_int(m, 0));
	else {
		const char *ctx = fn_local(ps, fn, NULL, NULL);
		if (!ctx) {
			err = -ENOMEM;
		} else {
			store_words(m, &bd, r, need, ctx);
			INSN(&bd, "mov", PTX_MODS(".u64"), r->ox, ptx_opnd_id(m, ctx));
			INSN(&bd, "cvta", PTX_MODS(".local", ".u64"), r->ox, r->ox);
		}
	}
	if (!inl && !wclone && !err) {
		INSN(&bd, "st", PTX_MODS(".param", ".b64"), ptx_opnd_addr(m, r->oc0, 0), r->ox);
		ptx_chain_insn(m, &bd, NULL, 0, "call", 0, NULL, 3, ptx_opnd_list(m, 1, &r->ocr),
			       ptx_opnd_id(m, func), ptx_opnd_list(m, 1, &r->oc0));
	}
	if (remat && !err) {
		ptx_chain_label(m, &bd, hend);
		for (const struct ptx_stmt *p = ps->remat_begin; p; p = p->next) {
			if (p->kind == PTX_STMT_INSN && !insn_dup(m, &bd, &p->insn))
				err = -ENOMEM;
			if (p == ps->remat_last)
				break;
		}
	}
	ptx_chain_label(m, &bd, end);
	if (sync) {
		INSN(&bd, "bar", PTX_MODS(".warp", ".sync"), r->om);
		ptx_chain_label(m, &bd, out);
	}
	ptx_chain_scope(m, &bd, 0);
	ptx_chain_append(&hd, &bd);
	if (!err && hd.failed)
		err = -ENOMEM;
	if (err)
		return gx_err(err);
	ptx_insert_before(fn, pos, hd.head, hd.tail);
	m->emit_hint += (size_t)hd.n * 32; /* bytes per line of site code, about */
	ps->ctx->res->nr_hooks++;
	return 0;
}
