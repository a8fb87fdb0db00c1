/* sections.c — section name → hook rules (extensible: other parts register
 * their own, e.g. host struct_ops policies), with each hook's context size,
 * allowed return values and verification budgets. */
#include <string.h>

#include "devbpf/bpf_internal.h"
#include "gpuext/gdev_ctx.h"
#include "common/gx_util.h"

/* Budgets: the memory hook runs on every global access of a kernel, so it is
 * kept short; scheduler hooks run once per claimed unit; probes run once per
 * warp at kernel entry/exit and may do more. */
#define B_MEM { 256, 8, 100000 }
#define B_SCHED { 512, 16, 200000 }
#define B_PROBE { 4096, 64, 1000000 }

#define DEV(pfx, h, fl, gh, lo, hi, b) \
	{ pfx, h, GX_BPF_SEC_DEVICE | (fl), gh, GDEV_CTX_SIZE, lo, hi, b, NULL, 0, NULL, 0 }

static const struct gx_bpf_sec_def builtin[] = {
	DEV("gdev/mem/access", GX_BPF_HOOK_MEM_ACCESS, 0, GDEV_HOOK_MEM, 0, 0, B_MEM),
	DEV("gdev/mem/fence", GX_BPF_HOOK_MEM_FENCE, 0, GDEV_HOOK_FENCE, 0, 0, B_MEM),
	DEV("gdev/sched/enter", GX_BPF_HOOK_SCHED_ENTER, 0, GDEV_HOOK_SCHED_ENTER, 0, 0, B_SCHED),
	DEV("gdev/sched/exit", GX_BPF_HOOK_SCHED_EXIT, 0, GDEV_HOOK_SCHED_EXIT, 0, GDEV_SCHED_CLASS_MAX, B_SCHED),
	DEV("gdev/sched/should_try_steal", GX_BPF_HOOK_SCHED_STEAL, 0, GDEV_HOOK_SCHED_STEAL,
	    GDEV_DEFAULT, GDEV_SCHED_NO_STEAL, B_SCHED),
	DEV("gdev/probe/", GX_BPF_HOOK_PROBE, GX_BPF_SEC_SUFFIX, GDEV_HOOK_ENTRY, 0, 0, B_PROBE),
	DEV("gdev/retprobe/", GX_BPF_HOOK_RETPROBE, GX_BPF_SEC_SUFFIX, GDEV_HOOK_EXIT, 0, 0, B_PROBE),
	DEV("gdev/blockprobe/", GX_BPF_HOOK_BLOCKPROBE, GX_BPF_SEC_SUFFIX, GDEV_HOOK_BLOCK, 0, 0, B_PROBE),
};

#define MAX_EXTRA 64
static const struct gx_bpf_sec_def *extra[MAX_EXTRA];
static size_t nr_extra;

GX_EXPORT int gx_bpf_register_section(const struct gx_bpf_sec_def *def)
{
	if (!def || !def->prefix || !*def->prefix || def->hook <= GX_BPF_HOOK_UNSPEC ||
	    def->hook >= GX_BPF_HOOK_MAX || def->ret_min > def->ret_max)
		return gx_err(-EINVAL);
	if (nr_extra >= MAX_EXTRA)
		return gx_err(-ENOSPC);
	extra[nr_extra++] = def;
	return 0;
}

bool gx_bpf_sec_match(const struct gx_bpf_sec_def *d, const char *name)
{
	size_t n = strlen(d->prefix);
	if (strncmp(name, d->prefix, n))
		return false;
	if (d->flags & GX_BPF_SEC_SUFFIX)
		return name[n] != 0;
	return name[n] == 0;
}

GX_EXPORT bool gx_bpf_section_is_rodata(const char *name)
{
	return name && !strncmp(name, ".rodata", 7) && (name[7] == 0 || name[7] == '.');
}

GX_EXPORT const struct gx_bpf_sec_def *gx_bpf_find_section(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = nr_extra; i-- > 0;)
		if (gx_bpf_sec_match(extra[i], name))
			return extra[i];
	for (size_t i = 0; i < GX_ARRAY_SIZE(builtin); i++)
		if (gx_bpf_sec_match(&builtin[i], name))
			return &builtin[i];
	return NULL;
}

GX_EXPORT const char *gx_bpf_hook_str(enum gx_bpf_hook hook)
{
	switch (hook) {
	case GX_BPF_HOOK_MEM_ACCESS: return "mem_access";
	case GX_BPF_HOOK_MEM_FENCE: return "mem_fence";
	case GX_BPF_HOOK_SCHED_ENTER: return "sched_enter";
	case GX_BPF_HOOK_SCHED_EXIT: return "sched_exit";
	case GX_BPF_HOOK_SCHED_STEAL: return "sched_should_try_steal";
	case GX_BPF_HOOK_PROBE: return "probe";
	case GX_BPF_HOOK_RETPROBE: return "retprobe";
	case GX_BPF_HOOK_BLOCKPROBE: return "blockprobe";
	default: break;
	}
	for (size_t i = 0; i < nr_extra; i++)
		if (extra[i]->hook == hook)
			return extra[i]->prefix;
	return "unspec";
}
