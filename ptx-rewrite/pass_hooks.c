/* pass_hooks.c — insert hook call sites: kernel entry, before every ret/exit
 * of a kernel, before global/generic ld/ldu/st/atom/red (any vector width,
 * .nc, cache and scope modifiers), and before membar/fence.
 *
 * A site is a self-contained `{ }` block (its registers and .params are
 * declared inside it, so the function's own declarations, registers,
 * predicates and labels are untouched) that computes the lane's effective
 * address and runs the handler (site.c). A guarded instruction
 * (`@%p ld ...`) gets a call with the same guard, so only the lanes for which
 * the instruction executes reach the hook. Device functions (.func) get mem
 * and fence hooks too; their kernel_id is the FNV-1a hash of the function's
 * own name (the caller is not known statically), and bindings match their
 * kernel glob against that name. Policy code, stubs and trampolines (names
 * with the fresh prefix) are never instrumented. */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "ptx-rewrite/block_barrier_internal.h"
#include "ptx-rewrite/pass_internal.h"
#include "ptx-rewrite/passlib_internal.h"
#include "ptx-rewrite/policy_internal.h"
#include "ptx-rewrite/site_internal.h"

/* The pass's state: the module, the policy's names, the sites of this
 * rewrite, and for the kernel at hand its entry prologue and block site. */
struct hooks {
	struct ptx_module *m;
	struct ptx_pass_ctx *ctx;
	const struct ptx_policy *pol;
	struct ptx_sites sites;
	/* the kernel prologue the entry sites were moved past (entry_site_pos) */
	struct ptx_prologue pro;
	/* where this kernel's GDEV_HOOK_BLOCK handlers go (GDEV_HOOK_ENTRY or
	 * GDEV_HOOK_EXIT; 0: none) */
	unsigned block_at;
	/* GX_PTX_F_BLOCK_BARRIER: the barrier they go before instead of the
	 * entry (block_at is then GDEV_HOOK_ENTRY) */
	struct ptx_stmt *block_bar;
};

/* Size in bytes of a register as declared in fn (or 8 if not found). */
static unsigned reg_size(const struct ptx_func *fn, const char *name)
{
	for (const struct ptx_stmt *s = fn->head; s; s = s->next) {
		if (s->kind != PTX_STMT_DECL || s->decl.space != PTX_SPACE_REG)
			continue;
		const char *d = s->decl.name;
		size_t n = strlen(d);
		if (strncmp(name, d, n))
			continue;
		const char *rest = name + n;
		if (*rest == 0 && !s->decl.range)
			return ptx_type_size(s->decl.type);
		if (s->decl.range && *rest >= '0' && *rest <= '9' &&
		    strspn(rest, "0123456789") == strlen(rest))
			return ptx_type_size(s->decl.type);
	}
	return 8;
}

/* Module-level declaration of `name`, or NULL. */
static const struct ptx_decl *module_var(struct ptx_module *m, const char *name)
{
	ptx_for_each_item(m, it) if (it->kind == PTX_ITEM_DECL && !strcmp(it->decl.name, name))
		return &it->decl;
	return NULL;
}

/* Function-scope declaration of a non-register name (shared/local arrays). */
static const struct ptx_decl *func_var(const struct ptx_func *fn, const char *name)
{
	for (const struct ptx_stmt *s = fn->head; s; s = s->next)
		if (s->kind == PTX_STMT_DECL && s->decl.space != PTX_SPACE_REG &&
		    !strcmp(s->decl.name, name))
			return &s->decl;
	for (unsigned i = 0; i < fn->nparams; i++)
		if (!strcmp(fn->params[i].name, name))
			return &fn->params[i];
	return NULL;
}

/* Statements computing the generic address of a memory operand into the
 * site's address register, appended to *c. Returns 1 when the operand is
 * not a global/generic location we can follow (then the site is left out
 * and logged), 0, or -ENOMEM. */
