/* `gpuext tools` — the shipped observability tools.
 *
 *   gpuext tools [list]                       the tools and where their objects are
 *   gpuext tools prepare [--cache-dir D] [--shared] [--sm N[,M...]|all] [TOOL|FILE.bpf.o ...]
 *                                             verify + JIT into the policy cache
 *   gpuext tools report TOOL [--dir D] [--trace F]   format what a run left
 *
 * `prepare` exists because GPU machines may lack LLVM: the cache filled here
 * travels with the tree (GPUEXT_CACHE_DIR) and the shim reads it there.
 * With --shared the folder is made 0755 and its entries 0644: the read-only
 * cache of an install (<prefix>/share/gpuext/cache, next to the tools),
 * which the shim of every user reads when it is owned by root or by that
 * user and writable by nobody else (docs/trust.md).
 * `report` is what `gpuext-run --tool` calls after the application exits;
 * the tools and their reports are tools/'s (gx_tools.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach/gx_attach.h"
#include "cli/cli_internal.h"
#include "common/gx_util.h"
#include "ptx-rewrite/gx_ptx.h"
#include "tools/gx_tools.h"

/* <bin>/../share/gpuext/tools, or GPUEXT_TOOLS_DIR. */
static void tools_dir(char *out, size_t n)
{
	const char *e = getenv("GPUEXT_TOOLS_DIR");
	if (e && *e) {
		snprintf(out, n, "%s", e);
		return;
	}
	char exe[PATH_MAX];
	ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[k > 0 ? k : 0] = 0;
	char *s = strrchr(exe, '/');
	if (s)
		*s = 0;
	snprintf(out, n, "%.3900s/../share/gpuext/tools", s ? exe : ".");
}

static int do_list(int argc, char **argv)
{
	(void)argc, (void)argv;
	char dir[4096], p[4200];
	tools_dir(dir, sizeof(dir));
	size_t nt;
	const struct gx_tool *tools = gx_tools(&nt);
	if (gx_json)
		printf("[");
	for (size_t i = 0; i < nt; i++) {
		snprintf(p, sizeof(p), "%s/%s.bpf.o", dir, tools[i].object);
		int ok = access(p, R_OK) == 0;
		if (gx_json) {
			printf("%s{\"name\":\"%s\",\"what\":\"%s\",\"object\":", i ? "," : "", tools[i].name,
			       tools[i].what);
			gx_json_str(stdout, p);
			printf(",\"present\":%s}", ok ? "true" : "false");
		} else {
			printf("%-18s %s%s\n", tools[i].name, tools[i].what, ok ? "" : "  (object missing)");
		}
	}
	if (gx_json)
		printf("]\n");
	else
		printf("\nrun one: gpuext-run --tool NAME [--json] [--trace FILE.json] -- CMD\n");
	return 0;
}

/* Fill the cache for one object; prints one line. */
static int prepare_one(const char *path, const char *cache, unsigned sm, unsigned flags)
{
	char err[600];
	struct gx_policy_desc d;
	int ret = gx_policy_build_file(path, sm, &d, err, sizeof(err));
	if (ret) {
		p_err("%s", err);
		return 1;
	}
	ret = gx_pcache_store(cache, &d, flags);
	char p[4200];
	gx_pcache_path(cache, d.hash, sm, p, sizeof(p));
	if (ret == -EPERM)
		p_err("%s: cannot write %s: the folder is not this user's or is writable by others", path, p);
	else if (ret)
		p_err("%s: cannot write %s: %s", path, p, strerror(-ret));
	else if (!gx_json)
		printf("%-16s sm_%u  %zu programs, %zu maps, %zu bytes of PTX -> %s\n", d.name, sm, d.nr_progs,
		       d.nr_maps, d.ptx_len, p);
	gx_pdesc_free(&d);
	return ret ? 1 : 0;
}

/* The JIT architectures that cover every GPU the driver supports: a policy
 * is JIT'd for gx_pcache_jit_sm(device sm), so sm_90's PTX serves sm_100 and
 * sm_120 too (the driver JITs it), and older ones get their own. */
static const unsigned all_sms[] = { 70, 75, 80, 86, 87, 89, 90 };

/* "--sm" values: N, N,M,..., or all; the list in sms (at most max). */
static int parse_sms(const char *v, unsigned *sms, size_t max, size_t *n)
{
	*n = 0;
	if (!strcmp(v, "all")) {
		for (size_t i = 0; i < sizeof(all_sms) / sizeof(all_sms[0]) && i < max; i++)
			sms[(*n)++] = all_sms[i];
		return 0;
	}
	for (const char *p = v; *p;) {
		char *end;
		unsigned long sm = strtoul(p, &end, 10);
		if (end == p || (*end && *end != ',') || sm < 50 || sm > 200 || *n == max)
			return -1;
		sms[(*n)++] = (unsigned)sm;
		p = *end ? end + 1 : end;
	}
	return *n ? 0 : -1;
}

