/* `gpuext bpf ...` — device-policy objects: show, verify, dump, jit.
 *
 * One nested command table (bpftool-style). `jit` belongs to the JIT part:
 * it is a weak hook here, gx_cli_bpf_jit(), which devbpf's JIT defines in its
 * own cli source; without it the command says the JIT is not built. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_internal.h"
#include "devbpf/gx_bpf.h"
#include "attach/gx_attach.h"
#include "common/gx_log.h"

/* ---- JIT ENGINEER: define this (strong symbol) in cli/bpf_jit.c. ----
 * argv[0] is "jit"; return the process exit code. */
int gx_cli_bpf_jit(int argc, char **argv) __attribute__((weak));

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

static struct gx_bpf_object *open_arg(int argc, char **argv, const char *usage)
{
	if (argc < 2 || argv[1][0] == '-') {
		p_err("usage: gpuext bpf %s", usage);
		return NULL;
	}
	struct gx_bpf_object *obj = gx_bpf_object__open_file(argv[1], NULL);
	if (!obj)
		p_err("%s: cannot load: %s (run with -v for details)", argv[1], strerror(errno));
	return obj;
}

static int do_verify(int argc, char **argv)
{
	struct gx_bpf_object *obj = open_arg(argc, argv, "verify FILE.bpf.o");
	if (!obj)
		return 1;
	struct gx_bpf_verify_opts o = { .sz = sizeof(o), .quiet = true };
	int bad = 0;
	if (gx_json)
		printf("{\"object\":"), json_str(argv[1]), printf(",\"programs\":[");
	for (struct gx_bpf_prog *p = NULL; (p = gx_bpf_object__next_prog(obj, p));) {
		int err = gx_bpf_prog__verify(p, &o);
		struct gx_bpf_verify_stats st;
		gx_bpf_prog__verify_stats(p, &st);
		if (err)
			bad++;
		if (gx_json) {
			printf("%s{\"name\":", p == gx_bpf_object__prog_by_idx(obj, 0) ? "" : ",");
			json_str(gx_bpf_prog__name(p));
			printf(",\"section\":");
			json_str(gx_bpf_prog__section_name(p));
			printf(",\"verified\":%s,\"error\":", err ? "false" : "true");
			json_str(err ? gx_bpf_prog__verifier_msg(p) : "");
			printf(",\"insns\":%zu,\"processed\":%u,\"max_path_insns\":%u,\"max_helper_calls\":%u,"
			       "\"stack_depth\":%u}",
			       gx_bpf_prog__insn_cnt(p), st.processed, st.max_path_insns, st.max_helper_calls,
			       gx_bpf_prog__stack_depth(p));
		} else if (err) {
			printf("%s: REJECTED: %s\n", gx_bpf_prog__name(p), gx_bpf_prog__verifier_msg(p));
		} else {
			printf("%s: ok (%s, %zu insns, longest path %u, %u helper calls, stack %u bytes, %u processed)\n",
			       gx_bpf_prog__name(p), gx_bpf_prog__section_name(p), gx_bpf_prog__insn_cnt(p),
			       st.max_path_insns, st.max_helper_calls, gx_bpf_prog__stack_depth(p),
			       st.processed);
		}
	}
	if (gx_json)
		printf("]}\n");
	gx_bpf_object__close(obj);
	return bad ? 1 : 0;
}

static int do_dump(int argc, char **argv)
{
	struct gx_bpf_object *obj = open_arg(argc, argv, "dump FILE.bpf.o [PROG]");
	if (!obj)
		return 1;
	const char *only = argc > 2 ? argv[2] : NULL;
	struct gx_bpf_verify_opts o = { .sz = sizeof(o), .quiet = true, .collect_facts = true };
	int rc = 0, found = 0;
	for (struct gx_bpf_prog *p = NULL; (p = gx_bpf_object__next_prog(obj, p));) {
		if (only && strcmp(only, gx_bpf_prog__name(p)))
			continue;
		found++;
		int err = gx_bpf_prog__verify(p, &o);
		printf("prog %s section %s hook %s: %s\n", gx_bpf_prog__name(p), gx_bpf_prog__section_name(p),
		       gx_bpf_hook_str(gx_bpf_prog__hook(p)), err ? gx_bpf_prog__verifier_msg(p) : "verified");
		gx_bpf_prog__dump(p, stdout);
		if (err)
			rc = 1;
	}
	if (only && !found) {
		p_err("no program '%s' in %s", only, argv[1]);
		rc = 1;
	}
	gx_bpf_object__close(obj);
	return rc;
}

