/* pass_persist_loop.c — the persistent-worker loop around the kernels
 * pass_persistent.c accepted (docs/blocksched.md, include/gpuext/gx_work.h).
 *
 * The copy gets one more parameter, the descriptor by value, and this loop
 * (B: a barrier id the kernel does not use; t0: thread 0 of the block):
 *
 *   prologue: descriptor fields; CLAIM: t0 calls runtime begin()
 *   L_loop:   STATIC: [unit barrier B] unit = w, w + W, ...; done when >= total
 *             CLAIM, inside a chunk: [unit barrier B] unit = u++
 *             CLAIM, at a chunk's end: t0 runs the exit hook (class), asks
 *               the runtime for the next chunk (the steal hook decides when
 *               the runtime asks), stores it in a shared slot, runs the enter
 *               hook; barrier B; everyone reads the slot (two slots used in
 *               turn, so the one written is never the one still being read)
 *   unit coordinates (x fastest; a 1-D grid needs no division)
 *   the original body; ret/exit → L_loop
 *
 * Why this shape:
 *  - one barrier per claim, none per unit unless the kernel needs it
 *    (pass_persistent.c's unit barrier): run 6 measured the first
 *    transform's two barriers and shared publish per unit at +12 % (static)
 *    and +40 % (one claim atomic per unit) on a 1M-block vector add;
 *  - claims of several units (`chunk`, chosen by the launcher) so the claim
 *    and the hooks are paid once per chunk;
 *  - STATIC mode runs no runtime code and reads no state: the same copy is
 *    the cheapest loop when the policy never steals;
 *  - the claim protocol is C (blocksched/bs_rt.c, tested on the host with
 *    threads), inlined where thread 0 runs it (rt_inline.c says why
 *    not called).
 * The sched hooks run in thread 0, inlined on a context in its .local
 * memory (a trampoline, pass_tramp.c, only for a program the inliner cannot
 * follow); the context carries the chunk (unit = its first unit), its size,
 * the worker, its steals and a start time (gdev_ctx.h, "sched" fields). */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuext/gx_work.h"
#include "ptx-rewrite/pass_internal.h"
#include "ptx-rewrite/passlib_internal.h"
#include "ptx-rewrite/persist_internal.h"
#include "ptx-rewrite/policy_internal.h"
#include "ptx-rewrite/rt_inline_internal.h"
#include "ptx-rewrite/tramp_internal.h"

/* The pass's state: the module, what earlier passes decided, where sched
 * hooks' trampolines are asked for, the runtime (parsed once). */
struct loop_pass {
	struct ptx_module *m;
	struct ptx_pass_ctx *ctx;
	const struct ptx_policy *pol;
	const struct ptx_persist_set *kernels;
	struct ptx_tramps *tr;
	struct ptx_rt rt;
};

struct vregs {
	const char *cx, *cy, *cz, *nx, *ny, *nz;
};

static int rewrite_sreg(struct ptx_opnd *o, void *arg)
{
	const struct vregs *v = arg;
	if (o->kind != PTX_OPND_ID)
		return 0;
	const char *t = o->text;
	if (t[0] != '%' || (t[1] != 'c' && t[1] != 'n')) /* most operands: one test */
		return 0;
	const char *r = !strcmp(t, "%ctaid.x")    ? v->cx
			: !strcmp(t, "%ctaid.y")  ? v->cy
			: !strcmp(t, "%ctaid.z")  ? v->cz
			: !strcmp(t, "%nctaid.x") ? v->nx
			: !strcmp(t, "%nctaid.y") ? v->ny
			: !strcmp(t, "%nctaid.z") ? v->nz
						  : NULL;
	if (r)
		o->text = r;
	return 0;
}

static void opnd_rewrite(struct ptx_opnd *o, const struct vregs *v)
{
	if (!o)
		return;
	if (o->kind == PTX_OPND_ID)
		rewrite_sreg(o, (void *)v);
	for (unsigned i = 0; i < o->n; i++)
		opnd_rewrite(o->elems[i], v);
}

/* ---------------------------------------------------------------- the loop */

struct loop {
	struct loop_pass *ps;
	struct ptx_module *m;
	struct ptx_func *fn;
	const char *orig;       /* the application's kernel name (globs, kernel id) */
	struct vregs v;
	const char *total, *mode, *chunk, *w, *nw, *sunit, *u, *uend, *j, *unit, *cls, *dec, *t, *t2;
	const char *state, *hints, *stats, *wsa, *r, *r2, *sa, *off;
	const char *pt0, *pst, *p1d, *pq;
	/* hook registers (thread 0) */
	const char *tstart, *hunit, *hn, *hx, *hy, *hz, *hst, *hun, *ht0, *hw;
	const char *ws, *slot, *sctx, *hk; /* .local / .shared symbols */
	const char *ca;        /* .b64: the sched context's generic address */
	const char *bar;
	unsigned bar_id;
	int hooks;             /* some sched program is bound */
	int so;                /* a static-only copy: no claim path, runtime or hooks */
};

