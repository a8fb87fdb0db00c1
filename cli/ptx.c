/* `gpuext ptx` — PTX tools: `check` (parse, re-emit, report) and `rewrite`
 * (a thin wrapper over gx_ptx_rewrite()). One subcommand table; the rewrite
 * flags map one-to-one onto struct gx_ptx_rewrite_opts. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_internal.h"
#include "attach/gx_attach.h"
#include "blocksched/gx_blocksched.h"
#include "common/gx_util.h"
#include "ptx-rewrite/gx_ptx.h"

/* A file's PTX: trailing NULs are padding (fatbins store PTX NUL-padded);
 * a NUL anywhere else is the parser's error, with its line:col. */
static int read_input(const char *path, char **buf, size_t *len)
{
	int err = gx_read_file(path, buf, len, 0);
	if (err) {
		p_err("cannot read '%s': %s", path, strerror(-err));
		return err;
	}
	while (*len && !(*buf)[*len - 1])
		(*len)--;
	if (memchr(*buf, 0, *len)) {
		/* the parser names where (gx_ptx_rewrite would stop there) */
		char msg[160] = "NUL byte in the text";
		gx_ptx_module__free(gx_ptx_module__parse(*buf, *len, msg, sizeof(msg)));
		p_err("%s:%s", path, msg);
		free(*buf);
		return -EINVAL;
	}
	return 0;
}

static int write_output(const char *path, const char *buf, size_t len)
{
	if (!path || !strcmp(path, "-")) {
		if (fwrite(buf, 1, len, stdout) != len || fflush(stdout)) {
			p_err("cannot write the output");
			return -EIO;
		}
		return 0;
	}
	int err = gx_write_file(path, buf, len);
	if (err)
		p_err("cannot write '%s': %s", path, strerror(-err));
	return err;
}

static void check_usage(FILE *f)
{
	fprintf(f, "usage: gpuext [--json] ptx check [-o OUT.ptx] IN.ptx\n"
		   "Parse IN.ptx, emit it back (to OUT.ptx with -o), parse the output again and\n"
		   "check the emitter reaches a fixpoint; report kernels, functions,\n"
		   "instructions, memory operations and lines.\n");
}

static int do_check(int argc, char **argv)
{
	const char *out = NULL;
	static const struct option lo[] = {{"output", required_argument, 0, 'o'},
					   {"help", no_argument, 0, 'h'},
					   {0, 0, 0, 0}};
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", lo, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'h':
			check_usage(stdout);
			return 0;
		default:
			check_usage(stderr);
			return 2;
		}
	}
	if (optind + 1 != argc) {
		check_usage(stderr);
		return 2;
	}
	const char *path = argv[optind];
	char *buf;
	size_t len;
	if (read_input(path, &buf, &len))
		return 1;
	unsigned lines = 0;
	for (size_t i = 0; i < len; i++)
		lines += buf[i] == '\n';
	if (len && buf[len - 1] != '\n')
		lines++;

	char err[256];
	struct gx_ptx_module *m = gx_ptx_module__parse(buf, len, err, sizeof(err)), *m2 = NULL;
	if (!m) {
		p_err("%s:%s", path, err);
		free(buf);
		return 1;
	}
	struct gx_ptx_stats st;
	gx_ptx_module__stats(m, &st);
	char *e1 = NULL, *e2 = NULL;
	size_t l1 = 0, l2 = 0;
	int rc = 1;
	if (gx_ptx_module__emit(m, &e1, &l1)) {
		p_err("out of memory");
		goto out;
	}
	if (!(m2 = gx_ptx_module__parse(e1, l1, err, sizeof(err)))) {
		p_err("%s: re-parse of the emitted text failed: %s", path, err);
		goto out;
	}
	if (gx_ptx_module__emit(m2, &e2, &l2) || l1 != l2 || memcmp(e1, e2, l1)) {
		p_err("%s: emitted text is not a fixpoint of parse+emit", path);
		goto out;
	}
	if (out && write_output(out, e1, l1))
		goto out;
	if (gx_json)
		printf("{\"file\":\"%s\",\"bytes\":%zu,\"lines\":%u,\"kernels\":%u,\"functions\":%u,"
		       "\"instructions\":%u,\"memory_ops\":%u,\"emitted_bytes\":%zu,\"fixpoint\":true}\n",
		       path, len, lines, st.kernels, st.funcs, st.insns, st.memops, l1);
	else
		printf("%s: ok: %u lines, %u kernels, %u functions, %u instructions, %u memory ops\n",
		       path, lines, st.kernels, st.funcs, st.insns, st.memops);
	rc = 0;
out:
	free(e1);
	free(e2);
	gx_ptx_module__free(m2);
	gx_ptx_module__free(m);
	free(buf);
	return rc;
}