static int addr_setup(struct hooks *ps, const struct ptx_func *fn,
		      const struct ptx_opnd *a, enum ptx_space space, struct ptx_chain *c)
{
	struct ptx_module *m = ps->m;
	const char *A = ptx_site_addr_reg(&ps->sites);
	if (!A)
		return gx_err(-ENOMEM);
	if (!a || a->kind != PTX_OPND_ADDR || a->n != 1)
		return 1;
	const struct ptx_opnd *base = a->elems[0];
	int cvta = space == PTX_SPACE_GLOBAL;
	long long off = a->off;
	if (base->kind == PTX_OPND_INT) {
		ptx_chain_insn(m, c, NULL, 0, "mov", PTX_MODS(".u64"), 2, ptx_opnd_id(m, A),
			       ptx_opnd_int(m, base->ival + a->off));
		off = 0;
	} else if (base->kind != PTX_OPND_ID || !base->text) {
		return 1;
	} else if (base->text[0] == '%') {
		if (reg_size(fn, base->text) == 4)
			ptx_chain_insn(m, c, NULL, 0, "cvt", PTX_MODS(".u64", ".u32"), 2,
				       ptx_opnd_id(m, A), ptx_opnd_id(m, base->text));
		else
			ptx_chain_insn(m, c, NULL, 0, "mov", PTX_MODS(".b64"), 2, ptx_opnd_id(m, A),
				       ptx_opnd_id(m, base->text));
	} else {
		/* A variable: only global ones are hooked (a generic access to a
		 * shared/local/const symbol is not a global access). */
		const struct ptx_decl *d = func_var(fn, base->text);
		if (!d)
			d = module_var(m, base->text);
		if (d && d->space != PTX_SPACE_GLOBAL)
			return 1;
		ptx_chain_insn(m, c, NULL, 0, "mov", PTX_MODS(".u64"), 2, ptx_opnd_id(m, A),
			       ptx_opnd_id(m, base->text));
		cvta = 1;
	}
	if (off)
		ptx_chain_insn(m, c, NULL, 0, "add", PTX_MODS(".s64"), 3, ptx_opnd_id(m, A),
			       ptx_opnd_id(m, A), ptx_opnd_int(m, off));
	if (cvta)
		ptx_chain_insn(m, c, NULL, 0, "cvta", PTX_MODS(".global", ".u64"), 2,
			       ptx_opnd_id(m, A), ptx_opnd_id(m, A));
	return c->failed ? gx_err(-ENOMEM) : 0;
}

/* Does binding bd put a handler in kernel fn (a function, a glob that takes
 * fn's name)? */
static int binds_kernel(const struct gx_hook_binding *bd, const struct ptx_func *fn)
{
	return bd->func && (!bd->kernel_glob || !fnmatch(bd->kernel_glob, fn->name, 0));
}

/* Does bd put a handler at fn's sites of kind `hook`: its own kind, or for a
 * block handler the kind this kernel's block_at chose. */
static int binds_at(const struct hooks *ps, const struct gx_hook_binding *bd,
		    const struct ptx_func *fn, unsigned hook)
{
	return (bd->hook == hook || (bd->hook == GDEV_HOOK_BLOCK && ps->block_at == hook)) &&
	       binds_kernel(bd, fn);
}

/* Does the statement make a block's warps wait for each other: a CTA barrier
 * (bar, barrier; not their .warp forms) or an mbarrier (blk_scan looks in the
 * kernel and in what it calls). There warp 0's entry probe holds every warp
 * of its block at the first barrier: a block handler goes to the exit
 * sites instead, after the last barrier (GPU run 74: threadhist on a row
 * softmax of 4 warps +10 % at entry, +7.6 % at exit; Triton's softmax +7.0
 * -> +4.4 %; a stencil without barriers +1.6 % at entry, +4.0 % at exit). */
static int waits_for_warps(const struct ptx_stmt *s)
{
	if (s->kind != PTX_STMT_INSN)
		return 0;
	if (!strcmp(s->insn.opcode, "mbarrier"))
		return 1;
	return (!strcmp(s->insn.opcode, "bar") || !strcmp(s->insn.opcode, "barrier")) &&
	       !ptx_insn_has_mod(&s->insn, ".warp");
}

/* What a function's code does, with the functions it calls (depth-limited:
 * PTX allows recursion): BLK_SYNCS waits for other warps, BLK_LEAVES may
 * end the thread elsewhere than at the kernel's own ret/exit (an `exit` in a
 * callee, an indirect call, a callee without a body, a chain too deep). */
