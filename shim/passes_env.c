/* passes_env.c — GPUEXT_HOOKS=entry,exit,mem,fence|all turns on device hook
 * sites calling the built-in no-op stubs (no policy needed);
 * GPUEXT_HOOK_STUBS=elide|call|probe|probe-call picks another built-in
 * handler (ptx-rewrite's enum gx_ptx_stubs; elide leaves no site at all). Used to check
 * that instrumented applications behave the same and to measure the bare
 * cost of hooks (tests/gpu/passes.sh). A policy (GPUEXT_POLICY) selects its
 * hooks itself; persistent workers have their own switch (GPUEXT_PERSISTENT,
 * persist.c: their launches need a work descriptor). Unknown words are
 * ignored with a warning, once. */
#include <stdlib.h>
#include <string.h>

#include "devbpf/gdev_ctx.h"
#include "ptx-rewrite/gx_ptx.h"
#include "gx_log.h"
#include "shim/passes_env.h"

unsigned gx_hooks_from_env(void)
{
	static const struct {
		const char *name;
		unsigned bits;
	} words[] = {
		{"entry", GDEV_HOOK_ENTRY}, {"exit", GDEV_HOOK_EXIT}, {"mem", GDEV_HOOK_MEM},
		{"fence", GDEV_HOOK_FENCE},
		{"all", GDEV_HOOK_ENTRY | GDEV_HOOK_EXIT | GDEV_HOOK_MEM | GDEV_HOOK_FENCE},
	};
	const char *s = getenv("GPUEXT_HOOKS");
	unsigned mask = 0;
	while (s && *s) {
		size_t n = strcspn(s, ",");
		size_t i;
		for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
			if (strlen(words[i].name) == n && !strncmp(s, words[i].name, n)) {
				mask |= words[i].bits;
				break;
			}
		if (i == sizeof(words) / sizeof(words[0]) && n)
			pr_warn_once("GPUEXT_HOOKS: unknown hook '%.*s' ignored", (int)n, s);
		s += n + (s[n] == ',');
	}
	return mask;
}

unsigned gx_hook_stubs_from_env(void)
{
	static const char *const modes[] = {"elide", "call", "probe", "probe-call"};
	const char *s = getenv("GPUEXT_HOOK_STUBS");
	if (!s || !*s)
		return GX_PTX_STUBS_CALL;
	for (unsigned i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (!strcmp(s, modes[i]))
			return i;
	pr_warn_once("GPUEXT_HOOK_STUBS: unknown '%s' ignored (elide, call, probe, probe-call)", s);
	return GX_PTX_STUBS_CALL;
}
