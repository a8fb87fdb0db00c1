/* passes_internal.h — how gx_ptx_rewrite() (rewrite.c) drives the passes.
 *
 * rewrite.c parses the module, calls ptx_run_passes() once, then emits. It
 * relies on this contract only: on success return 0 having added to
 * ctx->res's counters; on failure return -errno with a stable message in
 * m->err (the caller then loads the original image). Notes for the user (a
 * kernel left alone and why) go through ptx_pass_log() into res->log. */
#ifndef PTX_PASSES_H
#define PTX_PASSES_H

#include "ptx-rewrite/passlib_internal.h"

int ptx_run_passes(struct ptx_module *m, struct ptx_pass_ctx *ctx);

#endif