#define R(x) ptx_opnd_id(L->m, (x))
#define N(v) ptx_opnd_int(L->m, (v))
#define A(x, off) ptx_opnd_addr(L->m, R(x), (off))
#define I(c, g, gn, op, mods, n, ...) ptx_chain_insn(L->m, (c), (g), (gn), (op), PTX_MODS mods, (n), __VA_ARGS__)
#define BRA(c, g, gn, lbl) ptx_chain_insn(L->m, (c), (g), (gn), "bra", 0, NULL, 1, R(lbl))

/* Values the loop needs now and then are read again where they are used
 * (kernel parameters and special registers cost no register while not
 * needed): only the unit cursor, the chunk's end, the slot parity and the
 * static unit stay live across the body, so the loop adds few registers to
 * the body's (a GEMM at 32 stayed at 32; keeping them all cost 7 more). */
enum { RL_TOTAL = 1, RL_GRID = 2, RL_W = 4, RL_NW = 8, RL_WSA = 16 };
static void reload(struct loop *L, struct ptx_chain *c, unsigned what)
{
	const char *W = GX_WORK_PARAM;
	if (what & RL_TOTAL)
		I(c, NULL, 0, "ld", (".param", ".u32"), 2, R(L->total), A(W, GX_WORK_OFF_TOTAL));
	if (what & RL_GRID) {
		I(c, NULL, 0, "ld", (".param", ".u32"), 2, R(L->v.nx), A(W, GX_WORK_OFF_GRID));
		I(c, NULL, 0, "ld", (".param", ".u32"), 2, R(L->v.ny), A(W, GX_WORK_OFF_GRID + 4));
		I(c, NULL, 0, "ld", (".param", ".u32"), 2, R(L->v.nz), A(W, GX_WORK_OFF_GRID + 8));
	}
	if (what & RL_W)
		I(c, NULL, 0, "mov", (".u32"), 2, R(L->w), R("%ctaid.x"));
	if (what & RL_NW)
		I(c, NULL, 0, "mov", (".u32"), 2, R(L->nw), R("%nctaid.x"));
	if (what & RL_WSA) {
		I(c, NULL, 0, "mov", (".u64"), 2, R(L->wsa), R(L->ws));
		I(c, NULL, 0, "cvta", (".local", ".u64"), 2, R(L->wsa), R(L->wsa));
	}
}

/* x, y, z of `unit` in the original grid (x fastest). */
static void coords(struct loop *L, struct ptx_chain *c, const char *unit, const char *x, const char *y,
		   const char *z)
{
	const char *l1 = ptx_fresh_name(L->m, "$", "L1d"), *lx = ptx_fresh_name(L->m, "$", "Lxyz");
	if (!l1 || !lx) {
		c->failed = 1;
		return;
	}
	BRA(c, L->p1d, 0, l1);
	I(c, NULL, 0, "rem", (".u32"), 3, R(x), R(unit), R(L->v.nx));
	I(c, NULL, 0, "div", (".u32"), 3, R(L->t2), R(unit), R(L->v.nx));
	I(c, NULL, 0, "rem", (".u32"), 3, R(y), R(L->t2), R(L->v.ny));
	I(c, NULL, 0, "div", (".u32"), 3, R(z), R(L->t2), R(L->v.ny));
	BRA(c, NULL, 0, lx);
	ptx_chain_label(L->m, c, l1);
	I(c, NULL, 0, "mov", (".u32"), 2, R(x), R(unit));
	I(c, NULL, 0, "mov", (".u32"), 2, R(y), N(0));
	I(c, NULL, 0, "mov", (".u32"), 2, R(z), N(0));
	ptx_chain_label(L->m, c, lx);
}

/* The runtime's `fname` inlined (rt_inline.c); ret: b64 register or NULL. */
static void rt_call(struct loop *L, struct ptx_chain *c, const char *fname, const char *ret, unsigned n,
		    const char *const *args)
{
	if (ptx_rt_inline(&L->ps->rt, L->fn, c, fname, n, args, ret))
		c->failed = 1;
}

/* The context of a sched hook in thread 0's own .local struct gdev_ctx
 * (GDEV_CTX_*; vals: start, units, worker, steals, x, y, z), and its
 * generic address in L->ca, for an inlined policy function. */