static int do_show(int argc, char **argv)
{
	struct gx_bpf_object *obj = open_arg(argc, argv, "show FILE.bpf.o");
	if (!obj)
		return 1;
	if (gx_json) {
		printf("{\"object\":");
		json_str(gx_bpf_object__name(obj));
		printf(",\"programs\":[");
		for (struct gx_bpf_prog *p = NULL; (p = gx_bpf_object__next_prog(obj, p));) {
			printf("%s{\"name\":", p == gx_bpf_object__prog_by_idx(obj, 0) ? "" : ",");
			json_str(gx_bpf_prog__name(p));
			printf(",\"section\":");
			json_str(gx_bpf_prog__section_name(p));
			printf(",\"hook\":");
			json_str(gx_bpf_hook_str(gx_bpf_prog__hook(p)));
			printf(",\"target\":");
			json_str(gx_bpf_prog__attach_target(p));
			printf(",\"insns\":%zu}", gx_bpf_prog__insn_cnt(p));
		}
		printf("],\"maps\":[");
		for (struct gx_bpf_map *m = NULL; (m = gx_bpf_object__next_map(obj, m));) {
			printf("%s{\"name\":", gx_bpf_map__idx(m) ? "," : "");
			json_str(gx_bpf_map__name(m));
			printf(",\"type\":");
			json_str(gx_bpf_map__type_str(gx_bpf_map__type(m)));
			printf(",\"key_size\":%u,\"value_size\":%u,\"max_entries\":%u,\"flags\":%u}",
			       gx_bpf_map__key_size(m), gx_bpf_map__value_size(m), gx_bpf_map__max_entries(m),
			       gx_bpf_map__map_flags(m));
		}
		printf("]}\n");
	} else {
		printf("object %s\n", gx_bpf_object__name(obj));
		for (struct gx_bpf_prog *p = NULL; (p = gx_bpf_object__next_prog(obj, p));)
			printf("  prog %-24s %-32s hook %s%s%s, %zu insns\n", gx_bpf_prog__name(p),
			       gx_bpf_prog__section_name(p), gx_bpf_hook_str(gx_bpf_prog__hook(p)),
			       *gx_bpf_prog__attach_target(p) ? " target " : "", gx_bpf_prog__attach_target(p),
			       gx_bpf_prog__insn_cnt(p));
		for (struct gx_bpf_map *m = NULL; (m = gx_bpf_object__next_map(obj, m));)
			printf("  map  %-24s %-14s key %u value %u max_entries %u\n", gx_bpf_map__name(m),
			       gx_bpf_map__type_str(gx_bpf_map__type(m)), gx_bpf_map__key_size(m),
			       gx_bpf_map__value_size(m), gx_bpf_map__max_entries(m));
	}
	gx_bpf_object__close(obj);
	return 0;
}

static int do_jit(int argc, char **argv)
{
	if (gx_cli_bpf_jit)
		return gx_cli_bpf_jit(argc, argv);
	/* Not linked in: `bpf jit` (LLVM 19) is the plugin gpuext-bpfjit.so, loaded on use. */
	char err[512];
	int (*fn)(int, char **) = (int (*)(int, char **))gx_jitlib_sym_in("gpuext-bpfjit.so", "gx_cli_bpf_jit", err, sizeof(err));
	if (!fn) {
		p_err("%s", err);
		return 1;
	}
	return fn(argc, argv);
}

static const struct gx_cmd bpf_cmds[] = {
	{ "show", do_show, "FILE.bpf.o: list programs (section, hook) and maps" },
	{ "verify", do_verify, "FILE.bpf.o: run the SIMT verifier on every program" },
	{ "dump", do_dump, "FILE.bpf.o [PROG]: disassembly with the verifier's per-insn facts" },
	/* JIT part: `jit` is implemented through gx_cli_bpf_jit() (weak above). */
	{ "jit", do_jit, "FILE.bpf.o --target ptx|native: translate (JIT part)" },
	{ 0 },
};

int do_bpf(int argc, char **argv)
{
	return gx_cmd_dispatch("bpf", bpf_cmds, argc - 1, argv + 1);
}