#define BLK_SYNCS 1u
#define BLK_LEAVES 2u
static unsigned blk_scan(struct ptx_module *m, struct ptx_func *fn, unsigned depth)
{
	unsigned r = 0;
	ptx_for_each_stmt(fn, s, nxt) {
		if (s->kind != PTX_STMT_INSN)
			continue;
		if (waits_for_warps(s))
			r |= BLK_SYNCS;
		if (!fn->is_entry && !strcmp(s->insn.opcode, "exit"))
			return r | BLK_LEAVES;
		struct ptx_call_parts cp;
		if (strcmp(s->insn.opcode, "call") || ptx_call_parts(&s->insn, &cp))
			continue;
		struct ptx_item *callee = cp.callee && !cp.proto && cp.callee->kind == PTX_OPND_ID
						  ? ptx_find_func(m, cp.callee->text) : NULL;
		if (!callee || !callee->func.has_body || depth >= 8)
			return r | BLK_LEAVES;
		r |= blk_scan(m, &callee->func, depth + 1);
		if (r & BLK_LEAVES)
			return r;
	}
	return r;
}

/* Where a kernel's block handlers go: its exits when its warps wait for each
 * other and every thread leaves by one of its own ret or exit statements (a
 * body may also end without one, or call a function that exits: a thread
 * leaving that way passes no exit site), else its entry. */
static unsigned block_site(struct ptx_module *m, struct ptx_func *fn)
{
	const struct ptx_stmt *last = NULL; /* the last instruction or label */
	ptx_for_each_stmt(fn, s, nxt)
		if (s->kind == PTX_STMT_LABEL || s->kind == PTX_STMT_INSN)
			last = s;
	if (!last || last->kind != PTX_STMT_INSN || last->insn.guard ||
	    (strcmp(last->insn.opcode, "ret") && strcmp(last->insn.opcode, "exit") &&
	     strcmp(last->insn.opcode, "bra")))
		return GDEV_HOOK_ENTRY;
	return blk_scan(m, fn, 0) == BLK_SYNCS ? GDEV_HOOK_EXIT : GDEV_HOOK_ENTRY;
}

/* Does a block handler go into kernel fn at all (its placement is worked out
 * and logged only then). */
static int block_bound(const struct gx_ptx_rewrite_opts *o, const struct ptx_func *fn)
{
	for (size_t i = 0; i < o->nr_bindings; i++)
		if (o->bindings[i].hook == GDEV_HOOK_BLOCK && binds_kernel(&o->bindings[i], fn))
			return 1;
	return 0;
}

/* Insert the sites for `hook` before pos (NULL: at the end): one per bound
 * handler, or the built-in one without a policy (site.c). addr: the
 * address code or NULL (each site prints its own copy). */
static int add_sites(struct hooks *ps, struct ptx_func *fn, struct ptx_stmt *pos,
		     unsigned hook, struct ptx_chain *addr, unsigned info, const char *guard,
		     int guard_neg)
{
	const struct gx_ptx_rewrite_opts *o = ps->ctx->opts;
	unsigned long long kid = gx_kernel_id(fn->name);
	if (!o->policy_ptx)
		return ptx_site_insert(&ps->sites, fn, pos, hook, NULL, kid, addr, info, guard,
				       guard_neg, &ps->pro);
	for (size_t i = 0; i < o->nr_bindings; i++) {
		const struct gx_hook_binding *bd = &o->bindings[i];
		if (!binds_at(ps, bd, fn, hook))
			continue;
		ps->sites.block_site = bd->hook == GDEV_HOOK_BLOCK;
		int err = ptx_site_insert(&ps->sites, fn, pos, hook, ptx_policy_name(ps->pol, bd->func),
					  kid, addr, info, guard, guard_neg, &ps->pro);
		ps->sites.block_site = false;
		if (err)
			return err;
	}
	return 0;
}

static unsigned mem_op(enum ptx_op_class c)
{
	switch (c) {
	case PTX_OP_LD:
		return GDEV_MEM_LOAD;
	case PTX_OP_ST:
		return GDEV_MEM_STORE;
	case PTX_OP_ATOM:
		return GDEV_MEM_ATOMIC;
	case PTX_OP_RED:
		return GDEV_MEM_REDUCE;
	default:
		return 0;
	}
}

/* Statements an entry site may be moved past and re-executed after its
 * handler (entry_site_pos): no memory access but parameter loads, no branch,
 * label or warp-collective, no volatile special register (clocks, timers,
 * counters, %smid, %warpid: a second read may differ). */