static void rewrite_usage(FILE *f)
{
	fprintf(f, "usage: gpuext [--json] ptx rewrite [--hooks entry,exit,mem,fence|all]\n"
		   "         [--persistent[=copy]] [--policy FILE.bpf.o] [--policy-ptx FILE.ptx\n"
		   "         --bind HOOK:FUNC[:KERNEL-GLOB]...] [--max-ptx X.Y] [--stubs MODE]\n"
		   "         IN.ptx [-o OUT.ptx]\n"
		   "Rewrite IN.ptx with the requested device hooks (no-op handlers unless a policy\n"
		   "is given) and/or the persistent-worker transform; write OUT.ptx (stdout: -).\n"
		   "--policy JITs a BPF object's device programs (libgxjit.so) for IN.ptx's target\n"
		   "and binds them as their sections say (gdev/probe/GLOB ...).\n"
		   "--policy-ptx links .funcs of an already compiled policy; each --bind names the\n"
		   "function a hook calls (HOOK: entry, exit, mem, fence, or block: entry, or exit\n"
		   "in kernels with CTA barriers).\n"
		   "--persistent=copy keeps each transformed kernel and adds the persistent\n"
		   "version as a copy named <prefix>_pw_<kernel> (what the shim loads).\n"
		   "--regs KERNEL=N[,...]: the registers the driver gave KERNEL; its persistent\n"
		   "version gets .maxnreg max(32, N rounded up to 8) (what blocksched measures).\n"
		   "--sample N: mem sites call their handler for 1 warp access in N (a uniform\n"
		   "test per warp before the election; memtrace's sampling); with --regs, kernels\n"
		   "with such sites get the same register cap (GX_PTX_MEM_CAP=0: none).\n"
		   "--kernels GLOB: the persistent transform for the kernels matching GLOB only\n"
		   "(a schedule policy's kernels=GLOB).\n"
		   "--persist-static: persistent versions without the claim path (static only).\n"
		   "--static-copy: with --persistent=copy, each kernel also gets a static-only copy\n"
		   "<prefix>_ps_<kernel> (what the shim loads under a guarded policy).\n"
		   "--stubs elide|call|probe|probe-call: without a policy, what hooks run: nothing\n"
		   "(default: the empty handler is compiled away), a call of an empty function, a\n"
		   "built-in handler reading the whole context inlined, or the same handler called.\n");
}

static int parse_hooks(const char *s, unsigned *mask)
{
	static const struct {
		const char *name;
		unsigned bits;
	} tab[] = {
		{"entry", GDEV_HOOK_ENTRY},
		{"exit", GDEV_HOOK_EXIT},
		{"mem", GDEV_HOOK_MEM},
		{"fence", GDEV_HOOK_FENCE},
		{"block", GDEV_HOOK_BLOCK},
		{"all", GDEV_HOOK_ENTRY | GDEV_HOOK_EXIT | GDEV_HOOK_MEM | GDEV_HOOK_FENCE},
	};
	while (*s) {
		size_t n = strcspn(s, ",");
		size_t i;
		for (i = 0; i < GX_ARRAY_SIZE(tab); i++)
			if (strlen(tab[i].name) == n && !strncmp(s, tab[i].name, n))
				break;
		if (i == GX_ARRAY_SIZE(tab)) {
			p_err("unknown hook '%.*s' (expected entry, exit, mem, fence or all)", (int)n, s);
			return -EINVAL;
		}
		*mask |= tab[i].bits;
		s += n;
		if (*s == ',')
			s++;
	}
	return 0;
}

/* "HOOK:FUNC[:GLOB]" → binding (pointers into arg, which is modified). */
static int parse_bind(char *arg, struct gx_hook_binding *b)
{
	char *func = strchr(arg, ':');
	if (!func || !func[1]) {
		p_err("--bind wants HOOK:FUNC[:KERNEL-GLOB], got '%s'", arg);
		return -EINVAL;
	}
	*func++ = 0;
	char *glob = strchr(func, ':');
	if (glob)
		*glob++ = 0;
	unsigned mask = 0;
	if (parse_hooks(arg, &mask))
		return -EINVAL;
	if (mask & (mask - 1)) {
		p_err("--bind names one hook, got '%s'", arg);
		return -EINVAL;
	}
	b->hook = mask;
	b->func = func;
	b->kernel_glob = glob && *glob ? glob : NULL;
	return 0;
}

static void report_err(const char *path, const char *err)
{
	/* parse errors start with line:col and read best as path:line:col */
	if (err[0] >= '0' && err[0] <= '9')
		p_err("%s:%s", path, err);
	else
		p_err("%s: %s", path, err[0] ? err : "rewrite failed");
}