static void ctx_fill(struct loop *L, struct ptx_chain *c, unsigned hook, unsigned long long kid,
		     const char *const vals[7])
{
	const char *S = L->sctx;
#define ST32(off, reg) I(c, NULL, 0, "st", (".local", ".u32"), 2, A(S, off), R(reg))
#define ST32I(off, v)                                                   \
	do {                                                            \
		I(c, NULL, 0, "mov", (".u32"), 2, R(L->t), N(v));      \
		ST32(off, L->t);                                        \
	} while (0)
#define ST32S(off, sreg)                                                \
	do {                                                            \
		I(c, NULL, 0, "mov", (".u32"), 2, R(L->t), R(sreg));   \
		ST32(off, L->t);                                        \
	} while (0)
	I(c, NULL, 0, "mov", (".u64"), 2, R(L->ca), ptx_opnd_hex64(L->m, kid));
	I(c, NULL, 0, "st", (".local", ".u64"), 2, A(S, GDEV_CTX_OFF_KERNEL_ID), R(L->ca));
	I(c, NULL, 0, "mov", (".u64"), 2, R(L->ca), N(0));
	I(c, NULL, 0, "st", (".local", ".u64"), 2, A(S, GDEV_CTX_OFF_LAUNCH_ID), R(L->ca));
	I(c, NULL, 0, "st", (".local", ".u64"), 2, A(S, GDEV_CTX_OFF_ADDR), R(vals[0]));
	ST32(GDEV_CTX_OFF_SIZE, vals[1]);
	ST32(GDEV_CTX_OFF_OP, vals[2]);
	ST32(GDEV_CTX_OFF_SPACE, vals[3]);
	ST32I(GDEV_CTX_OFF_ACTIVE_MASK, 1);
	ST32(GDEV_CTX_OFF_NR_ACTIVE, L->t);
	ST32I(GDEV_CTX_OFF_HOOK, hook);
	ST32(GDEV_CTX_OFF_CTAID, vals[4]);
	ST32(GDEV_CTX_OFF_CTAID + 4, vals[5]);
	ST32(GDEV_CTX_OFF_CTAID + 8, vals[6]);
	ST32(GDEV_CTX_OFF_NCTAID, L->v.nx);
	ST32(GDEV_CTX_OFF_NCTAID + 4, L->v.ny);
	ST32(GDEV_CTX_OFF_NCTAID + 8, L->v.nz);
	ST32I(GDEV_CTX_OFF_TID, 0);
	ST32(GDEV_CTX_OFF_TID + 4, L->t);
	ST32(GDEV_CTX_OFF_TID + 8, L->t);
	ST32(GDEV_CTX_OFF_WARPID, L->t);
	ST32(GDEV_CTX_OFF_LEADER_LANE, L->t);
	ST32(GDEV_CTX_OFF_LEADER_LANE + 8, L->t);
	ST32S(GDEV_CTX_OFF_NTID, "%ntid.x");
	ST32S(GDEV_CTX_OFF_NTID + 4, "%ntid.y");
	ST32S(GDEV_CTX_OFF_NTID + 8, "%ntid.z");
	ST32S(GDEV_CTX_OFF_SMID, "%smid");
	/* unit = (z * ny + y) * nx + x */
	I(c, NULL, 0, "mad", (".lo", ".u32"), 4, R(L->t), R(vals[6]), R(L->v.ny), R(vals[5]));
	I(c, NULL, 0, "mad", (".lo", ".u32"), 4, R(L->t), R(L->t), R(L->v.nx), R(vals[4]));
	ST32(GDEV_CTX_OFF_UNIT, L->t);
	I(c, NULL, 0, "mov", (".u64"), 2, R(L->ca), R(S));
	I(c, NULL, 0, "cvta", (".local", ".u64"), 2, R(L->ca), R(L->ca));
#undef ST32
#undef ST32I
#undef ST32S
}

/* The sites of one sched hook (every bound program whose glob matches the
 * kernel), decisions combined by max (NO_STEAL wins; the heaviest class
 * wins); vals: start, units, worker, steals, x, y, z. Each program's
 * function is inlined on a context in .local (rt_inline.c: a call
 * would cost the kernel registers, as the runtime's would); one the
 * inliner cannot follow is called through a trampoline. */
static int sched_sites(struct loop *L, struct ptx_chain *c, unsigned hook, const char *guard,
		       const char *ret_reg, const char *const vals[7])
{
	struct loop_pass *ps = L->ps;
	struct ptx_module *m = L->m;
	const struct gx_ptx_rewrite_opts *o = ps->ctx->opts;
	const char *sv[10] = {vals[0], vals[1], vals[2], vals[3], vals[4],
			      vals[5], vals[6], L->v.nx, L->v.ny, L->v.nz};
	int first = 1;
	unsigned long long kid = gx_kernel_id(L->orig);
	for (size_t i = 0; o->policy_ptx && (o->hooks & hook) && i < o->nr_bindings; i++) {
		const struct gx_hook_binding *bd = &o->bindings[i];
		if (bd->hook != hook || !bd->func ||
		    (bd->kernel_glob && fnmatch(bd->kernel_glob, L->orig, 0)))
			continue;
		const char *fname = ptx_policy_name(ps->pol, bd->func);
		const char *to = !ret_reg ? NULL : first ? ret_reg : L->t2;
		struct ptx_item *it = ptx_find_func(m, fname);
		struct ptx_chain t = {0};
		const char *skip = guard ? ptx_fresh_name(m, "$", "Lsch") : NULL;
		if (guard && !skip)
			return gx_err(-ENOMEM);
		if (to)
			I(&t, NULL, 0, "mov", (".u32"), 2, R(to), N(0));
		if (guard)
			BRA(&t, guard, 1, skip);
		ctx_fill(L, &t, hook, kid, vals);
		const char *args[1] = {L->ca};
		int err = it && it->func.has_body ? ptx_func_inline(m, L->fn, &t, &it->func, 1, args, to)
						  : -EOPNOTSUPP;
		if (err == -EOPNOTSUPP) {
			if (!ps->ctx->res->nr_hooks || first)
				ptx_pass_log(ps->ctx, "persistent: %s: sched hook %s called, not inlined (%s)",
					     L->orig, fname, m->err[0] ? m->err : "no body");
			m->err[0] = 0;
			t = (struct ptx_chain){0};
			const char *tr = ptx_tramp_get(ps->tr, hook, fname, 1);
			if (!tr || ptx_tramp_sched_site(m, &t, tr, kid, sv, guard, 0, to))
				return gx_err(-ENOMEM);
		} else if (err) {
			return err;
		} else if (guard) {
			ptx_chain_label(m, &t, skip);
		}
		if (t.failed)
			return gx_err(-ENOMEM);
		ptx_chain_append(c, &t);
		if (to && !first)
			I(c, NULL, 0, "max", (".u32"), 3, R(ret_reg), R(ret_reg), R(L->t2));
		first = 0;
		ps->ctx->res->nr_hooks++;
	}
	return 0;
}

