/* passes.c — the pass pipeline behind gx_ptx_rewrite() (see ptx_pass.h).
 *
 * Order, and why:
 *  1. link      policy PTX first, so hook sites can name its (renamed) .funcs;
 *  2. persistent check: decide which kernels the transform accepts, so the
 *               hook sites of those kernels pass virtual block ids;
 *  3. hooks     entry/exit/mem/fence sites on the original code;
 *  4. persistent transform: wraps the hooked body in the work loop (entry and
 *               exit hooks then run once per logical block) and rewrites every
 *               %ctaid/%nctaid read, those of the hook sites included;
 *  5. trampolines, stubs and __gx_devrt, emitted last (they depend on 2–4).
 * Any error aborts the whole rewrite (the caller loads the original). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx-rewrite/passes.h"

void ptx_pass_log(struct ptx_pass_ctx *ctx, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	gx_buf_puts(&ctx->log, line);
	gx_buf_puts(&ctx->log, "\n");
}

struct ptx_item *ptx_module_header_end(struct ptx_module *m)
{
	struct ptx_item *end = NULL;
	ptx_for_each_item(m, it) {
		if (it->kind == PTX_ITEM_VERSION || it->kind == PTX_ITEM_TARGET ||
		    it->kind == PTX_ITEM_ADDRESS_SIZE)
			end = it;
		else if (it->kind != PTX_ITEM_VERBATIM)
			break;
	}
	return end;
}

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
	struct ptx_passes ps = {.m = m, .ctx = ctx};
	int err = 0;
	if (o->hooks && o->policy_ptx)
		err = ptx_pass_link(&ps);
	if (!err && o->persistent)
		err = ptx_persistent_check(&ps);
	if (!err)
		err = ptx_pass_hooks(&ps);
	if (!err && o->persistent)
		err = ptx_pass_persistent(&ps);
	if (!err)
		err = ptx_tramp_emit(&ps);
	free(ps.renames);
	free(ps.persist);
	free(ps.tramps);
	free(ps.handlers);
	free(ps.locals);
	if (!err && ps.nr_elided)
		ptx_pass_log(ctx, "hooks: %u site%s of the empty built-in handler compiled away",
			     ps.nr_elided, ps.nr_elided == 1 ? "" : "s");
	return err;
}
