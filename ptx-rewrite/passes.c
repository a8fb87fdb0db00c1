/* passes.c — the pass pipeline behind gx_ptx_rewrite(). Owned by the passes
 * work (pass_*.c): this placeholder accepts identity requests and refuses
 * any transform until the passes land, so callers fall back to the original
 * image. */
#include <stdarg.h>
#include <stdio.h>

#include "ptx-rewrite/ptx_pass.h"

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

int ptx_run_passes(struct ptx_module *m, struct ptx_pass_ctx *ctx)
{
	if (!ctx->opts->hooks && !ctx->opts->persistent)
		return 0;
	snprintf(m->err, sizeof(m->err), "transforms are not available in this build");
	return -EOPNOTSUPP;
}