static int bound(struct loop *L, unsigned hook)
{
	const struct gx_ptx_rewrite_opts *o = L->ps->ctx->opts;
	for (size_t i = 0; o->policy_ptx && (o->hooks & hook) && i < o->nr_bindings; i++)
		if (o->bindings[i].hook == hook && o->bindings[i].func &&
		    (!o->bindings[i].kernel_glob || !fnmatch(o->bindings[i].kernel_glob, L->orig, 0)))
			return 1;
	return 0;
}

/* slot address of the parity j into L->sa */
static void slot_addr(struct loop *L, struct ptx_chain *c)
{
	I(c, NULL, 0, "mov", (".u64"), 2, R(L->sa), R(L->slot));
	I(c, NULL, 0, "mul", (".wide", ".u32"), 3, R(L->off), R(L->j), N(8));
	I(c, NULL, 0, "add", (".u64"), 3, R(L->sa), R(L->sa), R(L->off));
}

static int new_regs(struct loop *L)
{
	struct ptx_module *m = L->m;
	struct ptx_func *fn = L->fn;
	const char **b32[] = {&L->v.cx, &L->v.cy, &L->v.cz, &L->v.nx, &L->v.ny, &L->v.nz, &L->total,
			      &L->mode, &L->chunk, &L->w, &L->nw, &L->sunit, &L->u, &L->uend, &L->j,
			      &L->unit, &L->cls, &L->dec, &L->t, &L->t2, &L->hunit, &L->hn, &L->hx,
			      &L->hy, &L->hz, &L->hst, &L->hun, &L->hw};
	const char **b64[] = {&L->state, &L->hints, &L->stats, &L->wsa, &L->r, &L->r2, &L->sa, &L->off,
			      &L->tstart, &L->ht0, &L->ca};
	const char **pr[] = {&L->pt0, &L->pst, &L->p1d, &L->pq};
	for (size_t i = 0; i < GX_ARRAY_SIZE(b32); i++)
		if (!(*b32[i] = ptx_new_reg(m, fn, ".b32")))
			return -ENOMEM;
	for (size_t i = 0; i < GX_ARRAY_SIZE(b64); i++)
		if (!(*b64[i] = ptx_new_reg(m, fn, ".b64")))
			return -ENOMEM;
	for (size_t i = 0; i < GX_ARRAY_SIZE(pr); i++)
		if (!(*pr[i] = ptx_new_reg(m, fn, ".pred")))
			return -ENOMEM;
	L->ws = ptx_sprintf(m, "%s_ws", m->fresh_prefix);
	L->slot = ptx_sprintf(m, "%s_slot", m->fresh_prefix);
	L->sctx = ptx_sprintf(m, "%s_sctx", m->fresh_prefix);
	L->hk = ptx_sprintf(m, "%s_hk", m->fresh_prefix);
	return L->ws && L->slot && L->sctx && L->hk ? 0 : -ENOMEM;
}

