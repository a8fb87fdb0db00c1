/* gx_tools.h — tools/'s one public header: the shipped device tools.
 *
 * A tool is a pair in this folder: NAME.bpf.c, its device program (built to
 * share/gpuext/tools/NAME.bpf.o, attached by the shim like any device
 * policy: gpuext-run --tool NAME), and NAME.c, its report of what the run
 * left behind, registered in tools.c's table. Records both sides agree on
 * are in tools_common.h. */
#ifndef GX_TOOLS_H
#define GX_TOOLS_H

#include <stdbool.h>
#include <stddef.h>

struct gx_tool {
	const char *name;
	const char *what;   /* one line for `gpuext tools` */
	const char *object; /* the .bpf.o it runs (several tools may share a report) */
};

/* Load-time variants of a tool (issue 40, docs/devbpf-perf.md): with `env`
 * set to `val`, the shim runs `object` (another build of the tool's source,
 * in the tools folder) under the tool's name, tag and report. Read by the
 * shim (attach/policy.c) and by `gpuext tools prepare`, which caches their
 * JIT output beside the tools'. */
struct gx_tool_variant {
	const char *tool, *env, *val, *object;
};
static inline const struct gx_tool_variant *gx_tool_variants(size_t *n)
{
	static const struct gx_tool_variant v[] = {
		{ "kernelretsnoop", "GX_KRS_CAP", "1024", "kernelretsnoop_c1024" },
		{ "kernelretsnoop", "GX_KRS_CAP", "256", "kernelretsnoop_c256" },
		{ "threadhist", "GX_TH_WARP", "last", "threadhist_lw" },
		{ "threadhist", "GX_TH_WARP", "1", "threadhist_w1" },
		{ "memtrace", "GX_MT_GATE", "0", "memtrace_prog" },
		{ "memtrace", "GX_MT_GATE", "1", "memtrace_gate" },
		{ "kernelretsnoop", "GX_KRS_COUNTS", "1", "kernelretsnoop_counts" },
		{ "launchlate", "GX_LL_RING", "1", "launchlate_ring" },
		{ "kernelretsnoop", "GX_KRS_RING", "1", "kernelretsnoop_ring" },
	};
	*n = sizeof(v) / sizeof(v[0]);
	return v;
}

/* The registry, in display order; *n entries. */
const struct gx_tool *gx_tools(size_t *n);
/* A tool by name, or NULL. */
const struct gx_tool *gx_tool_find(const char *name);

/* Print `name`'s report of the run whose data is in `dir` (the shm folder
 * the shim wrote): text, or JSON when `json`, on stdout; with `trace`, a
 * Chrome/Perfetto trace-event file too. Returns 0, a positive exit status
 * from the report, or -errno with a one-line reason in err: -EINVAL (no
 * such tool), -ENOENT (no data of that tool in dir), others from reading. */
int gx_tools_report(const char *name, const char *dir, bool json, const char *trace, char *err,
		    size_t errlen);

#endif
