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

/* PTX computing the generic address of a memory operand into %<P>_a.
 * Returns NULL with *skip = 1 when the operand is not a global/generic
 * location we can follow (then the site is left out and logged). */
static char *addr_setup(struct ptx_module *m, const struct ptx_func *fn,
			const struct ptx_opnd *a, enum ptx_space space, int *skip)
{
	const char *P = m->fresh_prefix;
	*skip = 0;
	if (!a || a->kind != PTX_OPND_ADDR || a->n != 1) {
		*skip = 1;
		return NULL;
	}
	const struct ptx_opnd *base = a->elems[0];
	const char *cvta = space == PTX_SPACE_GLOBAL ? "cvta.global.u64" : NULL;
	char *base_code;
	if (base->kind == PTX_OPND_INT) {
		base_code = ptx_sprintf(m, "mov.u64 %%%s_a, %lld;\n", P, base->ival + a->off);
		return cvta && base_code ? ptx_sprintf(m, "%s%s %%%s_a, %%%s_a;\n", base_code, cvta,
						       P, P)
					 : base_code;
	}
	if (base->kind != PTX_OPND_ID || !base->text) {
		*skip = 1;
		return NULL;
	}
	if (base->text[0] == '%') {
		if (reg_size(fn, base->text) == 4)
			base_code = ptx_sprintf(m, "cvt.u64.u32 %%%s_a, %s;\n", P, base->text);
		else
			base_code = ptx_sprintf(m, "mov.b64 %%%s_a, %s;\n", P, base->text);
	} else {
		/* A variable: only global ones are hooked (a generic access to a
		 * shared/local/const symbol is not a global access). */
		const struct ptx_decl *d = func_var(fn, base->text);
		if (!d)
			d = module_var(m, base->text);
		if (d && d->space != PTX_SPACE_GLOBAL) {
			*skip = 1;
			return NULL;
		}
		base_code = ptx_sprintf(m, "mov.u64 %%%s_a, %s;\n", P, base->text);
		cvta = "cvta.global.u64";
	}
	if (!base_code)
		return NULL;
	char *code = base_code;
	if (a->off)
		code = ptx_sprintf(m, "%sadd.s64 %%%s_a, %%%s_a, %lld;\n", code, P, P, a->off);
	if (code && cvta)
		code = ptx_sprintf(m, "%s%s %%%s_a, %%%s_a;\n", code, cvta, P, P);
	return code;
}

/* Insert the sites for `hook` before pos (NULL: at the end): one per bound
 * handler, or the built-in one without a policy (pass_site.c). */
static int add_sites(struct ptx_passes *ps, struct ptx_func *fn, struct ptx_stmt *pos,
		     unsigned hook, const char *addr, unsigned info, const struct ptx_insn *guard)
{
	const struct gx_ptx_rewrite_opts *o = ps->ctx->opts;
	unsigned long long kid = gx_kernel_id(fn->name);
	if (!o->policy_ptx)
		return ptx_site_insert(ps, fn, pos, hook, NULL, kid, addr, info, guard);
	for (size_t i = 0; i < o->nr_bindings; i++) {
		const struct gx_hook_binding *bd = &o->bindings[i];
		if (bd->hook != hook || !bd->func)
			continue;
		if (bd->kernel_glob && fnmatch(bd->kernel_glob, fn->name, 0))
			continue;
		int err = ptx_site_insert(ps, fn, pos, hook, ptx_link_name(ps, bd->func), kid, addr,
					  info, guard);
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

static int hook_func(struct ptx_passes *ps, struct ptx_func *fn)
{
	struct ptx_module *m = ps->m;
	unsigned hooks = ps->ctx->opts->hooks;
	int err;
	if (fn->is_entry && (hooks & GDEV_HOOK_ENTRY)) {
		err = add_sites(ps, fn, ptx_func_entry_point(fn), GDEV_HOOK_ENTRY, NULL, 0, NULL);
		if (err)
			return err;
	}
	unsigned skipped = 0;
	ptx_for_each_stmt(fn, s, nxt) {
		if (s->kind != PTX_STMT_INSN)
			continue;
		struct ptx_opinfo oi;
		enum ptx_op_class c = ptx_classify(&s->insn, &oi);
		char *addr = NULL;
		unsigned hook = 0, info = 0;
		if ((c == PTX_OP_RET || c == PTX_OP_EXIT) && fn->is_entry &&
		    (hooks & GDEV_HOOK_EXIT)) {
			hook = GDEV_HOOK_EXIT;
		} else if (c == PTX_OP_FENCE && (hooks & GDEV_HOOK_FENCE)) {
			hook = GDEV_HOOK_FENCE;
		} else if (mem_op(c) && (hooks & GDEV_HOOK_MEM) &&
			   (oi.space == PTX_SPACE_GLOBAL || oi.space == PTX_SPACE_GENERIC)) {
			int skip;
			addr = addr_setup(m, fn, oi.addr_op >= 0 ? s->insn.ops[oi.addr_op] : NULL,
					  oi.space, &skip);
			if (skip) {
				skipped++;
				continue;
			}
			if (!addr)
				return gx_err(-ENOMEM);
			hook = GDEV_HOOK_MEM;
			unsigned space = oi.space == PTX_SPACE_GLOBAL ? GDEV_SPACE_GLOBAL
								      : GDEV_SPACE_GENERIC;
			info = (oi.size & 0xffff) | mem_op(c) << 16 | space << 24;
		}
		if (!hook)
			continue;
		err = add_sites(ps, fn, s, hook, addr, info, &s->insn);
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