/* The head of the loop, inserted before the body. */
static int build_head(struct loop *L, const struct ptx_persist *pi, struct ptx_chain *b,
		      const char *L_loop, const char *L_done)
{
	struct ptx_module *m = L->m;
	const char *Lcl = ptx_fresh_name(m, "$", "Lclaim"), *Lst = ptx_fresh_name(m, "$", "Lstatic");
	const char *Lun = ptx_fresh_name(m, "$", "Lunit"), *Ltk = ptx_fresh_name(m, "$", "Ltake");
	const char *Lpub = ptx_fresh_name(m, "$", "Lpub"), *Lgot = ptx_fresh_name(m, "$", "Lgot");
	const char *Lbody = ptx_fresh_name(m, "$", "Lbody");
	if (!Lcl || !Lst || !Lun || !Ltk || !Lpub || !Lgot || !Lbody)
		return -ENOMEM;
	const char *W = GX_WORK_PARAM;
	int so = L->so;
	int he = !so && bound(L, GDEV_HOOK_SCHED_ENTER), hx = !so && bound(L, GDEV_HOOK_SCHED_EXIT);
	int hs = !so && bound(L, GDEV_HOOK_SCHED_STEAL);
	L->hooks = he || hx || hs;

	/* prologue */
	reload(L, b, RL_GRID | RL_W | RL_NW);
	I(b, NULL, 0, "ld", (".param", ".u32"), 2, R(L->mode), A(W, GX_WORK_OFF_MODE));
	I(b, NULL, 0, "mov", (".u32"), 2, R(L->t), R("%tid.x"));
	I(b, NULL, 0, "mov", (".u32"), 2, R(L->t2), R("%tid.y"));
	I(b, NULL, 0, "or", (".b32"), 3, R(L->t), R(L->t), R(L->t2));
	I(b, NULL, 0, "mov", (".u32"), 2, R(L->t2), R("%tid.z"));
	I(b, NULL, 0, "or", (".b32"), 3, R(L->t), R(L->t), R(L->t2));
	I(b, NULL, 0, "setp", (".eq", ".u32"), 3, R(L->pt0), R(L->t), N(0));
	if (so)
		I(b, NULL, 0, "mov", (".pred"), 2, R(L->pst), N(1));
	else
		I(b, NULL, 0, "setp", (".eq", ".u32"), 3, R(L->pst), R(L->mode), N(GX_WORK_STATIC));
	I(b, NULL, 0, "setp", (".eq", ".u32"), 3, R(L->p1d), R(L->v.ny), N(1));
	I(b, NULL, 0, "setp", (".eq", ".and", ".u32"), 4, R(L->p1d), R(L->v.nz), N(1), R(L->p1d));
	I(b, NULL, 0, "sub", (".u32"), 3, R(L->sunit), R(L->w), R(L->nw));
	I(b, NULL, 0, "mov", (".u32"), 2, R(L->u), N(0));
	I(b, NULL, 0, "mov", (".u32"), 2, R(L->uend), N(0));
	I(b, NULL, 0, "mov", (".u32"), 2, R(L->j), N(0));
	I(b, NULL, 0, "mov", (".u32"), 2, R(L->cls), N(0));
	I(b, NULL, 0, "mov", (".u32"), 2, R(L->v.cx), N(0));
	I(b, NULL, 0, "mov", (".u32"), 2, R(L->v.cy), N(0));
	I(b, NULL, 0, "mov", (".u32"), 2, R(L->v.cz), N(0));
	if (so) {
		/* static only: the loop is the STATIC path alone */
		ptx_chain_label(m, b, L_loop);
		BRA(b, NULL, 0, Lst);
		goto static_path;
	}
	BRA(b, L->pst, 0, L_loop);
	BRA(b, L->pt0, 1, L_loop);
	reload(L, b, RL_TOTAL | RL_WSA);
	I(b, NULL, 0, "ld", (".param", ".u64"), 2, R(L->state), A(W, GX_WORK_OFF_STATE));
	I(b, NULL, 0, "ld", (".param", ".u64"), 2, R(L->hints), A(W, GX_WORK_OFF_HINTS));
	I(b, NULL, 0, "ld", (".param", ".u64"), 2, R(L->stats), A(W, GX_WORK_OFF_STATS));
	I(b, NULL, 0, "ld", (".param", ".u32"), 2, R(L->chunk), A(W, GX_WORK_OFF_CHUNK));
	{
		const char *args[8] = {L->wsa, L->state, L->hints, L->stats, L->total, L->chunk, L->w, L->nw};
		rt_call(L, b, "begin", NULL, 8, args);
	}

	/* L_loop */
	ptx_chain_label(m, b, L_loop);
	BRA(b, L->pst, 0, Lst);
	I(b, NULL, 0, "setp", (".lt", ".u32"), 3, R(L->pq), R(L->u), R(L->uend));
	BRA(b, L->pq, 0, Lun);
	/* a chunk's end: thread 0 claims the next */
	BRA(b, L->pt0, 1, Lpub);
	reload(L, b, RL_WSA | (L->hooks ? RL_GRID | RL_W : 0));
	if (hx) {
		const char *vals[7] = {L->tstart, L->hn, L->w, L->hst, L->hx, L->hy, L->hz};
		I(b, NULL, 0, "setp", (".ne", ".u32"), 3, R(L->pq), R(L->uend), N(0));
		I(b, NULL, 0, "ld", (".local", ".u32"), 2, R(L->hst), A(L->ws, GX_WORK_WS_OFF_STEALS));
		/* the chunk that ended: kept in .local, not in registers across the body */
		I(b, NULL, 0, "ld", (".local", ".u64"), 2, R(L->tstart), A(L->hk, 0));
		I(b, NULL, 0, "ld", (".local", ".u32"), 2, R(L->hunit), A(L->hk, 8));
		I(b, NULL, 0, "ld", (".local", ".u32"), 2, R(L->hn), A(L->hk, 12));
		coords(L, b, L->hunit, L->hx, L->hy, L->hz);
		if (sched_sites(L, b, GDEV_HOOK_SCHED_EXIT, L->pq, L->cls, vals))
			return -ENOMEM;
		/* a class the runtime does not know is no class */
		I(b, NULL, 0, "setp", (".gt", ".u32"), 3, R(L->pq), R(L->cls), N(GX_WORK_CLASSES));
		I(b, L->pq, 0, "mov", (".u32"), 2, R(L->cls), N(0));
	}
	{
		const char *args[2] = {L->wsa, L->cls};
		rt_call(L, b, "next", L->r, 2, args);
	}
	I(b, NULL, 0, "mov", (".u32"), 2, R(L->cls), N(0));
	I(b, NULL, 0, "setp", (".ne", ".u64"), 3, R(L->pq), R(L->r), ptx_opnd_hex64(m, GX_WORK_ASK));
	BRA(b, L->pq, 0, Lgot);
	I(b, NULL, 0, "mov", (".u32"), 2, R(L->dec), N(0));
	if (hs) {
		const char *vals[7] = {L->ht0, L->hun, L->w, L->hst, L->hx, L->hy, L->hz};
		I(b, NULL, 0, "ld", (".local", ".u64"), 2, R(L->ht0), A(L->ws, GX_WORK_WS_OFF_T0));
		I(b, NULL, 0, "ld", (".local", ".u32"), 2, R(L->hun), A(L->ws, GX_WORK_WS_OFF_UNITS));
		I(b, NULL, 0, "ld", (".local", ".u32"), 2, R(L->hst), A(L->ws, GX_WORK_WS_OFF_STEALS));
		I(b, NULL, 0, "mov", (".u32"), 2, R(L->hx), N(0));
		I(b, NULL, 0, "mov", (".u32"), 2, R(L->hy), N(0));
		I(b, NULL, 0, "mov", (".u32"), 2, R(L->hz), N(0));
		if (sched_sites(L, b, GDEV_HOOK_SCHED_STEAL, NULL, L->dec, vals))
			return -ENOMEM;
	}
	I(b, NULL, 0, "setp", (".eq", ".u32"), 3, R(L->pq), R(L->dec), N(GDEV_DEFAULT));
	I(b, NULL, 0, "selp", (".u32"), 4, R(L->t), N(1), N(0), R(L->pq));
	{
		const char *args[2] = {L->wsa, L->t};
		rt_call(L, b, "steal", L->r, 2, args);
	}
	ptx_chain_label(m, b, Lgot);
	slot_addr(L, b);
	I(b, NULL, 0, "st", (".shared", ".u64"), 2, A(L->sa, 0), R(L->r));
	if (he) {
		const char *vals[7] = {L->tstart, L->hn, L->w, L->hst, L->hx, L->hy, L->hz};
		I(b, NULL, 0, "shr", (".b64"), 3, R(L->r2), R(L->r), N(32));
		I(b, NULL, 0, "cvt", (".u32", ".u64"), 2, R(L->hn), R(L->r2));
		I(b, NULL, 0, "cvt", (".u32", ".u64"), 2, R(L->hunit), R(L->r));
		I(b, NULL, 0, "setp", (".ne", ".u32"), 3, R(L->pq), R(L->hn), N(0));
		I(b, NULL, 0, "ld", (".local", ".u32"), 2, R(L->hst), A(L->ws, GX_WORK_WS_OFF_STEALS));
		I(b, NULL, 0, "mov", (".u64"), 2, R(L->tstart), R("%globaltimer"));
		coords(L, b, L->hunit, L->hx, L->hy, L->hz);
		if (sched_sites(L, b, GDEV_HOOK_SCHED_ENTER, L->pq, NULL, vals))
			return -ENOMEM;
	}
	/* everyone: the claim */
	ptx_chain_label(m, b, Lpub);
	I(b, NULL, 0, L->bar, (".sync"), 1, N(L->bar_id));
	slot_addr(L, b);
	I(b, NULL, 0, "ld", (".shared", ".u64"), 2, R(L->r), A(L->sa, 0));
	I(b, NULL, 0, "xor", (".b32"), 3, R(L->j), R(L->j), N(1));
	I(b, NULL, 0, "cvt", (".u32", ".u64"), 2, R(L->u), R(L->r));
	I(b, NULL, 0, "shr", (".b64"), 3, R(L->r2), R(L->r), N(32));
	I(b, NULL, 0, "cvt", (".u32", ".u64"), 2, R(L->t), R(L->r2));
	I(b, NULL, 0, "setp", (".eq", ".u32"), 3, R(L->pq), R(L->t), N(0));
	BRA(b, L->pq, 0, L_done);
	I(b, NULL, 0, "add", (".u32"), 3, R(L->uend), R(L->u), R(L->t));
	if (hx) {
		/* every thread reads the clock, thread 0 keeps it: a definition
		 * under @pt0 would keep the register's older value alive across
		 * the body (ptxas spilled a 128-register GEMM copy for it) */
		I(b, NULL, 0, "mov", (".u64"), 2, R(L->tstart), R("%globaltimer"));
		I(b, L->pt0, 0, "st", (".local", ".u64"), 2, A(L->hk, 0), R(L->tstart));
		I(b, L->pt0, 0, "st", (".local", ".u32"), 2, A(L->hk, 8), R(L->u));
		I(b, L->pt0, 0, "st", (".local", ".u32"), 2, A(L->hk, 12), R(L->t));
	}
	BRA(b, NULL, 0, Ltk);
	/* inside a chunk */
	ptx_chain_label(m, b, Lun);
	if (pi->unit_bar)
		I(b, NULL, 0, L->bar, (".sync"), 1, N(L->bar_id));
	ptx_chain_label(m, b, Ltk);
	I(b, NULL, 0, "mov", (".u32"), 2, R(L->unit), R(L->u));
	I(b, NULL, 0, "add", (".u32"), 3, R(L->u), R(L->u), N(1));
	BRA(b, NULL, 0, Lcl);
	/* STATIC */
static_path:
	ptx_chain_label(m, b, Lst);
	if (pi->unit_bar)
		I(b, NULL, 0, L->bar, (".sync"), 1, N(L->bar_id));
	reload(L, b, RL_TOTAL | RL_NW);
	I(b, NULL, 0, "add", (".u32"), 3, R(L->sunit), R(L->sunit), R(L->nw));
	I(b, NULL, 0, "setp", (".ge", ".u32"), 3, R(L->pq), R(L->sunit), R(L->total));
	BRA(b, L->pq, 0, L_done);
	I(b, NULL, 0, "mov", (".u32"), 2, R(L->unit), R(L->sunit));
	/* the unit's coordinates (and the grid the body reads) */
	ptx_chain_label(m, b, Lcl);
	reload(L, b, RL_GRID);
	coords(L, b, L->unit, L->v.cx, L->v.cy, L->v.cz);
	ptx_chain_label(m, b, Lbody);
	return b->failed ? -ENOMEM : 0;
}