/* The sm_N of the first `.target` of PTX text (90 if none). */
static unsigned text_target_sm(const char *buf, size_t len)
{
	const char *end = buf + len;
	for (const char *p = buf; p && p < end; p = memchr(p, '\n', (size_t)(end - p))) {
		while (p < end && (*p == '\n' || *p == ' ' || *p == '\t'))
			p++;
		if ((size_t)(end - p) > 11 && !strncmp(p, ".target", 7)) {
			const char *q = p + 7;
			while (q < end && (*q == ' ' || *q == '\t'))
				q++;
			if (end - q > 3 && !strncmp(q, "sm_", 3)) {
				unsigned v = (unsigned)strtoul(q + 3, NULL, 10);
				return v ? v : 90;
			}
			return 90;
		}
	}
	return 90;
}

/* `--policy FILE.bpf.o`: JIT it for the input's target; its PTX and bindings
 * into opts (pointing into *d and *binds, freed by the caller). 0 or 1. */
static int load_policy(const char *path, const char *app, size_t app_len,
		       struct gx_ptx_rewrite_opts *opts, struct gx_policy_desc *d,
		       struct gx_hook_binding **binds)
{
	char err[600];
	if (gx_policy_build_file(path, text_target_sm(app, app_len), d, err, sizeof(err))) {
		p_err("%s", err);
		return 1;
	}
	/* the bindings, then their samples (opts->bind_samples): one block */
	struct gx_hook_binding *bd = calloc(d->nr_progs + 1, sizeof(*bd) + sizeof(unsigned));
	unsigned *samples = bd ? (unsigned *)(void *)(bd + d->nr_progs + 1) : NULL;
	if (!bd) {
		gx_pdesc_free(d);
		p_err("out of memory");
		return 1;
	}
	size_t n = 0;
	for (size_t i = 0; i < d->nr_progs; i++) {
		const struct gx_pol_prog *pg = &d->progs[i];
		if (!(pg->hook & GDEV_HOOKS_DEVICE))
			continue; /* not a device hook */
		samples[n] = gx_pdesc_mem_sample(d, pg->hook);
		bd[n++] = (struct gx_hook_binding){pg->hook, pg->glob[0] ? pg->glob : NULL, pg->func};
		opts->hooks |= pg->hook;
	}
	if (!n) {
		free(bd);
		gx_pdesc_free(d);
		p_err("%s: no device program bound to a hook", path);
		return 1;
	}
	opts->policy_ptx = d->ptx;
	opts->policy_len = d->ptx_len;
	opts->bindings = bd;
	opts->bind_samples = samples;
	opts->nr_bindings = n;
	*binds = bd;
	return 0;
}

