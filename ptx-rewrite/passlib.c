/* passlib.c — the helpers every pass uses (passlib_internal.h): the log, the module
 * header's end, hook names, the register cap. Kept out of the pass driver (passes.c), so that
 * passes depend on the library and only the driver depends on the passes. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ptx-rewrite/passlib_internal.h"

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
	ptx_for_each_item(m, it)
	{
		if (it->kind == PTX_ITEM_VERSION || it->kind == PTX_ITEM_TARGET || it->kind == PTX_ITEM_ADDRESS_SIZE)
			end = it;
		else if (it->kind != PTX_ITEM_VERBATIM)
			break;
	}
	return end;
}

static const struct {
	unsigned hook;
	const char *name;
} hook_names[] = {
	{ GDEV_HOOK_ENTRY, "entry" },
	{ GDEV_HOOK_EXIT, "exit" },
	{ GDEV_HOOK_MEM, "mem" },
	{ GDEV_HOOK_FENCE, "fence" },
	{ GDEV_HOOK_SCHED_ENTER, "sched_enter" },
	{ GDEV_HOOK_SCHED_EXIT, "sched_exit" },
	{ GDEV_HOOK_SCHED_STEAL, "sched_steal" },
	{ GDEV_HOOK_BLOCK, "block" },
};

const char *ptx_hook_name(unsigned hook)
{
	for (size_t i = 0; i < GX_ARRAY_SIZE(hook_names); i++)
		if (hook_names[i].hook == hook)
			return hook_names[i].name;
	return NULL;
}

unsigned ptx_hook_nth(size_t i)
{
	return i < GX_ARRAY_SIZE(hook_names) ? hook_names[i].hook : 0;
}

int ptx_kernel_cap_regs(struct ptx_module *m, const struct gx_ptx_rewrite_opts *o, struct ptx_func *fn,
			const char *orig, unsigned slack)
{
	unsigned cap = 0;
	for (size_t i = 0; i < o->nr_persist_regs; i++)
		if (o->persist_regs[i].name && !strcmp(o->persist_regs[i].name, orig))
			cap = (o->persist_regs[i].regs + slack + 7) / 8 * 8;
	if (!cap)
		return 0;
	if (cap < 32)
		cap = 32;
	for (unsigned i = 0; i < fn->nperf; i++)
		if (!strcmp(fn->perf[i].name, ".maxnreg"))
			return 0; /* the application's own limit (or one set already) stands */
	struct ptx_perf *np = ptx_alloc(m, (fn->nperf + 1) * sizeof(*np));
	const char *args = ptx_sprintf(m, "%u", cap);
	if (!np || !args)
		return gx_err(-ENOMEM);
	memcpy(np, fn->perf, fn->nperf * sizeof(*np));
	np[fn->nperf] = (struct ptx_perf){ .name = ".maxnreg", .args = args, .nvals = 1, .vals = { cap } };
	fn->perf = np;
	fn->nperf++;
	return 0;
}
