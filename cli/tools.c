/* `gpuext tools` — the shipped observability tools.
 *
 *   gpuext tools [list]                       the tools and where their objects are
 *   gpuext tools prepare [--cache-dir D] [--sm N] [TOOL|FILE.bpf.o ...]
 *                                             verify + JIT into the policy cache
 *   gpuext tools report TOOL [--dir D] [--trace F]   format what a run left
 *
 * `prepare` exists because GPU machines may lack LLVM: the cache filled here
 * travels with the tree (GPUEXT_CACHE_DIR) and the shim reads it there.
 * `report` is what `gpuext-run --tool` calls after the application exits;
 * the loading of tool logs and map files lives here, the per-tool output in
 * tools_fmt.c. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/gx_cli.h"
#include "cli/gx_tooldata.h"
#include "devbpf/tools/gx_pcache.h"
#include "devbpf/tools/gx_pmerge.h"
#include "gx_util.h"
#include "ptx-rewrite/gx_ptx.h"

static const struct {
	const char *name;
	const char *what;
	int (*fmt)(const struct tooldata *, int, FILE *);
} tools[] = {
	{ "kernelretsnoop", "per-block finish time and SM, per kernel launch", fmt_kernelretsnoop },
	{ "kernelretsnoop_all", "kernelretsnoop without sampling large launches (costs more)", fmt_kernelretsnoop },
	{ "threadhist", "blocks/warps/threads executed per SM (load imbalance)", fmt_threadhist },
	{ "launchlate", "host launch -> first block start latency, per kernel", fmt_launchlate },
	{ "memtrace", "sampled global memory accesses (address, size, op, SM, time)", fmt_memtrace },
};

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
	if (gx_json)
		printf("[");
	for (size_t i = 0; i < GX_ARRAY_SIZE(tools); i++) {
		snprintf(p, sizeof(p), "%s/%s.bpf.o", dir, tools[i].name);
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
static int prepare_one(const char *path, const char *tag, const char *cache, unsigned sm)
{
	char *buf = NULL, err[512];
	size_t len = 0;
	int ret = gx_read_file(path, &buf, &len, 64u << 20);
	if (ret) {
		p_err("%s: cannot read: %s", path, strerror(-ret));
		return 1;
	}
	struct gx_policy_desc d;
	ret = gx_jitlib_build_lazy(buf, len, tag, sm, &d, err, sizeof(err));
	free(buf);
	if (ret) {
		p_err("%s: %s", path, err);
		return 1;
	}
	ret = gx_pcache_store(cache, &d);
	char p[4200];
	gx_pcache_path(cache, d.hash, sm, p, sizeof(p));
	if (ret)
		p_err("%s: cannot write %s: %s", path, p, strerror(-ret));
	else if (!gx_json)
		printf("%-16s sm_%u  %zu programs, %zu maps, %zu bytes of PTX -> %s\n", tag, sm, d.nr_progs,
		       d.nr_maps, d.ptx_len, p);
	gx_pdesc_free(&d);
	return ret ? 1 : 0;
}

static int do_prepare(int argc, char **argv)
{
	char cache[4096] = "", dir[4096], p[4200], tag[GX_POL_NAME_MAX];
	unsigned sm = 90;
	int i = 1, rc = 0, named = 0;
	for (; i < argc; i++) {
		if (!strcmp(argv[i], "--cache-dir") && i + 1 < argc)
			snprintf(cache, sizeof(cache), "%s", argv[++i]);
		else if (!strcmp(argv[i], "--sm") && i + 1 < argc)
			sm = (unsigned)strtoul(argv[++i], NULL, 10);
		else if (argv[i][0] == '-') {
			p_err("unknown argument '%s' (usage: gpuext tools prepare [--cache-dir D] [--sm N] "
			      "[TOOL|FILE.bpf.o ...])",
			      argv[i]);
			return 2;
		} else
			break;
	}
	if (!cache[0] && gx_pcache_dir(cache, sizeof(cache))) {
		p_err("no cache folder: set GPUEXT_CACHE_DIR or HOME, or pass --cache-dir");
		return 2;
	}
	if (sm < 50 || sm > 200) {
		p_err("--sm %u: expected e.g. 80, 90", sm);
		return 2;
	}
	tools_dir(dir, sizeof(dir));
	for (; i < argc; i++, named++) {
		const char *a = argv[i];
		if (strstr(a, ".bpf.o")) {
			const char *b = strrchr(a, '/');
			snprintf(tag, sizeof(tag), "%.63s", b ? b + 1 : a);
			char *dot = strstr(tag, ".bpf.o");
			if (dot)
				*dot = 0;
			rc |= prepare_one(a, tag, cache, sm);
		} else {
			snprintf(p, sizeof(p), "%s/%s.bpf.o", dir, a);
			rc |= prepare_one(p, a, cache, sm);
		}
	}
	for (size_t t = 0; !named && t < GX_ARRAY_SIZE(tools); t++) {
		snprintf(p, sizeof(p), "%s/%s.bpf.o", dir, tools[t].name);
		rc |= prepare_one(p, tools[t].name, cache, sm);
	}
	return rc;
}

/* ---- loading a run's data ---- */
static void *grow(void *p, size_t *cap, size_t n, size_t sz)
{
	if (n < *cap)
		return p;
	size_t nc = *cap ? *cap * 2 : 64;
	void *q = realloc(p, nc * sz);
	if (q)
		*cap = nc;
	return q;
}

