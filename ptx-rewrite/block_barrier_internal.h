/* block_barrier_internal.h — the barrier a kernel's block handler can sit
 * before instead of at its entry or exits (block_barrier.c;
 * GX_PTX_BLOCK_SITE=barrier). */
#ifndef PTX_BLOCK_BARRIER_H
#define PTX_BLOCK_BARRIER_H

#include "ptx-rewrite/ptx_ir_internal.h"

/* Kernel fn's first CTA-wide barrier (an unguarded `bar.sync ID` or
 * `barrier.sync ID` of the whole block, no thread count) that every thread
 * passes exactly once: no path from the entry reaches a ret, exit or the
 * body's end without it, and none leads from it back to itself. NULL if
 * there is none, or the body has what the check does not follow (an
 * indirect branch, a branch to an unknown label, a call that may not
 * return). -ENOMEM in *err. */
struct ptx_stmt *ptx_once_barrier(struct ptx_func *fn, int *err);

#endif