static int reexecutable(const struct ptx_stmt *s)
{
	static const char *const ops[] = {
		"mov", "add", "sub", "mul", "mad", "mul24", "mad24", "sad", "and", "or",
		"xor", "not", "cnot", "shl", "shr", "setp", "selp", "set", "cvt", "cvta",
		"min", "max", "neg", "abs", "bfe", "bfi", "prmt", "popc", "clz", "brev",
		"lop3", "shf", NULL};
	static const char *const vol[] = {"%clock", "%globaltimer", "%pm", "%smid", "%warpid",
					  "%nwarpid", "%nsmid", NULL};
	if (s->kind != PTX_STMT_INSN)
		return 0;
	const struct ptx_insn *in = &s->insn;
	if (!in->nops || !in->ops[0] || in->ops[0]->kind != PTX_OPND_ID)
		return 0;
	int ok = 0;
	if (!strcmp(in->opcode, "ld"))
		ok = ptx_insn_has_mod(in, ".param") && in->nops == 2 && in->ops[1] &&
		     in->ops[1]->kind == PTX_OPND_ADDR;
	for (unsigned i = 0; !ok && ops[i]; i++)
		ok = !strcmp(in->opcode, ops[i]);
	for (unsigned i = 1; ok && i < in->nops; i++) {
		const struct ptx_opnd *o = in->ops[i];
		if (!o || o->kind != PTX_OPND_ID || !o->text)
			continue;
		for (unsigned k = 0; vol[k]; k++)
			if (!strncmp(o->text, vol[k], strlen(vol[k])))
				return 0;
	}
	return ok;
}

#define PTX_ENTRY_MOVE_MAX 128 /* see entry_site_pos */

/* Every entry handler bound to fn (or the built-in one) passes `test`. */
static int all_entry_handlers(struct hooks *ps, struct ptx_func *fn,
			      int (*test)(struct hooks *, struct ptx_func *, const char *))
{
	const struct gx_ptx_rewrite_opts *o = ps->ctx->opts;
	if (!o->policy_ptx)
		return test(ps, fn, NULL);
	int any = 0;
	for (size_t i = 0; i < o->nr_bindings; i++) {
		const struct gx_hook_binding *bd = &o->bindings[i];
		if (!binds_at(ps, bd, fn, GDEV_HOOK_ENTRY))
			continue;
		int r = test(ps, fn, ptx_policy_name(ps->pol, bd->func));
		if (r <= 0)
			return r;
		any = 1;
	}
	return any;
}

static int uniform_exit(struct hooks *ps, struct ptx_func *fn, const char *func)
{
	return ptx_site_uniform_exit(&ps->sites, fn, func);
}

static int small_inlined(struct hooks *ps, struct ptx_func *fn, const char *func)
{
	(void)fn;
	size_t ninsn = 0;
	int r = ptx_site_inlines(&ps->sites, GDEV_HOOK_ENTRY, func, &ninsn);
	return r <= 0 ? r : ninsn <= PTX_ENTRY_MOVE_MAX;
}

/* Where the entry site goes.
 *
 * Handlers that send most warps away before their election (inlined, with a
 * warp-uniform early exit: launchlate "not block 0", threadhist "not warp
 * 0"): after the kernel's whole prologue, the re-executable statements the
 * body starts with (parameter loads, special-register reads, integer
 * arithmetic, the bounds test; up to the first branch, label, memory access,
 * call, barrier, scope, or read of a clock, timer, %smid or %warpid). Before
 * the kernel's first instruction, the uniform test and its branch delayed
 * every warp's start: on the H200 launchlate cost stencil +3.7 % and 1M-block
 * vadd +2.6 %, +0.4 % and -0.4 % after the prologue (threadhist's stencil
 * +3.4 % -> +1.6 %); ptxas issues the kernel's and the site's reads
 * together. The kernel's values are then live across the site: the
 * handler's path re-executes the prologue after the handler (site.c,
 * ps->pro), so they are dead inside it and add nothing to its register
 * count; the warps that leave early keep theirs.
 *
 * Handlers every warp runs (no uniform exit): re-executing the prologue
 * would be on every warp's path, and waiting for it cost more than it saved
 * (entry+exit with an empty handler called: vadd +8.3 % -> +13 %). Small
 * inlined ones go after the leading `ld.param`s and special-register `mov`s,
 * without re-execution (ptxas shares those reads with the handler's; a
 * handler over PTX_ENTRY_MOVE_MAX instructions would hold those values live
 * across its cold paths), the others first.
 *
 * GX_PTX_F_ENTRY_TOP (GX_PTX_ENTRY_TOP=1) keeps every entry site first (the
 * A/B switch of bench/hook_overhead). Sets ps->pro when the handler's
 * path must re-execute the prologue (NULL: not). Returns the position, or
 * NULL with *err set. */
