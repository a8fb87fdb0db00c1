/* ptx_pass.h — how gx_ptx_rewrite() (rewrite.c) drives the passes.
 *
 * rewrite.c parses the module, calls ptx_run_passes() once, then emits. The
 * passes (pass_*.c, one transform per file) and ptx_run_passes() itself
 * (passes.c) belong to the passes work; rewrite.c only relies on this
 * contract: on success return 0 having added to ctx->res's counters; on
 * failure return -errno with a stable message in m->err (the caller then
 * loads the original image). Notes for the user (a kernel left alone and why)
 * go through ptx_pass_log() and end up in res->log. */
#ifndef PTX_PASS_H
#define PTX_PASS_H

#include "ptx-rewrite/gx_ptx.h"
#include "ptx-rewrite/ptx_ir.h"

struct ptx_pass_ctx {
	const struct gx_ptx_rewrite_opts *opts; /* never NULL: defaults filled in */
	struct gx_ptx_rewrite_result *res;      /* nr_kernels is set before the passes */
	struct gx_buf log;                      /* becomes res->log */
};

int ptx_run_passes(struct ptx_module *m, struct ptx_pass_ctx *ctx);
void ptx_pass_log(struct ptx_pass_ctx *ctx, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