static int do_prepare(int argc, char **argv)
{
	char cache[4096] = "", dir[4096], p[4200];
	unsigned sms[16] = { 90 }, flags = 0;
	size_t nsm = 1;
	int i = 1, rc = 0, named = 0;
	for (; i < argc; i++) {
		if (!strcmp(argv[i], "--cache-dir") && i + 1 < argc) {
			snprintf(cache, sizeof(cache), "%s", argv[++i]);
		} else if (!strcmp(argv[i], "--shared")) {
			flags |= GX_PCACHE_SHARED;
		} else if (!strcmp(argv[i], "--sm") && i + 1 < argc) {
			if (parse_sms(argv[++i], sms, sizeof(sms) / sizeof(sms[0]), &nsm)) {
				p_err("--sm %s: expected e.g. 80, 80,90 or all", argv[i]);
				return 2;
			}
		} else if (argv[i][0] == '-') {
			p_err("unknown argument '%s' (usage: gpuext tools prepare [--cache-dir D] [--shared] [--sm N[,M...]|all] "
			      "[TOOL|FILE.bpf.o ...])",
			      argv[i]);
			return 2;
		} else {
			break;
		}
	}
	if (!cache[0] && gx_cache_dir(cache, sizeof(cache))) {
		p_err("no cache folder: set GPUEXT_CACHE_DIR or HOME, or pass --cache-dir");
		return 2;
	}
	tools_dir(dir, sizeof(dir));
	for (size_t s = 0; s < nsm; s++) {
		for (int a = i; a < argc; a++, named++) {
			if (strstr(argv[a], ".bpf.o")) {
				rc |= prepare_one(argv[a], cache, sms[s], flags);
			} else {
				snprintf(p, sizeof(p), "%s/%s.bpf.o", dir, argv[a]);
				rc |= prepare_one(p, cache, sms[s], flags);
			}
		}
		size_t nt;
		const struct gx_tool *tools = gx_tools(&nt);
		for (size_t t = 0; !named && t < nt; t++) {
			snprintf(p, sizeof(p), "%s/%s.bpf.o", dir, tools[t].object);
			rc |= prepare_one(p, cache, sms[s], flags);
		}
		/* and the tools' load-time variants (GX_KRS_CAP, ...) */
		size_t nv;
		const struct gx_tool_variant *v = gx_tool_variants(&nv);
		for (size_t t = 0; !named && t < nv; t++) {
			snprintf(p, sizeof(p), "%s/%s.bpf.o", dir, v[t].object);
			rc |= prepare_one(p, cache, sms[s], flags);
		}
	}
	return rc;
}

/* ---- loading a run's data ---- */
static int do_report(int argc, char **argv)
{
	const char *tool = NULL, *trace = NULL;
	char dir[4096] = "";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--dir") && i + 1 < argc)
			snprintf(dir, sizeof(dir), "%s", argv[++i]);
		else if (!strcmp(argv[i], "--trace") && i + 1 < argc)
			trace = argv[++i];
		else if (!strcmp(argv[i], "--json"))
			gx_json = true;
		else if (argv[i][0] != '-' && !tool)
			tool = argv[i];
		else {
			p_err("unknown argument '%s' (usage: gpuext tools report TOOL [--dir D] [--trace F])", argv[i]);
			return 2;
		}
	}
	if (!gx_tool_find(tool)) {
		p_err("unknown tool '%s' (try 'gpuext tools')", tool ? tool : "");
		return 2;
	}
	if (!dir[0]) {
		const char *e = getenv("GPUEXT_SHM_DIR");
		snprintf(dir, sizeof(dir), "%s", e && *e ? e : "");
		if (!dir[0])
			snprintf(dir, sizeof(dir), "/dev/shm/gpuext-%u", (unsigned)getuid());
	}
	char err[600];
	int ret = gx_tools_report(tool, dir, gx_json, trace, err, sizeof(err));
	if (ret < 0) {
		p_err("%s", err);
		return 1;
	}
	return ret;
}

/* `gpuext tools rewrite TOOL|FILE.bpf.o APP.ptx [-o OUT] [--sm N] [--sample N]`:
 * what the shim does at module load, offline — JIT the policy, rewrite the
 * PTX with its hook bindings and link its code in. For tests and inspection.
 * --sample N: the sampling programs' 1 in N (memtrace's gx_mem_sample;
 * else GPUEXT_MEM_SAMPLE, else their own). */
