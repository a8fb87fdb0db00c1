/* empty_probe — the empty device probe: a program at every kernel entry and
 * one before every exit that do nothing. bench/hook_overhead measures it
 * through the whole user path (clang -> verifier -> device JIT -> link ->
 * rewrite) against the unhooked kernels: the "empty probe" row of
 * DESIGN.md's figures (bpftime: +19-61 %). The rewriter inlines a handler
 * this small, so each site is the election and an empty branch, which ptxas
 * folds away; a handler too large to inline is called instead (the
 * "entry+exit call" row: what a real CALL/RET per warp costs). */
#include "gpuext/gdev_helpers.h"

SEC("gdev/probe/*")
int empty_probe_entry(struct gdev_ctx *ctx)
{
	return 0;
}

SEC("gdev/retprobe/*")
int empty_probe_exit(struct gdev_ctx *ctx)
{
	return 0;
}

GDEV_LICENSE("Dual BSD/GPL");