static struct ptx_stmt *entry_site_pos(struct hooks *ps, struct ptx_func *fn, int *err)
{
	const struct gx_ptx_rewrite_opts *o = ps->ctx->opts;
	struct ptx_stmt *first = ptx_func_entry_point(fn), *s = first, *last = NULL;
	ps->pro = (struct ptx_prologue){0};
	*err = 0;
	if (o->flags & GX_PTX_F_ENTRY_TOP)
		return first;
	int uni = all_entry_handlers(ps, fn, uniform_exit);
	int small = uni > 0 ? 0 : all_entry_handlers(ps, fn, small_inlined);
	if (uni < 0 || small < 0) {
		*err = uni < 0 ? uni : small;
		return NULL;
	}
	if (!uni && !small)
		return first;
	for (; s; s = s->next) {
		if (s->kind == PTX_STMT_VERBATIM && !strncmp(s->text, ".loc", 4))
			continue;
		if (s->kind == PTX_STMT_DECL && s->decl.space == PTX_SPACE_REG)
			continue;
		if (!reexecutable(s))
			break;
		/* without re-execution: parameter loads and special-register
		 * reads only (their values are cheap to keep) */
		if (!uni && !(!strcmp(s->insn.opcode, "ld") ||
			      (!strcmp(s->insn.opcode, "mov") && s->insn.nops == 2 &&
			       s->insn.ops[1] && (s->insn.ops[1]->kind == PTX_OPND_INT ||
						  (s->insn.ops[1]->kind == PTX_OPND_ID &&
						   s->insn.ops[1]->text[0] == '%'))) ) )
			break;
		if (!uni && s->insn.guard)
			break;
		last = s;
	}
	if (last && uni) {
		ps->pro = (struct ptx_prologue){first, last, s};
	}
	return s;
}

/* The sites of fn's statements: exits, fences, memory accesses. */
static int mem_sites(struct hooks *ps, struct ptx_func *fn, unsigned site_hooks, unsigned *skipped)
{
	unsigned hooks = ps->ctx->opts->hooks;
	int err;
	ptx_for_each_stmt(fn, s, nxt) {
		if (s->kind != PTX_STMT_INSN)
			continue;
		struct ptx_opinfo oi;
		enum ptx_op_class c = ptx_classify(&s->insn, &oi);
		struct ptx_chain addr = {0};
		unsigned hook = 0, info = 0;
		if ((c == PTX_OP_RET || c == PTX_OP_EXIT) && fn->is_entry &&
		    (site_hooks & GDEV_HOOK_EXIT)) {
			hook = GDEV_HOOK_EXIT;
		} else if (c == PTX_OP_FENCE && (hooks & GDEV_HOOK_FENCE)) {
			hook = GDEV_HOOK_FENCE;
		} else if (mem_op(c) && (hooks & GDEV_HOOK_MEM) &&
			   (oi.space == PTX_SPACE_GLOBAL || oi.space == PTX_SPACE_GENERIC)) {
			int skip = addr_setup(ps, fn,
					      oi.addr_op >= 0 ? s->insn.ops[oi.addr_op] : NULL,
					      oi.space, &addr);
			if (skip < 0)
				return skip;
			if (skip) {
				(*skipped)++;
				continue;
			}
			hook = GDEV_HOOK_MEM;
			unsigned space = oi.space == PTX_SPACE_GLOBAL ? GDEV_SPACE_GLOBAL
								      : GDEV_SPACE_GENERIC;
			info = (oi.size & 0xffff) | mem_op(c) << 16 | space << 24;
		}
		if (!hook)
			continue;
		err = add_sites(ps, fn, s, hook, &addr, info, s->insn.guard, s->insn.guard_neg);
		if (err)
			return err;
	}
	return 0;
}