/* One policy of `tools rewrite`: a tool name or a .bpf.o path, JIT'd. */
static int rewrite_load(const char *pol, unsigned sm, struct gx_policy_desc *d)
{
	char path[4200], dir[4096], err[600];
	if (strstr(pol, ".bpf.o")) {
		snprintf(path, sizeof(path), "%s", pol);
	} else {
		tools_dir(dir, sizeof(dir));
		snprintf(path, sizeof(path), "%s/%s.bpf.o", dir, pol);
	}
	if (gx_policy_build_file(path, sm, d, err, sizeof(err))) {
		p_err("%s", err);
		return 1;
	}
	return 0;
}

static int do_rewrite(int argc, char **argv)
{
	const char *pol = NULL, *app = NULL, *out = NULL;
	unsigned sm = 90;
	long sample = -1;
	static const char usage[] =
		"usage: gpuext tools rewrite TOOL|FILE.bpf.o[,...] APP.ptx [-o OUT] [--sm N] [--sample N]";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-o") && i + 1 < argc)
			out = argv[++i];
		else if (!strcmp(argv[i], "--sm") && i + 1 < argc)
			sm = (unsigned)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--sample") && i + 1 < argc)
			sample = (long)(strtoul(argv[++i], NULL, 10) & 0x7fffffffu);
		else if (argv[i][0] != '-' && !pol)
			pol = argv[i];
		else if (argv[i][0] != '-' && !app)
			app = argv[i];
		else {
			p_err("%s", usage);
			return 2;
		}
	}
	if (!pol || !app) {
		p_err("%s", usage);
		return 2;
	}
	/* Several policies (comma-separated): chained at every shared hook, as
	 * the shim runs GPUEXT_TOOL=a,b or a tool beside GPUEXT_POLICY. */
	if (sample < 0)
		sample = gx_ptx_mem_sample_from_env(); /* as the shim */
	struct gx_policy_desc d[GX_PMERGE_MAX];
	size_t n = 0;
	char *list = strdup(pol), *save = NULL, err[512] = "";
	int rc = list ? 0 : 1;
	for (char *t = list ? strtok_r(list, ",", &save) : NULL; t && !rc; t = strtok_r(NULL, ",", &save)) {
		if (n == GX_PMERGE_MAX) {
			p_err("at most %d policies", GX_PMERGE_MAX);
			rc = 2;
		} else if (!(rc = rewrite_load(t, sm, &d[n]))) {
			n++;
		}
	}
	char *ptx = NULL;
	size_t plen = 0;
	struct gx_policy_set set;
	memset(&set, 0, sizeof(set));
	int ret = 0;
	if (!rc && (ret = gx_read_file(app, &ptx, &plen, 256u << 20))) {
		p_err("%s: cannot read: %s", app, strerror(-ret));
		rc = 1;
	}
	if (!rc && (ret = gx_pset_build(d, n, &set, err, sizeof(err)))) {
		p_err("%s", err);
		rc = 1;
	}
	struct gx_ptx_rewrite_result res;
	memset(&res, 0, sizeof(res));
	if (!rc) {
		struct gx_ptx_rewrite_opts o = { .sz = sizeof(o), .hooks = set.hooks, .policy_ptx = set.ptx,
						 .policy_len = set.ptx_len, .bindings = set.binds,
						 .nr_bindings = set.nr_binds, .bind_samples = set.samples,
						 .flags = gx_ptx_flags_from_env(),
						 .mem_sample = (unsigned)sample };
		ret = gx_ptx_rewrite(ptx, plen, &o, &res);
		if (ret) {
			p_err("%s: %s", app, res.err[0] ? res.err : strerror(-ret));
			rc = 1;
		} else if (out && strcmp(out, "-")) {
			rc = gx_write_file(out, res.ptx, res.len) ? 1 : 0;
		} else {
			fwrite(res.ptx, 1, res.len, stdout);
		}
		if (!rc)
			fprintf(stderr, "%s: %u kernels, %u hook sites, policy %s\n", app, res.nr_kernels, res.nr_hooks,
				pol);
	}
	gx_ptx_rewrite_result_free(&res);
	gx_pset_free(&set);
	for (size_t k = 0; k < n; k++)
		gx_pdesc_free(&d[k]);
	free(ptx);
	free(list);
	return rc;
}

int do_tools(int argc, char **argv)
{
	static const struct gx_cmd cmds[] = {
		{ "list", do_list, "list the tools" },
		{ "prepare", do_prepare, "verify and JIT tools/policies into the JIT cache" },
		{ "report", do_report, "print a tool's report from a run's data" },
		{ "rewrite", do_rewrite, "rewrite a PTX file with a tool's hooks (what the shim does)" },
		{ 0 },
	};
	if (argc < 2)
		return do_list(argc, argv);
	return gx_cmd_dispatch("tools", cmds, argc - 1, argv + 1);
}