#undef R
#undef N
#undef A
#undef I
#undef BRA

static int add_decl(struct ptx_module *m, struct ptx_func *fn, enum ptx_space space, const char *space_str,
		    unsigned align, const char *type, const char *name, long long bytes)
{
	struct ptx_stmt *sd = ptx_alloc(m, sizeof(*sd));
	if (!sd)
		return -ENOMEM;
	sd->kind = PTX_STMT_DECL;
	sd->decl.space = space;
	sd->decl.space_str = space_str;
	sd->decl.align = align;
	sd->decl.type = type;
	sd->decl.name = name;
	sd->decl.ndims = 1;
	sd->decl.dims[0] = bytes;
	ptx_insert_before(fn, fn->head, sd, sd);
	return 0;
}

static int transform(struct loop_pass *ps, struct ptx_func *fn, const struct ptx_persist *pi, const char *orig,
		     int so)
{
	struct ptx_module *m = ps->m;
	struct loop L0 = {.ps = ps, .m = m, .fn = fn, .orig = orig, .bar_id = pi->bar_id, .so = so};
	struct loop *L = &L0;
	if (new_regs(L))
		return gx_err(-ENOMEM);
	L->bar = ptx_module_target_sm(m) >= 70 ? "barrier" : "bar";
	const char *L_loop = ptx_fresh_name(m, "$", "Lloop"), *L_done = ptx_fresh_name(m, "$", "Ldone");
	if (!L_loop || !L_done)
		return gx_err(-ENOMEM);
	/* 1. Virtualize every %ctaid/%nctaid read of the body (hook sites too);
	 * 2. ret/exit → next unit (guard kept). */
	ptx_for_each_stmt(fn, s, nxt) {
		if (s->kind != PTX_STMT_INSN)
			continue;
		for (unsigned i = 0; i < s->insn.nops; i++)
			opnd_rewrite(s->insn.ops[i], &L->v);
		if (!strcmp(s->insn.opcode, "ret") || !strcmp(s->insn.opcode, "exit")) {
			struct ptx_opnd *o = ptx_opnd_id(m, L_loop);
			struct ptx_opnd **ops = ptx_alloc(m, sizeof(*ops));
			if (!o || !ops)
				return gx_err(-ENOMEM);
			ops[0] = o;
			s->insn.opcode = "bra";
			s->insn.nmods = 0;
			s->insn.nops = 1;
			s->insn.ops = ops;
		}
	}
	/* 3. The descriptor, by value. */
	struct ptx_decl pd = {0};
	pd.space = PTX_SPACE_PARAM;
	pd.space_str = ".param";
	pd.align = 8;
	pd.type = ".b8";
	pd.name = ptx_strdup(m, GX_WORK_PARAM);
	pd.ndims = 1;
	pd.dims[0] = GX_WORK_SIZE;
	if (!pd.name || ptx_func_add_param(m, fn, &pd))
		return gx_err(-ENOMEM);
	/* 4. The loop head before the body, the exit after it. */
	struct ptx_chain head = {0}, tail = {0};
	if (build_head(L, pi, &head, L_loop, L_done))
		return m->err[0] ? gx_err(-EINVAL) : gx_err(-ENOMEM);
	ptx_chain_label(m, &tail, L_done);
	ptx_chain_insn(m, &tail, NULL, 0, "ret", 0, NULL, 0);
	if (tail.failed || (!so && add_decl(m, fn, PTX_SPACE_SHARED, ".shared", 8, ".b8", L->slot, 16)) ||
	    (!so && add_decl(m, fn, PTX_SPACE_LOCAL, ".local", 8, ".b8", L->ws, GX_WORK_WS_SIZE)) ||
	    (L->hooks && add_decl(m, fn, PTX_SPACE_LOCAL, ".local", 8, ".b8", L->sctx, GDEV_CTX_SIZE)) ||
	    (L->hooks && add_decl(m, fn, PTX_SPACE_LOCAL, ".local", 8, ".b8", L->hk, 16)))
		return gx_err(-ENOMEM);
	ptx_insert_before(fn, ptx_func_entry_point(fn), head.head, head.tail);
	ptx_insert_before(fn, NULL, tail.head, tail.tail);
	return 0;
}

