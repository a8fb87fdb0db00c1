/* passes.c — the pass driver behind gx_ptx_rewrite(): runs the passes
 * (pass_internal.h) in order, hands each the results of the earlier ones, frees them.
 *
 * Order, and why:
 *  1. link      policy PTX first, so hook sites can name its (renamed) .funcs;
 *  2. persistent check: decide which kernels the transform accepts;
 *  3. hooks     entry/exit/mem/fence sites on the original code;
 *  4. persistent transform: wraps the hooked body in the work loop (entry and
 *               exit hooks then run once per logical block) and rewrites every
 *               %ctaid/%nctaid read, those of the hook sites included;
 *  5. trampolines, stubs and __gx_devrt, emitted last (they depend on 1–4).
 * Any error aborts the whole rewrite (the caller loads the original). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx-rewrite/pass_internal.h"
#include "ptx-rewrite/passes_internal.h"
#include "ptx-rewrite/persist_internal.h"
#include "ptx-rewrite/policy_internal.h"
#include "ptx-rewrite/tramp_internal.h"

int ptx_run_passes(struct ptx_module *m, struct ptx_pass_ctx *ctx)
{
	const struct gx_ptx_rewrite_opts *o = ctx->opts;
	if (!o->hooks && !o->persistent)
		return 0;
	ptx_for_each_item(m, it) {
		const char *name = it->kind == PTX_ITEM_DECL   ? it->decl.name
				   : it->kind == PTX_ITEM_FUNC ? it->func.name
							       : NULL;
		if (name && !strcmp(name, GDEV_DEVRT_SYMBOL)) {
			snprintf(m->err, sizeof(m->err),
				 "module already instrumented (defines %s)", GDEV_DEVRT_SYMBOL);
			return gx_err(-EALREADY);
		}
	}
	struct ptx_policy pol = {0};
	struct ptx_persist_set kernels = {0};
	struct ptx_tramps tr = {.m = m};
	unsigned nr_elided = 0;
	int err = 0;
	if (o->hooks && o->policy_ptx)
		err = ptx_pass_link(m, ctx, &pol);
	if (!err && o->persistent)
		err = ptx_pass_persist_check(m, ctx, &kernels);
	if (!err)
		err = ptx_pass_hooks(m, ctx, &pol, &tr, &nr_elided);
	if (!err && o->persistent)
		err = ptx_pass_persistent(m, ctx, &pol, &kernels, &tr);
	if (!err)
		err = ptx_pass_tramp(m, &pol, &tr);
	ptx_policy_free(&pol);
	free(kernels.v);
	ptx_tramps_free(&tr);
	if (!err && nr_elided)
		ptx_pass_log(ctx, "hooks: %u site%s of the empty built-in handler compiled away",
			     nr_elided, nr_elided == 1 ? "" : "s");
	return err;
}
