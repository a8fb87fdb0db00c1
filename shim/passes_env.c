/* passes_env.c — GPUEXT_HOOKS=entry,exit,mem,fence|all turns on device hook
 * sites calling the built-in no-op stubs (no policy needed). Used to check
 * that instrumented applications behave the same and to measure the bare
 * cost of hooks (tests/gpu/passes.sh). A policy (GPUEXT_POLICY) selects its
 * hooks itself; GPUEXT_STUBS picks the built-in handler the GPUEXT_HOOKS
 * sites run (call: leader election and a call of an empty function, the
 * default, so the sites exist; elide: none, the empty handler compiled
 * away; probe / probe-call: a handler reading the whole context, inlined or
 * called). Persistent workers have their own switch (GPUEXT_PERSISTENT,
 * persist.c: their launches need a work descriptor). Unknown words are
 * ignored with a warning, once. */
#include <stdlib.h>
#include <string.h>

#include "gpuext/gdev_ctx.h"
#include "common/gx_log.h"
#include "ptx-rewrite/gx_ptx.h"
#include "shim/passes_env_internal.h"

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

unsigned gx_stubs_from_env(void)
{
	static const struct {
		const char *name;
		unsigned stubs;
	} words[] = {
		{"call", GX_PTX_STUBS_CALL},   {"elide", GX_PTX_STUBS_ELIDE},
		{"probe", GX_PTX_STUBS_PROBE}, {"probe-call", GX_PTX_STUBS_PROBE_CALL},
	};
	const char *s = getenv("GPUEXT_STUBS");
	if (!s || !*s)
		return GX_PTX_STUBS_CALL;
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (!strcmp(s, words[i].name))
			return words[i].stubs;
	pr_warn_once("GPUEXT_STUBS: unknown value '%s' (call, elide, probe, probe-call); using call", s);
	return GX_PTX_STUBS_CALL;
}