static int do_rewrite(int argc, char **argv)
{
	const char *out = NULL, *policy = NULL, *policy_ptx = NULL;
	struct gx_ptx_rewrite_opts opts = {.sz = sizeof(opts), .flags = gx_ptx_flags_from_env()};
	struct gx_hook_binding binds[32];
	size_t nbinds = 0;
	struct gx_ptx_kregs kregs[64];
	char kregs_buf[4096];
	static const struct option lo[] = {{"hooks", required_argument, 0, 'H'},
					   {"persistent", optional_argument, 0, 'p'},
					   {"policy", required_argument, 0, 'P'},
					   {"policy-ptx", required_argument, 0, 'X'},
					   {"bind", required_argument, 0, 'B'},
					   {"max-ptx", required_argument, 0, 'M'},
					   {"stubs", required_argument, 0, 'S'},
					   {"regs", required_argument, 0, 'R'},
					   {"sample", required_argument, 0, 'N'},
					   {"persist-static", no_argument, 0, 'Z'},
					   {"static-copy", no_argument, 0, 'Y'},
					   {"kernels", required_argument, 0, 'K'},
					   {"output", required_argument, 0, 'o'},
					   {"help", no_argument, 0, 'h'},
					   {0, 0, 0, 0}};
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", lo, NULL)) != -1) {
		switch (c) {
		case 'H':
			if (parse_hooks(optarg, &opts.hooks))
				return 2;
			break;
		case 'p':
			if (optarg && strcmp(optarg, "copy")) {
				fprintf(stderr, "gpuext ptx rewrite: --persistent takes no value or 'copy'\n");
				return 2;
			}
			opts.persistent = optarg ? GX_PTX_PERSISTENT_COPY : 1;
			opts.persist_rt = gx_bs_rt_ptx(&opts.persist_rt_len);
			break;
		case 'P':
			policy = optarg;
			break;
		case 'Z':
			opts.flags |= GX_PTX_F_PERSIST_STATIC;
			break;
		case 'Y':
			opts.flags |= GX_PTX_F_PERSIST_STATIC_COPY;
			break;
		case 'K':
			opts.persist_kernels = optarg;
			break;
		case 'R': {
			snprintf(kregs_buf, sizeof(kregs_buf), "%s", optarg);
			char *save = NULL;
			opts.nr_persist_regs = 0;
			for (char *kv = strtok_r(kregs_buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
				char *eq = strrchr(kv, '=');
				if (!eq || opts.nr_persist_regs == GX_ARRAY_SIZE(kregs) || atoi(eq + 1) <= 0) {
					p_err("--regs wants KERNEL=N[,KERNEL=N...]");
					return 2;
				}
				*eq = 0;
				kregs[opts.nr_persist_regs++] = (struct gx_ptx_kregs){kv, (unsigned)atoi(eq + 1)};
			}
			opts.persist_regs = kregs;
			break;
		}
		case 'N': /* mem sites: 1 warp access in N reaches the handler */
			opts.mem_sample = (unsigned)(strtoul(optarg, NULL, 10) & 0x7fffffffu);
			break;
		case 'X':
			policy_ptx = optarg;
			break;
		case 'B':
			if (nbinds == GX_ARRAY_SIZE(binds)) {
				p_err("too many --bind options (at most %zu)", GX_ARRAY_SIZE(binds));
				return 2;
			}
			if (parse_bind(optarg, &binds[nbinds]))
				return 2;
			opts.hooks |= binds[nbinds++].hook;
			break;
		case 'M': {
			unsigned maj, min;
			if (sscanf(optarg, "%u.%u", &maj, &min) != 2 || min > 9) {
				p_err("--max-ptx wants X.Y, e.g. 8.5");
				return 2;
			}
			opts.max_ptx_version = maj * 10 + min;
			break;
		}
		case 'S': {
			static const char *const modes[] = {"elide", "call", "probe", "probe-call"};
			size_t i;
			for (i = 0; i < GX_ARRAY_SIZE(modes); i++)
				if (!strcmp(optarg, modes[i]))
					break;
			if (i == GX_ARRAY_SIZE(modes)) {
				p_err("--stubs wants elide, call, probe or probe-call, got '%s'", optarg);
				return 2;
			}
			opts.stubs = (unsigned)i;
			break;
		}
		case 'o':
			out = optarg;
			break;
		case 'h':
			rewrite_usage(stdout);
			return 0;
		default:
			rewrite_usage(stderr);
			return 2;
		}
	}
	if (optind + 1 != argc) {
		rewrite_usage(stderr);
		return 2;
	}
	if (policy && (policy_ptx || nbinds)) {
		p_err("--policy takes its bindings from the object: not with --policy-ptx/--bind");
		return 2;
	}
	if (!policy && !policy_ptx != !nbinds) {
		p_err("--policy-ptx and --bind go together");
		return 2;
	}
	char *pol = NULL;
	size_t pol_len = 0;
	if (policy_ptx) {
		if (read_input(policy_ptx, &pol, &pol_len))
			return 1;
		opts.policy_ptx = pol;
		opts.policy_len = pol_len;
		opts.bindings = binds;
		opts.nr_bindings = nbinds;
	}
	const char *path = argv[optind];
	char *buf;
	size_t len;
	if (read_input(path, &buf, &len)) {
		free(pol);
		return 1;
	}
	/* --policy: JIT the object's device programs (libgxjit.so, as the shim
	 * does) for the input's target and bind them as their sections say */
	struct gx_policy_desc d = {0};
	struct gx_hook_binding *pbinds = NULL;
	if (policy && load_policy(policy, buf, len, &opts, &d, &pbinds)) {
		free(buf);
		return 1;
	}
	struct gx_ptx_rewrite_result res;
	int err = gx_ptx_rewrite(buf, len, &opts, &res);
	free(buf);
	free(pol);
	free(pbinds);
	if (policy)
		gx_pdesc_free(&d);
	if (err) {
		report_err(path, res.err);
		gx_ptx_rewrite_result_free(&res);
		return 1;
	}
	if (res.log && !gx_json)
		fputs(res.log, stderr);
	int rc = write_output(out, res.ptx, res.len) ? 1 : 0;
	if (!rc && gx_json && out && strcmp(out, "-"))
		printf("{\"file\":\"%s\",\"output\":\"%s\",\"kernels\":%u,\"hooks\":%u,"
		       "\"persistent\":%u,\"bytes\":%zu}\n",
		       path, out, res.nr_kernels, res.nr_hooks, res.nr_persistent, res.len);
	gx_ptx_rewrite_result_free(&res);
	return rc;
}

static const struct gx_cmd ptx_cmds[] = {
	{"check", do_check, "parse and re-emit a PTX file, report what it holds"},
	{"rewrite", do_rewrite, "add device hooks / persistent workers to a PTX file"},
	{0},
};

int do_ptx(int argc, char **argv)
{
	return gx_cmd_dispatch("ptx", ptx_cmds, argc - 1, argv + 1);
}
