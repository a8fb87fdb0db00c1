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
