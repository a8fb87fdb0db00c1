/* pass_hooks.c — insert hook call sites: kernel entry, before every ret/exit
 * of a kernel, before global/generic ld/ldu/st/atom/red (any vector width,
 * .nc, cache and scope modifiers), and before membar/fence.
 *
 * A site is a self-contained `{ }` block (its registers and .params are
 * declared inside it, so the function's own declarations, registers,
 * predicates and labels are untouched) that computes the lane's effective
 * address and calls a trampoline (pass_tramp.c). A guarded instruction
 * (`@%p ld ...`) gets a call with the same guard, so only the lanes for which
 * the instruction executes reach the hook. Device functions (.func) get mem
 * and fence hooks too; their kernel_id is the FNV-1a hash of the function's
 * own name (the caller is not known statically), and bindings match their
 * kernel glob against that name. Policy code, stubs and trampolines (names
 * with the fresh prefix) are never instrumented. */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "ptx-rewrite/passes.h"

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
static int addr_setup(struct ptx_passes *ps, const struct ptx_func *fn,
		      const struct ptx_opnd *a, enum ptx_space space, struct ptx_chain *c)
{
	struct ptx_module *m = ps->m;
	const char *A = ptx_tramp_addr_reg(ps);
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

/* Insert the sites for `hook` before pos (NULL: at the end): one per bound
 * handler, or the built-in one without a policy (pass_site.c). addr: the
 * address code or NULL (each site prints its own copy). */
static int add_sites(struct ptx_passes *ps, struct ptx_func *fn, struct ptx_stmt *pos,
		     unsigned hook, struct ptx_chain *addr, unsigned info, const char *guard,
		     int guard_neg)
{
	const struct gx_ptx_rewrite_opts *o = ps->ctx->opts;
	unsigned long long kid = gx_kernel_id(fn->name);
	if (!o->policy_ptx)
		return ptx_site_insert(ps, fn, pos, hook, NULL, kid, addr, info, guard, guard_neg);
	for (size_t i = 0; i < o->nr_bindings; i++) {
		const struct gx_hook_binding *bd = &o->bindings[i];
		if (bd->hook != hook || !bd->func)
			continue;
		if (bd->kernel_glob && fnmatch(bd->kernel_glob, fn->name, 0))
			continue;
		int err = ptx_site_insert(ps, fn, pos, hook, ptx_link_name(ps, bd->func), kid, addr,
					  info, guard, guard_neg);
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

/* Where the entry site goes. Its handlers inlined: after the kernel's
 * leading parameter loads and special-register reads (`ld.param`, `mov`),
 * before anything else (arithmetic, a label, branch, memory access, call,
 * barrier or scope). The handler cannot observe those, and the site's own
 * special-register reads and election then share a basic block with the
 * kernel's: ptxas issues both sets together and reuses the kernel's reads
 * for the handler's (%ctaid, %tid), instead of running the whole site before
 * the kernel's first instruction is issued; handlers of at most
 * PTX_ENTRY_MOVE_MAX instructions. Arithmetic is not passed over:
 * its results would be live across the handler (more registers). A called
 * handler stays first: under the call ABI every value live across the call
 * costs registers (a probe-call site after stencil's reads: 31 → 34, one
 * block per SM less). GX_PTX_F_ENTRY_TOP (GX_PTX_ENTRY_TOP=1) keeps every entry site first (the
 * A/B switch of bench/hook_overhead). */
/* Handlers above this many instructions keep the site first: their cold
 * paths set the kernel's register count, and the kernel's values live across
 * them add to it (launchlate's ring reservation, 252 instructions: 30 → 32
 * registers on tool_bench's vadd, the limit of 8 blocks of 256 threads). */
#define PTX_ENTRY_MOVE_MAX 128

static struct ptx_stmt *entry_site_pos(struct ptx_passes *ps, struct ptx_func *fn, int *err)
{
	const struct gx_ptx_rewrite_opts *o = ps->ctx->opts;
	struct ptx_stmt *s = ptx_func_entry_point(fn);
	*err = 0;
	if (o->flags & GX_PTX_F_ENTRY_TOP)
		return s;
	size_t ninsn = 0;
	if (!o->policy_ptx) {
		int r = ptx_site_inlines(ps, GDEV_HOOK_ENTRY, NULL, &ninsn);
		if (r <= 0 || ninsn > PTX_ENTRY_MOVE_MAX) {
			*err = r < 0 ? r : 0;
			return s;
		}
	}
	for (size_t i = 0; o->policy_ptx && i < o->nr_bindings; i++) {
		const struct gx_hook_binding *bd = &o->bindings[i];
		if (bd->hook != GDEV_HOOK_ENTRY || !bd->func ||
		    (bd->kernel_glob && fnmatch(bd->kernel_glob, fn->name, 0)))
			continue;
		int r = ptx_site_inlines(ps, GDEV_HOOK_ENTRY, ptx_link_name(ps, bd->func), &ninsn);
		if (r <= 0 || ninsn > PTX_ENTRY_MOVE_MAX) {
			*err = r < 0 ? r : 0;
			return s;
		}
	}
	for (; s; s = s->next) {
		if (s->kind == PTX_STMT_VERBATIM && !strncmp(s->text, ".loc", 4))
			continue;
		if (s->kind == PTX_STMT_DECL && s->decl.space == PTX_SPACE_REG)
			continue;
		if (s->kind != PTX_STMT_INSN || s->insn.guard || s->insn.nops != 2)
			break;
		const struct ptx_insn *in = &s->insn;
		const struct ptx_opnd *d = in->ops[0], *a = in->ops[1];
		if (!d || d->kind != PTX_OPND_ID || !a)
			break;
		if (!strcmp(in->opcode, "ld") && ptx_insn_has_mod(in, ".param") &&
		    a->kind == PTX_OPND_ADDR)
			continue;
		/* mov from a special register, another register or an immediate */
		if (!strcmp(in->opcode, "mov") && (a->kind == PTX_OPND_INT ||
						   (a->kind == PTX_OPND_ID && a->text &&
						    a->text[0] == '%')))
			continue;
		break;
	}
	return s;
}

static int hook_func(struct ptx_passes *ps, struct ptx_func *fn)
{
	unsigned hooks = ps->ctx->opts->hooks;
	int err;
	unsigned skipped = 0;
	ptx_for_each_stmt(fn, s, nxt) {
		if (s->kind != PTX_STMT_INSN)
			continue;
		struct ptx_opinfo oi;
		enum ptx_op_class c = ptx_classify(&s->insn, &oi);
		struct ptx_chain addr = {0};
		unsigned hook = 0, info = 0;
		if ((c == PTX_OP_RET || c == PTX_OP_EXIT) && fn->is_entry &&
		    (hooks & GDEV_HOOK_EXIT)) {
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
				skipped++;
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
	/* The entry site last: an inlined handler's own memory accesses and
	 * returns must not be hooked. It goes before the first statement, or
	 * after the kernel's leading parameter and special-register reads
	 * (entry_site_pos), a site of the statement there included. */
	if (fn->is_entry && (hooks & GDEV_HOOK_ENTRY)) {
		struct ptx_stmt *pos = entry_site_pos(ps, fn, &err);
		if (err)
			return err;
		err = add_sites(ps, fn, pos, GDEV_HOOK_ENTRY, NULL, 0, NULL, 0);
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

int ptx_pass_hooks(struct ptx_passes *ps)
{
	struct ptx_module *m = ps->m;
	if (!(ps->ctx->opts->hooks & (GDEV_HOOK_ENTRY | GDEV_HOOK_EXIT | GDEV_HOOK_MEM |
				       GDEV_HOOK_FENCE)))
		return 0;
	ptx_for_each_item(m, it) {
		if (it->kind != PTX_ITEM_FUNC || !it->func.has_body || reserved(m, it->func.name))
			continue;
		int err = hook_func(ps, &it->func);
		if (err)
			return err;
	}
	return 0;
}