static int load_events(struct tooldata *td, const char *path)
{
	char *buf = NULL;
	size_t len = 0;
	int ret = gx_read_file(path, &buf, &len, (size_t)8 << 30);
	if (ret)
		return ret;
	char **nb = realloc(td->bufs, (td->nr_bufs + 1) * sizeof(*nb));
	if (!nb) {
		free(buf);
		return -ENOMEM;
	}
	td->bufs = nb;
	td->bufs[td->nr_bufs++] = buf;
	static size_t cap_c, cap_l, cap_r, cap_k;
	uint32_t pid = 0;
	for (size_t off = 0; off + sizeof(struct gx_tev) <= len;) {
		const struct gx_tev *h = (const struct gx_tev *)(buf + off);
		if (h->len < sizeof(*h) || h->len % 8 || h->len > len - off)
			break; /* truncated tail (process killed mid-write) */
		switch (h->type) {
		case GX_TEV_PROC:
			if (h->len >= sizeof(struct gx_tev_proc)) {
				pid = ((const struct gx_tev_proc *)h)->pid;
				td->nr_procs++;
			}
			break;
		case GX_TEV_CTX:
			if (h->len >= sizeof(struct gx_tev_ctx) &&
			    (td->ctxs = grow(td->ctxs, &cap_c, td->nr_ctxs, sizeof(*td->ctxs)))) {
				const struct gx_tev_ctx *c = (const void *)h;
				td->ctxs[td->nr_ctxs++] = (struct td_ctx){ pid, c->ctx, c->dev, c->sm, c->nr_sms,
									   c->calibrated, c->gt_minus_host,
									   c->calib_err_ns };
			}
			break;
		case GX_TEV_KNAME:
			if (h->len > sizeof(struct gx_tev_kname) &&
			    (td->knames = grow(td->knames, &cap_k, td->nr_knames, sizeof(*td->knames)))) {
				const struct gx_tev_kname *k = (const void *)h;
				if (memchr(k->name, 0, h->len - sizeof(*k)))
					td->knames[td->nr_knames++] = (struct td_kname){ k->kernel_id, k->name };
			}
			break;
		case GX_TEV_LAUNCH:
			if (h->len >= sizeof(struct gx_tev_launch) &&
			    (td->launches = grow(td->launches, &cap_l, td->nr_launches, sizeof(*td->launches)))) {
				const struct gx_tev_launch *l = (const void *)h;
				struct td_launch *o = &td->launches[td->nr_launches++];
				*o = (struct td_launch){ .pid = pid, .ctx = l->ctx, .seq = l->seq, .host_ns = l->host_ns,
							 .kernel_id = l->kernel_id };
				memcpy(o->grid, l->grid, sizeof(o->grid));
				memcpy(o->block, l->block, sizeof(o->block));
			}
			break;
		case GX_TEV_REC:
			if (h->len >= sizeof(struct gx_tev_rec) &&
			    (td->recs = grow(td->recs, &cap_r, td->nr_recs, sizeof(*td->recs)))) {
				const struct gx_tev_rec *r = (const void *)h;
				td->recs[td->nr_recs++] = (struct td_rec){ pid, r->ctx, r->map,
									   (uint32_t)(h->len - sizeof(*r)), r + 1 };
			}
			break;
		case GX_TEV_DROPS:
			if (h->len >= sizeof(struct gx_tev_drops))
				td->drops += ((const struct gx_tev_drops *)h)->drops;
			break;
		default:
			break;
		}
		off += h->len;
	}
	return 0;
}

