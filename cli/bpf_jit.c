/* `gpuext bpf jit FILE.bpf.o --target ptx|native [-o OUT]` — the JIT from
 * the command line: load, verify, translate every program. PTX goes to OUT
 * (or stdout); native compiles in-process and reports, -o writes the x86-64
 * assembly. --ir prints the optimized LLVM IR instead. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_internal.h"
#include "devbpf/gx_bpf.h"
#include "common/gx_util.h"
#include "ptx-rewrite/gx_ptx.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: gpuext bpf jit FILE.bpf.o [--target ptx|native] [-o OUT] [--prefix P]\n"
		   "                        [--ir] [--no-verify] [--define-devrt]\n"
		   "  --target ptx     PTX .funcs for the rewriter (default)\n"
		   "  --target native  x86-64 through ORC (host policies, tests)\n"
		   "  -o OUT           write PTX (or native assembly) to OUT instead of stdout\n"
		   "  --prefix P       function name prefix (default gxp_)\n"
		   "  --ir             print the optimized LLVM IR instead\n"
		   "  --no-verify      skip the verifier (debugging only)\n"
		   "  --define-devrt   define __gx_devrt (standalone modules; the default\n"
		   "                   .extern declaration is what ptx-rewrite links)\n");
}

static void log_line(void *user, const char *line)
{
	(void)user;
	fprintf(stderr, "%s\n", line);
}

static int write_out(const char *path, const char *text)
{
	if (!path || !strcmp(path, "-")) {
		fputs(text, stdout);
		return 0;
	}
	int ret = gx_write_file(path, text, strlen(text));
	if (ret)
		p_err("%s: cannot write: %s", path, strerror(-ret));
	return ret;
}

int gx_cli_bpf_jit(int argc, char **argv);
__attribute__((visibility("default"))) int gx_cli_bpf_jit(int argc, char **argv)
{
	const char *file = NULL, *out = NULL, *prefix = NULL;
	int native = 0, ir = 0, verify = 1, ext = 0, ret = 1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--target") && i + 1 < argc) {
			const char *t = argv[++i];
			if (!strcmp(t, "native"))
				native = 1;
			else if (strcmp(t, "ptx")) {
				p_err("unknown target '%s' (ptx or native)", t);
				return 2;
			}
		} else if (!strcmp(a, "-o") && i + 1 < argc) {
			out = argv[++i];
		} else if (!strcmp(a, "--prefix") && i + 1 < argc) {
			prefix = argv[++i];
		} else if (!strcmp(a, "--ir")) {
			ir = 1;
		} else if (!strcmp(a, "--no-verify")) {
			verify = 0;
		} else if (!strcmp(a, "--define-devrt")) {
			ext = 1;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (a[0] != '-' && !file) {
			file = a;
		} else {
			p_err("unknown argument '%s'", a);
			usage(stderr);
			return 2;
		}
	}
	if (!file) {
		usage(stderr);
		return 2;
	}
	struct gx_bpf_object *obj = gx_bpf_object__open_file(file, NULL);
	if (!obj) {
		p_err("%s: cannot load: %s (run with -v for details)", file, strerror(errno));
		return 1;
	}
	struct gx_map **maps = NULL;
	size_t nr_maps = 0;
	struct gx_hook_binding *b = NULL;
	size_t nb = 0;
	struct gx_jit *j = NULL;
	if (verify) {
		struct gx_bpf_verify_opts vo = { .sz = sizeof(vo), .quiet = true, .log = log_line };
		int v = gx_bpf_object__verify(obj, &vo);
		if (v == -EOPNOTSUPP) {
			fprintf(stderr, "gpuext: warning: the verifier is not available in this build; "
					"translating unverified programs\n");
		} else if (v) {
			int shown = 0;
			for (struct gx_bpf_prog *p = NULL; (p = gx_bpf_object__next_prog(obj, p));)
				if (*gx_bpf_prog__verifier_msg(p))
					p_err("%s", gx_bpf_prog__verifier_msg(p)), shown++;
			if (!shown)
				p_err("%s: verification failed: %s", file, strerror(-v));
			goto done;
		}
	}
	if (native && gx_jit_object_maps(obj, 0, 1, &maps, &nr_maps)) {
		p_err("%s: cannot create host maps: %s", file, strerror(errno));
		goto done;
	}
	struct gx_jit_object_opts o = { .sz = sizeof(o),
					.target = native ? GX_JIT_NATIVE : GX_JIT_PTX,
					.prefix = prefix,
					.maps = maps,
					.nr_maps = nr_maps,
					.define_devrt = ext,
					.keep_text = ir || native };
	char err[512];
	j = gx_jit_object(obj, &o, &b, &nb, err, sizeof(err));
	if (!j) {
		p_err("%s: %s", file, err);
		goto done;
	}
	if (ir) {
		char *t = gx_jit__ir(j);
		ret = t && !write_out(out, t) ? 0 : 1;
		free(t);
	} else if (!native) {
		ret = write_out(out, gx_jit__ptx(j, NULL)) ? 1 : 0;
	} else {
		char *t = gx_jit__asm(j);
		ret = 0;
		if (out)
			ret = t && !write_out(out, t) ? 0 : 1;
		free(t);
	}
	if (ret == 0 && (native || out || gx_verbose)) {
		FILE *f = (native && !out && !gx_json) ? stdout : stderr;
		if (gx_json && (native || out)) {
			printf("{\"object\":");
			gx_json_str(stdout, file);
			printf(",\"target\":\"%s\",\"jit_ms\":%.3f,\"funcs\":[", native ? "native" : "ptx",
			       gx_jit__time_ms(j));
			for (size_t i = 0; i < nb; i++) {
				printf("%s{\"func\":", i ? "," : "");
				gx_json_str(stdout, b[i].func);
				printf(",\"hook\":%u,\"kernel_glob\":", b[i].hook);
				gx_json_str(stdout, b[i].kernel_glob ? b[i].kernel_glob : "*");
				printf("}");
			}
			printf("]}\n");
		} else {
			fprintf(f, "%s: %zu program%s JIT'd for %s in %.1f ms\n", file, nb,
				nb == 1 ? "" : "s", native ? "native" : "ptx", gx_jit__time_ms(j));
			for (size_t i = 0; i < nb; i++)
				fprintf(f, "  func %-32s hook 0x%x kernels %s%s\n", b[i].func, b[i].hook,
					b[i].kernel_glob ? b[i].kernel_glob : "*",
					native && gx_jit__func(j, b[i].func) ? " (callable)" : "");
		}
	}
done:
	gx_jit__free(j);
	gx_jit_bindings_free(b, nb);
	gx_jit_object_maps_free(maps, nr_maps);
	gx_bpf_object__close(obj);
	return ret;
}