/* A copy of fn's item under `name`, inserted after `after`: statements and
 * operands are copied (the transform edits them), strings shared. */
static struct ptx_item *copy_func(struct ptx_module *m, struct ptx_item *it, struct ptx_item *after,
				  const char *name)
{
	struct ptx_item *c = ptx_alloc(m, sizeof(*c));
	if (!c || !name)
		return NULL;
	*c = *it;
	c->prev = c->next = NULL;
	c->func.name = name;
	c->func.linkage &= ~(unsigned)(PTX_LINK_EXTERN | PTX_LINK_WEAK | PTX_LINK_COMMON);
	struct ptx_chain src = {.head = it->func.head, .tail = it->func.tail}, dst = {0};
	if (ptx_chain_copy(m, &dst, &src))
		return NULL;
	c->func.head = dst.head;
	c->func.tail = dst.tail;
	ptx_item_insert_after(m, after, c, c);
	return c;
}

/* .maxnreg for the copy of kernel `orig` (0: none, see gx_ptx.h). An
 * existing .maxnreg of the kernel stays the lower bound. */
static int cap_regs(struct loop_pass *ps, struct ptx_func *fn, const char *orig)
{
	return ptx_kernel_cap_regs(ps->m, ps->ctx->opts, fn, orig, 0);
}

