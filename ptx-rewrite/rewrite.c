/* rewrite.c — gx_ptx_rewrite(): parse → passes → emit.
 *
 * The only public entry of ptx-rewrite. Never aborts: any failure (syntax,
 * a transform it cannot prove safe, ENOMEM) is a negative errno with a stable
 * message in res->err, and the caller loads the original image. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/gx_util.h"
#include "ptx-rewrite/gx_ptx.h"
#include "ptx-rewrite/passes_internal.h"

GX_EXPORT int gx_ptx_rewrite(const char *ptx, size_t len, const struct gx_ptx_rewrite_opts *opts,
			     struct gx_ptx_rewrite_result *res)
{
	if (!res)
		return gx_err(-EINVAL);
	memset(res, 0, sizeof(*res));
	struct gx_ptx_rewrite_opts o = {0};
	if (!ptx || gx_opts_copy(&o, sizeof(o), opts, opts ? opts->sz : 0)) {
		snprintf(res->err, sizeof(res->err), "invalid arguments");
		return gx_err(-EINVAL);
	}
	o.sz = sizeof(o);
	/* Module images are C strings: the driver stops at the first NUL too. */
	len = strnlen(ptx, len);

	struct ptx_module *m = ptx_module_parse(ptx, len, res->err, sizeof(res->err));
	if (!m)
		return gx_err(-errno);
	ptx_for_each_item(m, it)
		if (it->kind == PTX_ITEM_FUNC && it->func.is_entry && it->func.has_body)
			res->nr_kernels++;

	struct ptx_pass_ctx ctx = {.opts = &o, .res = res};
	gx_buf_init(&ctx.log);
	int err = ptx_run_passes(m, &ctx);
	if (err) {
		snprintf(res->err, sizeof(res->err), "%s", m->err[0] ? m->err : "rewrite failed");
		goto out;
	}
	/* Nothing to hook (no kernel, no site matched, every site elided): the
	 * module stays exactly as it came. Linked policy code would only add
	 * risk: merged into XLA's kernel-less `.target sm_50` modules it made
	 * PTX the driver refused. */
	if ((o.hooks || o.persistent) && !res->nr_hooks && !res->nr_persistent) {
		ptx_module_free(m);
		if (!(m = ptx_module_parse(ptx, len, res->err, sizeof(res->err)))) {
			err = -errno;
			goto out;
		}
		ptx_pass_log(&ctx, "nothing to hook: the module is left as it is");
	}
	struct gx_buf out;
	gx_buf_init(&out);
	err = ptx_module_emit(m, &out);
	if (err) {
		gx_buf_free(&out);
		snprintf(res->err, sizeof(res->err), "out of memory");
		goto out;
	}
	res->ptx = gx_buf_steal(&out, &res->len);
	if (!res->ptx) {
		err = -ENOMEM;
		snprintf(res->err, sizeof(res->err), "out of memory");
	}
out:
	if (ctx.log.len)
		res->log = gx_buf_steal(&ctx.log, NULL);
	gx_buf_free(&ctx.log);
	ptx_module_free(m);
	if (err) {
		free(res->ptx);
		res->ptx = NULL;
		res->len = 0;
	}
	return gx_err(err);
}

GX_EXPORT void gx_ptx_rewrite_result_free(struct gx_ptx_rewrite_result *res)
{
	if (!res)
		return;
	free(res->ptx);
	free(res->log);
	res->ptx = res->log = NULL;
}
