/* gpuext CLI: one binary, one source file per subcommand (bpftool-style),
 * each exposing do_NAME(); main.c's table lists them, and cli/build.mk the
 * sources and the parts' libraries: adding a command touches those two. */
#ifndef CLI_INTERNAL_H
#define CLI_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

struct gx_cmd {
	const char *name;
	int (*fn)(int argc, char **argv); /* argv[0] is the subcommand name */
	const char *summary;              /* one line for `gpuext --help` */
};

/* Global options, parsed by main before dispatch. */
/* Exported (with -rdynamic) for the plugins the CLI dlopens. */
extern bool gx_json __attribute__((visibility("default")));    /* --json / -j */
extern int gx_verbose __attribute__((visibility("default"))); /* -v */

/* The one error path of the CLI: "gpuext: error: ..." (or JSON when --json). */
void p_err(const char *fmt, ...) __attribute__((format(printf, 1, 2), visibility("default")));
/* The install prefix: the folder above this executable's bin/ (build/ in
 * the build tree), resolved with realpath. 0 or -errno. */
int gx_cli_prefix(char *out, size_t n);

/* The subcommands (argv[0] is the subcommand's name). */
int do_run(int argc, char **argv);    /* run.c */
int do_ptx(int argc, char **argv);    /* ptx.c */
int do_fatbin(int argc, char **argv); /* fatbin.c */
int do_bpf(int argc, char **argv);    /* bpf.c */
int do_map(int argc, char **argv);    /* map.c */
int do_tools(int argc, char **argv);  /* tools.c */
int do_cache(int argc, char **argv);  /* cache.c */
int do_tenant(int argc, char **argv); /* tenant.c */
int do_sched(int argc, char **argv);  /* sched.c */
int do_doctor(int argc, char **argv); /* doctor.c */
int do_cdi(int argc, char **argv);    /* cdi.c */
int do_exporter(int argc, char **argv); /* exporter_exec.c: runs gpuext-exporter */
int do_attach(int argc, char **argv); /* attach.c */
int do_detach(int argc, char **argv); /* attach.c */
int do_ps(int argc, char **argv);     /* attach.c */

/* Run a nested subcommand table: cmds[] ends with {0}; prints usage on miss. */
int gx_cmd_dispatch(const char *parent, const struct gx_cmd *cmds, int argc, char **argv);

#endif
