/* gpuext — command-line entry: global flags, then dispatch to a subcommand. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli_internal.h"
#include "common/gx_log.h"
#include "common/gx_util.h"

bool gx_json;
int gx_verbose;

static int do_version(int argc, char **argv)
{
	(void)argc, (void)argv;
	if (gx_json)
		printf("{\"version\":\"%s\"}\n", GX_VERSION);
	else
		printf("gpuext %s\n", GX_VERSION);
	return 0;
}

static const struct gx_cmd cmds[] = {
	{ "run", do_run, "run a CUDA program through the shim (also: gpuext-run)" },
	{ "ptx", do_ptx, "PTX tools: check, rewrite" },
	{ "fatbin", do_fatbin, "list and extract CUDA code (PTX, cubins) in binaries and fatbins" },
	{ "bpf", do_bpf, "device eBPF policies: show, verify, dump, jit" },
	{ "map", do_map, "policy maps shared with the GPU: list, dump" },
	{ "tools", do_tools, "observability tools: list, prepare (JIT cache), report" },
	{ "cache", do_cache, "module cache: prepare (a shareable, read-only cache for an install or image)" },
	{ "tenant", do_tenant, "tenants sharing the GPUs: list, set class/window, gc" },
	{ "sched", do_sched, "block scheduling: decisions and per-SM work of a run (--trace)" },
	{ "attach", do_attach, "attach tools/policies to a running process under the shim (detach: print reports)" },
	{ "detach", do_detach, "detach them again: the tools' reports" },
	{ "ps", do_ps, "processes running under the shim: GPUs, launches, what is attached" },
	{ "doctor", do_doctor, "check this machine: driver, GPUs, shim, JIT cache, folders (for bug reports)" },
	{ "exporter", do_exporter, "Prometheus /metrics of launches, tenants, policies, device maps (gpuext-exporter)" },
	{ "cdi", do_cdi, "write a CDI spec that mounts gpuext into containers" },
	{ "version", do_version, "print the version" },
	{ 0 },
};

int gx_cli_prefix(char *out, size_t n)
{
	char exe[PATH_MAX], up[PATH_MAX + 8], real[PATH_MAX];
	ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (k <= 0)
		return gx_err(-errno);
	exe[k] = 0;
	char *s = strrchr(exe, '/');
	if (!s)
		return gx_err(-ENOENT);
	*s = 0;
	snprintf(up, sizeof(up), "%s/..", exe);
	if (!realpath(up, real))
		return gx_err(-errno);
	if (strlen(real) >= n)
		return gx_err(-ENAMETOOLONG);
	snprintf(out, n, "%s", real);
	return 0;
}

void p_err(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (gx_json) {
		char msg[1024];
		vsnprintf(msg, sizeof(msg), fmt, ap);
		printf("{\"error\":\"");
		for (const char *p = msg; *p; p++) {
			if (*p == '"' || *p == '\\')
				putchar('\\');
			if ((unsigned char)*p < 0x20)
				printf("\\u%04x", *p);
			else
				putchar(*p);
		}
		printf("\"}\n");
	} else {
		fprintf(stderr, "gpuext: error: ");
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	}
	va_end(ap);
}

int gx_cmd_dispatch(const char *parent, const struct gx_cmd *cmds, int argc, char **argv)
{
	if (argc >= 1) {
		for (const struct gx_cmd *c = cmds; c->name; c++)
			if (!strcmp(c->name, argv[0]))
				return c->fn(argc, argv);
	}
	if (argc >= 1 && strcmp(argv[0], "help") && strcmp(argv[0], "--help") && strcmp(argv[0], "-h"))
		p_err("unknown command '%s %s' (try 'gpuext %s help')", parent, argv[0], parent);
	FILE *out = argc >= 1 && strcmp(argv[0], "help") && strcmp(argv[0], "--help") && strcmp(argv[0], "-h") ? stderr : stdout;
	fprintf(out, "usage: gpuext %s COMMAND ...\ncommands:\n", parent);
	for (const struct gx_cmd *c = cmds; c->name; c++)
		fprintf(out, "  %-10s %s\n", c->name, c->summary);
	return out == stdout ? 0 : 2;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: gpuext [--json] [-v] COMMAND [ARGS...]\n\n"
		     "gpuext runs CUDA applications through a programmable, eBPF-driven shim.\n\n"
		     "commands:\n");
	for (const struct gx_cmd *c = cmds; c->name; c++)
		fprintf(out, "  %-10s %s\n", c->name, c->summary);
	fprintf(out, "\n'gpuext COMMAND --help' describes each command.\n");
}

int main(int argc, char **argv)
{
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--json") || !strcmp(a, "-j"))
			gx_json = true;
		else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
			gx_verbose++;
			gx_log_set_level(GX_LOG_DEBUG);
		} else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "--version") || !strcmp(a, "-V")) {
			printf("gpuext %s\n", GX_VERSION);
			return 0;
		} else {
			p_err("unknown option '%s' (try 'gpuext --help')", a);
			return 2;
		}
	}
	if (i >= argc) {
		usage(stderr);
		return 2;
	}
	for (const struct gx_cmd *c = cmds; c->name; c++)
		if (!strcmp(c->name, argv[i]))
			return c->fn(argc - i, argv + i);
	p_err("unknown command '%s' (try 'gpuext --help')", argv[i]);
	return 2;
}
