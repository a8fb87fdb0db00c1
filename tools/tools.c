/* tools.c — the registry of the shipped tools, and the report entry point
 * (load a run's data, hand it to the tool's report, frame the trace file). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/gx_util.h"
#include "tools/gx_tools.h"
#include "tools/tooldata_internal.h"

static const struct {
	struct gx_tool t;
	int (*report)(const struct tooldata *td, int json, FILE *trace);
} registry[] = {
	{ { "kernelretsnoop", "per-block finish time and SM, per kernel launch", "kernelretsnoop" },
	  fmt_kernelretsnoop },
	{ { "kernelretsnoop_all", "kernelretsnoop without sampling large launches (costs more)",
	    "kernelretsnoop_all" },
	  fmt_kernelretsnoop },
	{ { "threadhist", "blocks/warps/threads executed per SM (load imbalance)", "threadhist" }, fmt_threadhist },
	{ { "launchlate", "host launch -> first block start latency, per kernel", "launchlate" }, fmt_launchlate },
	{ { "memtrace", "sampled global memory accesses (address, size, op, SM, time)", "memtrace" }, fmt_memtrace },
};

GX_EXPORT const struct gx_tool *gx_tools(size_t *n)
{
	static struct gx_tool list[GX_ARRAY_SIZE(registry)];
	for (size_t i = 0; i < GX_ARRAY_SIZE(registry); i++)
		list[i] = registry[i].t;
	*n = GX_ARRAY_SIZE(registry);
	return list;
}

static int find(const char *name)
{
	for (size_t i = 0; name && i < GX_ARRAY_SIZE(registry); i++)
		if (!strcmp(registry[i].t.name, name))
			return (int)i;
	return -1;
}

GX_EXPORT const struct gx_tool *gx_tool_find(const char *name)
{
	int i = find(name);
	return i < 0 ? NULL : &registry[i].t;
}

GX_EXPORT int gx_tools_report(const char *name, const char *dir, bool json, const char *trace, char *err,
			      size_t errlen)
{
	int t = find(name);
	if (t < 0) {
		snprintf(err, errlen, "unknown tool '%s' (try 'gpuext tools')", name ? name : "");
		return -EINVAL;
	}
	struct tooldata td;
	int ret = td_load(&td, dir, name);
	if (ret) {
		snprintf(err, errlen, "%s: cannot read the tool data: %s", dir, strerror(-ret));
		td_free(&td);
		return ret;
	}
	if (!td.nr_procs) {
		snprintf(err, errlen, "%s: no %s data (did the application use the GPU through the shim? run with -v)",
			 dir, name);
		td_free(&td);
		return -ENOENT;
	}
	FILE *tf = NULL;
	if (trace && !(tf = fopen(trace, "w"))) {
		ret = -errno;
		snprintf(err, errlen, "%s: cannot write: %s", trace, strerror(errno));
		td_free(&td);
		return ret;
	}
	if (tf)
		fprintf(tf, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"
			    "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"gpuext %s\"}}",
			name);
	ret = registry[t].report(&td, json, tf);
	if (!json && !ret)
		td_launches_text(&td);
	td_launches_trace(&td, tf);
	if (tf) {
		fprintf(tf, "\n]}\n");
		if (fclose(tf)) {
			snprintf(err, errlen, "%s: write error", trace);
			ret = -EIO;
		}
	}
	td_free(&td);
	return ret;
}