int td_load(struct tooldata *td, const char *dir, const char *tool)
{
	memset(td, 0, sizeof(*td));
	td->tool = tool;
	td->dir = dir;
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	char suffix[96], p[4400];
	snprintf(suffix, sizeof(suffix), "-%s.events", tool);
	struct dirent *e;
	int ret = 0;
	char **names = NULL;
	size_t nn = 0;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name), sl = strlen(suffix);
		if (l > sl && !strcmp(e->d_name + l - sl, suffix)) {
			char **q = realloc(names, (nn + 1) * sizeof(*q));
			if (!q)
				break;
			names = q;
			names[nn++] = strdup(e->d_name);
		}
	}
	closedir(d);
	/* Sorted, so output does not depend on readdir order. */
	for (size_t i = 0; i < nn; i++)
		for (size_t j = i + 1; j < nn; j++)
			if (names[i] && names[j] && strcmp(names[i], names[j]) > 0) {
				char *t = names[i];
				names[i] = names[j];
				names[j] = t;
			}
	for (size_t i = 0; i < nn; i++) {
		if (names[i] && !ret) {
			snprintf(p, sizeof(p), "%.4000s/%s", dir, names[i]);
			ret = load_events(td, p);
		}
		free(names[i]);
	}
	free(names);
	return ret;
}

void td_free(struct tooldata *td)
{
	for (size_t i = 0; i < td->nr_bufs; i++)
		free(td->bufs[i]);
	free(td->bufs);
	free(td->ctxs);
	free(td->launches);
	free(td->recs);
	free(td->knames);
	memset(td, 0, sizeof(*td));
}

const char *td_kname(const struct tooldata *td, uint64_t id, char *buf, size_t n)
{
	for (size_t i = 0; i < td->nr_knames; i++)
		if (td->knames[i].id == id)
			return td->knames[i].name;
	snprintf(buf, n, "kernel-%016llx", (unsigned long long)id);
	return buf;
}

const struct td_ctx *td_ctx(const struct tooldata *td, uint32_t pid, uint32_t ctx)
{
	for (size_t i = 0; i < td->nr_ctxs; i++)
		if (td->ctxs[i].pid == pid && td->ctxs[i].ctx == ctx)
			return &td->ctxs[i];
	return NULL;
}

char **td_map_paths(const struct tooldata *td, const char *map)
{
	char want[160];
	snprintf(want, sizeof(want), "-%s.%s", td->tool, map);
	DIR *d = opendir(td->dir);
	char **out = calloc(1, sizeof(*out));
	size_t n = 0;
	if (!d || !out) {
		if (d)
			closedir(d);
		return out;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		const char *s = strstr(e->d_name, want);
		if (!s) { /* the maps runtime writes '.' in names as '_' */
			want[strlen(td->tool) + 1] = '_';
			s = strstr(e->d_name, want);
			want[strlen(td->tool) + 1] = '.';
		}
		if (!s || (s[strlen(want)] && s[strlen(want)] != '@'))
			continue;
		char **q = realloc(out, (n + 2) * sizeof(*q));
		if (!q)
			break;
		out = q;
		size_t l = strlen(td->dir) + strlen(e->d_name) + 2;
		out[n] = malloc(l);
		if (out[n])
			snprintf(out[n++], l, "%s/%s", td->dir, e->d_name);
		out[n] = NULL;
	}
	closedir(d);
	return out;
}

