/* tramp.c — the trampolines and stubs a module needs, collected while the
 * hook and persistent passes run (tramp_internal.h); pass_tramp.c writes them out.
 * Also the call site of a sched hook's trampoline (pass_persist_loop.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx-rewrite/passlib_internal.h"
#include "ptx-rewrite/tramp_internal.h"

const char *ptx_tramp_stub_name(struct ptx_module *m, unsigned hook)
{
	return ptx_sprintf(m, "%s_stub_%s", m->fresh_prefix, ptx_hook_name(hook));
}

const char *ptx_tramp_stub(struct ptx_tramps *tr, unsigned hook)
{
	tr->stubs |= hook;
	return ptx_tramp_stub_name(tr->m, hook);
}

const char *ptx_tramp_get(struct ptx_tramps *tr, unsigned hook, const char *func, int virt)
{
	struct ptx_module *m = tr->m;
	int stub = !func;
	if (!ptx_hook_name(hook))
		return NULL;
	if (!func && !(func = ptx_tramp_stub(tr, hook)))
		return NULL;
	for (size_t i = 0; i < tr->n; i++) {
		struct ptx_tramp *t = &tr->v[i];
		if (t->hook == hook && t->virt == virt && !strcmp(t->func, func))
			return t->name;
	}
	if (tr->n == tr->cap) {
		size_t cap = tr->cap ? 2 * tr->cap : 8;
		struct ptx_tramp *n = realloc(tr->v, cap * sizeof(*n));
		if (!n)
			return NULL;
		tr->v = n;
		tr->cap = cap;
	}
	struct ptx_tramp *t = &tr->v[tr->n];
	t->hook = hook;
	t->func = func;
	t->virt = virt;
	t->sched = !!(hook & GDEV_HOOKS_SCHED);
	t->stub = stub;
	t->name = ptx_sprintf(m, "%s_tramp_%s_%zu%s", m->fresh_prefix, ptx_hook_name(hook), tr->n, virt ? "_v" : "");
	if (!t->name)
		return NULL;
	tr->n++;
	return t->name;
}

int ptx_tramp_sched_site(struct ptx_module *m, struct ptx_chain *c, const char *tramp, unsigned long long kid,
			 const char *const vals[10], const char *guard, int guard_neg, const char *ret_reg)
{
	const char *P = m->fresh_prefix;
	struct ptx_chain b = { 0 };
	struct ptx_opnd *args[11];
	/* a guarded site branches around the call (a return value cannot be
	 * read by a predicated ld.param): 0 then */
	const char *skip = guard ? ptx_fresh_name(m, "$", "Lss") : NULL;
	if (guard && !skip)
		return gx_err(-ENOMEM);
	if (ret_reg)
		ptx_chain_insn(m, &b, NULL, 0, "mov", PTX_MODS(".u32"), 2, ptx_opnd_id(m, ret_reg), ptx_opnd_int(m, 0));
	if (guard)
		ptx_chain_insn(m, &b, guard, !guard_neg, "bra", 0, NULL, 1, ptx_opnd_id(m, skip));
	ptx_chain_scope(m, &b, 1);
	/* kid, start, units (info), worker, steals, ctaid xyz, nctaid xyz */
	for (int i = 0; i < 11; i++) {
		const char *pn = ptx_sprintf(m, "%s_sp%d", P, i);
		const char *ty = i < 2 ? ".b64" : ".b32";
		if (!pn)
			return gx_err(-ENOMEM);
		ptx_chain_decl(m, &b, PTX_SPACE_PARAM, ty, pn);
		struct ptx_opnd *v = i == 0 ? ptx_opnd_hex64(m, kid) : ptx_opnd_id(m, vals[i - 1]);
		ptx_chain_insn(m, &b, NULL, 0, "st", PTX_MODS(".param", ty), 2, ptx_opnd_addr(m, ptx_opnd_id(m, pn), 0),
			       v);
		args[i] = ptx_opnd_id(m, pn);
	}
	const char *rv = ptx_sprintf(m, "%s_spr", P);
	if (!rv)
		return gx_err(-ENOMEM);
	ptx_chain_decl(m, &b, PTX_SPACE_PARAM, ".b32", rv);
	struct ptx_opnd *ret = ptx_opnd_id(m, rv);
	ptx_chain_insn(m, &b, NULL, 0, "call", 0, NULL, 3, ptx_opnd_list(m, 1, &ret), ptx_opnd_id(m, tramp),
		       ptx_opnd_list(m, 11, args));
	if (ret_reg)
		ptx_chain_insn(m, &b, NULL, 0, "ld", PTX_MODS(".param", ".b32"), 2, ptx_opnd_id(m, ret_reg),
			       ptx_opnd_addr(m, ptx_opnd_id(m, rv), 0));
	ptx_chain_scope(m, &b, 0);
	if (skip)
		ptx_chain_label(m, &b, skip);
	if (b.failed)
		return gx_err(-ENOMEM);
	ptx_chain_append(c, &b);
	return 0;
}

void ptx_tramps_free(struct ptx_tramps *tr)
{
	free(tr->v);
	tr->v = NULL;
	tr->n = tr->cap = 0;
}
