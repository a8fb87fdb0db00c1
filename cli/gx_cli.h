/* gpuext CLI: one binary, one source file per subcommand (bpftool-style).
 * A subcommand file registers itself with GX_CMD(); main.c finds every
 * registered command through the linker section, so adding a subcommand never
 * touches another file. */
#ifndef GX_CLI_H
#define GX_CLI_H

#include <stdbool.h>

struct gx_cmd {
	const char *name;
	int (*fn)(int argc, char **argv); /* argv[0] is the subcommand name */
	const char *summary;              /* one line for `gpuext --help` */
};

#define GX_CMD(NAME, FN, SUMMARY)                                           \
	static const struct gx_cmd gx_cmd_##NAME                            \
		__attribute__((used, section("gx_cmds"), aligned(sizeof(void *)))) = { \
			#NAME, FN, SUMMARY }

/* Global options, parsed by main before dispatch. */
/* Exported (with -rdynamic) for the plugins the CLI dlopens. */
extern bool gx_json __attribute__((visibility("default")));    /* --json / -j */
extern int gx_verbose __attribute__((visibility("default"))); /* -v */

/* The one error path of the CLI: "gpuext: error: ..." (or JSON when --json). */
void p_err(const char *fmt, ...) __attribute__((format(printf, 1, 2), visibility("default")));
/* Run a nested subcommand table: cmds[] ends with {0}; prints usage on miss. */
int gx_cmd_dispatch(const char *parent, const struct gx_cmd *cmds, int argc, char **argv);

#endif