void td_paths_free(char **p)
{
	for (size_t i = 0; p && p[i]; i++)
		free(p[i]);
	free(p);
}

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
	size_t t = 0;
	for (; tool && t < GX_ARRAY_SIZE(tools); t++)
		if (!strcmp(tools[t].name, tool))
			break;
	if (!tool || t == GX_ARRAY_SIZE(tools)) {
		p_err("unknown tool '%s' (try 'gpuext tools')", tool ? tool : "");
		return 2;
	}
	if (!dir[0]) {
		const char *e = getenv("GPUEXT_SHM_DIR");
		snprintf(dir, sizeof(dir), "%s", e && *e ? e : "");
		if (!dir[0])
			snprintf(dir, sizeof(dir), "/dev/shm/gpuext-%u", (unsigned)getuid());
	}
	struct tooldata td;
	int ret = td_load(&td, dir, tool);
	if (ret) {
		p_err("%s: cannot read the tool data: %s", dir, strerror(-ret));
		td_free(&td);
		return 1;
	}
	if (!td.nr_procs) {
		p_err("%s: no %s data (did the application use the GPU through the shim? run with -v)", dir, tool);
		td_free(&td);
		return 1;
	}
	FILE *tf = NULL;
	if (trace && !(tf = fopen(trace, "w"))) {
		p_err("%s: cannot write: %s", trace, strerror(errno));
		td_free(&td);
		return 1;
	}
	if (tf)
		fprintf(tf, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"
			    "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"gpuext %s\"}}",
			tool);
	ret = tools[t].fmt(&td, gx_json, tf);
	if (tf) {
		fprintf(tf, "\n]}\n");
		if (fclose(tf)) {
			p_err("%s: write error", trace);
			ret = 1;
		}
	}
	td_free(&td);
	return ret;
}

/* `gpuext tools rewrite TOOL|FILE.bpf.o APP.ptx [-o OUT] [--sm N]`: what the
 * shim does at module load, offline — JIT the policy, rewrite the PTX with
 * its hook bindings and link its code in. For tests and inspection. */
/* One policy of `tools rewrite`: a tool name or a .bpf.o path, JIT'd. */
static int rewrite_load(const char *pol, unsigned sm, struct gx_policy_desc *d)
{
	char path[4200], dir[4096], tag[GX_POL_NAME_MAX], err[512];
	if (strstr(pol, ".bpf.o")) {
		snprintf(path, sizeof(path), "%s", pol);
	} else {
		tools_dir(dir, sizeof(dir));
		snprintf(path, sizeof(path), "%s/%s.bpf.o", dir, pol);
	}
	const char *b = strrchr(path, '/');
	snprintf(tag, sizeof(tag), "%.63s", b ? b + 1 : path);
	char *dot = strstr(tag, ".bpf.o");
	if (dot)
		*dot = 0;
	char *obj = NULL;
	size_t olen = 0;
	int ret = gx_read_file(path, &obj, &olen, 64u << 20);
	if (ret) {
		p_err("%s: cannot read: %s", path, strerror(-ret));
		return 1;
	}
	ret = gx_jitlib_build_lazy(obj, olen, tag, sm, d, err, sizeof(err));
	free(obj);
	if (ret) {
		p_err("%s: %s", path, err);
		return 1;
	}
	return 0;
}

static int do_rewrite(int argc, char **argv)
{
	const char *pol = NULL, *app = NULL, *out = NULL;
	unsigned sm = 90;
	static const char usage[] = "usage: gpuext tools rewrite TOOL|FILE.bpf.o[,...] APP.ptx [-o OUT] [--sm N]";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-o") && i + 1 < argc)
			out = argv[++i];
		else if (!strcmp(argv[i], "--sm") && i + 1 < argc)
			sm = (unsigned)strtoul(argv[++i], NULL, 10);
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
						 .nr_bindings = set.nr_binds,
						 .flags = gx_ptx_flags_from_env() };
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

static int do_tools(int argc, char **argv)
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
GX_CMD(tools, do_tools, "observability tools: list, prepare (JIT cache), report");