static int hook_func(struct hooks *ps, struct ptx_func *fn)
{
	unsigned hooks = ps->ctx->opts->hooks;
	int err;
	unsigned skipped = 0;
	ps->block_at = 0;
	ps->block_bar = NULL;
	if ((hooks & GDEV_HOOK_BLOCK) && ps->ctx->opts->policy_ptx && fn->is_entry &&
	    block_bound(ps->ctx->opts, fn))
		ps->block_at = ps->ctx->opts->flags & GX_PTX_F_BLOCK_ENTRY ? GDEV_HOOK_ENTRY :
			       ps->ctx->opts->flags & GX_PTX_F_BLOCK_EXIT  ? GDEV_HOOK_EXIT :
									     block_site(ps->m, fn);
	/* Before the first barrier every thread passes once, when asked for,
	 * no entry handler shares the site and no callee may end a thread. */
	if (ps->block_at && (ps->ctx->opts->flags & GX_PTX_F_BLOCK_BARRIER) && !(hooks & GDEV_HOOK_ENTRY) &&
	    !(blk_scan(ps->m, fn, 0) & BLK_LEAVES)) {
		ps->block_bar = ptx_once_barrier(fn, &err);
		if (err)
			return err;
		if (ps->block_bar) {
			ps->block_at = GDEV_HOOK_ENTRY;
			ptx_pass_log(ps->ctx, "hooks: %s: block handlers before its first barrier "
					      "(GX_PTX_BLOCK_SITE=barrier)", fn->name);
		}
	}
	if (ps->block_at == GDEV_HOOK_EXIT)
		ptx_pass_log(ps->ctx, "hooks: %s: block handlers at its exits (%s)", fn->name,
			     ps->ctx->opts->flags & GX_PTX_F_BLOCK_EXIT ? "GX_PTX_BLOCK_SITE=exit"
									: "its warps meet at barriers");
	unsigned site_hooks = hooks | ps->block_at;
	/* sampled memory sites in loops keep their sample for the loop's way
	 * out (GX_PTX_F_MEM_DEFER, site_defer.c): the loops found before any
	 * site goes in */
	struct ptx_defer defer;
	if ((hooks & GDEV_HOOK_MEM) && (ps->ctx->opts->flags & GX_PTX_F_MEM_DEFER)) {
		if ((err = ptx_defer_scan(fn, &defer)))
			return err;
		ps->sites.defer = &defer;
	}
	err = mem_sites(ps, fn, site_hooks, &skipped);
	if (!err && ps->sites.defer)
		err = ptx_site_flushes(&ps->sites, fn);
	if (ps->sites.defer) {
		ps->sites.defer = NULL;
		ptx_defer_free(&defer);
	}
	if (err)
		return err;
	/* The entry site last: an inlined handler's own memory accesses and
	 * returns must not be hooked. It goes after the kernel's prologue
	 * (entry_site_pos), a site of the statement there included. */
	if (fn->is_entry && (site_hooks & GDEV_HOOK_ENTRY)) {
		struct ptx_stmt *pos = ps->block_bar ? ps->block_bar : entry_site_pos(ps, fn, &err);
		if (!err)
			err = add_sites(ps, fn, pos, GDEV_HOOK_ENTRY, NULL, 0, NULL, 0);
		ps->pro = (struct ptx_prologue){0};
		if (err)
			return err;
	}
	if (skipped)
		ptx_pass_log(ps->ctx, "hooks: %s: %u memory instruction%s with an address form "
			     "the mem hook does not follow (left unhooked)",
			     fn->name, skipped, skipped == 1 ? "" : "s");
	return 0;
}

static int reserved(const struct ptx_module *m, const char *name)
{
	size_t n = strlen(m->fresh_prefix);
	return !strncmp(name, m->fresh_prefix, n) && name[n] == '_';
}

int ptx_pass_hooks(struct ptx_module *m, struct ptx_pass_ctx *ctx, struct ptx_policy *pol,
		   struct ptx_tramps *tr, unsigned *nr_elided)
{
	if (!(ctx->opts->hooks & GDEV_HOOKS_SITE))
		return 0;
	struct hooks st = {.m = m, .ctx = ctx, .pol = pol}, *ps = &st;
	ptx_sites_init(&ps->sites, m, ctx, pol, tr);
	int err = 0;
	ptx_for_each_item(m, it) {
		if (it->kind != PTX_ITEM_FUNC || !it->func.has_body || reserved(m, it->func.name))
			continue;
		if ((err = hook_func(ps, &it->func)))
			break;
	}
	*nr_elided = ps->sites.nr_elided;
	ptx_sites_free(&ps->sites);
	return err;
}