/* Transform kernel `it` (in place, or a copy inserted after `after` named
 * <prefix>_<tag>_K) and log it; *out: the item transformed. 0 or -errno. */
static int persist_one(struct loop_pass *ps, struct ptx_item *it, struct ptx_item *after,
		       const struct ptx_persist *pi, const char *tag, int so, struct ptx_item **out)
{
	struct ptx_module *m = ps->m;
	int copy = ps->ctx->opts->persistent == GX_PTX_PERSISTENT_COPY;
	struct ptx_item *t = it;
	int err = 0;
	if (copy && !(t = copy_func(m, it, after, ptx_sprintf(m, "%s_%s_%s", m->fresh_prefix, tag, it->func.name))))
		err = gx_err(-ENOMEM);
	if (!err)
		err = transform(ps, &t->func, pi, it->func.name, so);
	if (!err)
		err = cap_regs(ps, &t->func, it->func.name);
	if (err) {
		if (!m->err[0])
			snprintf(m->err, sizeof(m->err), "out of memory");
		return err;
	}
	*out = t;
	const char *sos = so ? ", static only" : "";
	if (copy)
		ptx_pass_log(ps->ctx,
			     "persistent: %s: copy %s transformed (work descriptor: "
			     "parameter %u %s, loop barrier %u, unit barrier %s%s)",
			     it->func.name, t->func.name, t->func.nparams, GX_WORK_PARAM, pi->bar_id,
			     pi->unit_bar ? "yes" : "no", sos);
	else
		ptx_pass_log(ps->ctx,
			     "persistent: %s: transformed (work descriptor: trailing parameter "
			     "%s, loop barrier %u, unit barrier %s%s)",
			     it->func.name, GX_WORK_PARAM, pi->bar_id, pi->unit_bar ? "yes" : "no", sos);
	return 0;
}

int ptx_pass_persistent(struct ptx_module *m, struct ptx_pass_ctx *ctx,
			const struct ptx_policy *pol, const struct ptx_persist_set *kernels,
			struct ptx_tramps *tr)
{
	struct loop_pass st = {.m = m, .ctx = ctx, .pol = pol, .kernels = kernels, .tr = tr,
			       .rt = {.m = m, .text = ctx->opts->persist_rt, .len = ctx->opts->persist_rt_len}};
	struct loop_pass *ps = &st;
	unsigned fl = ps->ctx->opts->flags;
	int so = !!(fl & GX_PTX_F_PERSIST_STATIC);
	/* a second, static-only copy beside the claiming one (copy mode) */
	int both = ps->ctx->opts->persistent == GX_PTX_PERSISTENT_COPY && !so && (fl & GX_PTX_F_PERSIST_STATIC_COPY);
	ptx_for_each_item(m, it) {
		const struct ptx_persist *pi = it->kind == PTX_ITEM_FUNC ? ptx_persist_find(ps->kernels, &it->func) : NULL;
		if (!pi)
			continue;
		struct ptx_item *t = it;
		int err = persist_one(ps, it, it, pi, "pw", so, &t);
		if (!err && both)
			err = persist_one(ps, it, t, pi, "ps", 1, &t);
		if (err)
			return err;
		ps->ctx->res->nr_persistent++; /* kernels, not copies */
		it = t; /* the copies are not visited again */
	}
	return 0;
}
