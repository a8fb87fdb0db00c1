/* ptx_throughput — MB/s of PTX through ptx-rewrite on this machine.
 *
 * usage: ptx_throughput [-r RUNS] [-s STAGE] FILE.ptx...   (or "PATH ..." lines on stdin)
 * Every file is loaded once; each stage then processes all of them RUNS times
 * and the median run (process CPU time: the machine is shared) is reported
 * for each stage (-s N: only stage N, for profiling): parse only, parse+emit, gx_ptx_rewrite()
 * identity, entry/exit hooks, all hooks, all hooks + persistent workers (those with the
 * default elided stubs), all hooks with stubs called, with the probe handler inlined and
 * with it called (a site at every hook, as with a policy). A
 * stage whose rewrite fails on a module counts that module's time and says
 * how many failed (the shim would load the original). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/gx_util.h"
#include "ptx-rewrite/gx_ptx.h"

struct input {
	char *buf;
	size_t len;
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

enum stage { S_PARSE, S_EMIT, S_IDENT, S_EE, S_ALL, S_ALLP, S_ALLC, S_ALLPR, S_ALLPC, S_N };
static const char *stage_name[S_N] = {
	"parse", "parse+emit", "rewrite (identity)", "rewrite --hooks entry,exit",
	"rewrite --hooks all", "rewrite --hooks all --persistent",
	"rewrite --hooks all --stubs call", "rewrite --hooks all --stubs probe",
	"rewrite --hooks all --stubs probe-call",
};

static unsigned run_stage(enum stage s, struct input *in, size_t n)
{
	unsigned failed = 0;
	for (size_t i = 0; i < n; i++) {
		if (s == S_PARSE || s == S_EMIT) {
			char err[256];
			struct gx_ptx_module *m = gx_ptx_module__parse(in[i].buf, in[i].len, err, sizeof(err));
			if (!m) {
				failed++;
				continue;
			}
			if (s == S_EMIT) {
				char *text = NULL;
				size_t len = 0;
				if (gx_ptx_module__emit(m, &text, &len))
					failed++;
				free(text);
			}
			gx_ptx_module__free(m);
			continue;
		}
		struct gx_ptx_rewrite_opts o = {.sz = sizeof(o)};
		if (s == S_EE)
			o.hooks = GDEV_HOOK_ENTRY | GDEV_HOOK_EXIT;
		if (s == S_ALL || s == S_ALLP || s == S_ALLC || s == S_ALLPR || s == S_ALLPC)
			o.hooks = GDEV_HOOK_ENTRY | GDEV_HOOK_EXIT | GDEV_HOOK_MEM | GDEV_HOOK_FENCE;
		/* Default stubs are elided (no code at the sites): call and probe
		 * put a site at every hook, as a policy does. */
		if (s == S_ALLC)
			o.stubs = GX_PTX_STUBS_CALL;
		if (s == S_ALLPR)
			o.stubs = GX_PTX_STUBS_PROBE;
		if (s == S_ALLPC)
			o.stubs = GX_PTX_STUBS_PROBE_CALL;
		o.persistent = s == S_ALLP;
		struct gx_ptx_rewrite_result r;
		if (gx_ptx_rewrite(in[i].buf, in[i].len, &o, &r))
			failed++;
		gx_ptx_rewrite_result_free(&r);
	}
	return failed;
}

int main(int argc, char **argv)
{
	int runs = 9, c, only = -1;
	while ((c = getopt(argc, argv, "r:s:h")) != -1) {
		if (c == 'r')
			runs = atoi(optarg) > 0 ? atoi(optarg) : 1;
		else if (c == 's')
			only = atoi(optarg);
		else {
			fprintf(stderr, "usage: ptx_throughput [-r RUNS] [-s STAGE] FILE.ptx... (or paths on stdin)\n");
			return c == 'h' ? 0 : 2;
		}
	}
	struct input *in = NULL;
	size_t n = 0, cap = 0, total = 0;
	char line[4096];
	char **paths = argv + optind;
	int npaths = argc - optind;
	for (int k = 0;; k++) {
		const char *path;
		if (npaths) {
			if (k >= npaths)
				break;
			path = paths[k];
		} else {
			if (!fgets(line, sizeof(line), stdin))
				break;
			line[strcspn(line, " \t\n")] = 0;
			if (!line[0])
				continue;
			path = line;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			in = realloc(in, cap * sizeof(*in));
			if (!in)
				return 1;
		}
		if (gx_read_file(path, &in[n].buf, &in[n].len, 0)) {
			perror(path);
			return 1;
		}
		total += in[n++].len;
	}
	if (!n) {
		fprintf(stderr, "ptx_throughput: no input\n");
		return 2;
	}
	printf("%zu modules, %.2f MB, median of %d runs\n", n, total / 1e6, runs);
	printf("%-34s %10s %10s %s\n", "stage", "ms/run", "MB/s", "failed");
	double *t = calloc((size_t)runs, sizeof(*t));
	for (int s = 0; s < S_N; s++) {
		if (only >= 0 && s != only)
			continue;
		unsigned failed = 0;
		for (int r = 0; r < runs; r++) {
			double t0 = now();
			failed = run_stage((enum stage)s, in, n);
			t[r] = now() - t0;
		}
		qsort(t, (size_t)runs, sizeof(*t), cmp_d);
		double med = t[runs / 2];
		printf("%-34s %10.2f %10.1f %u\n", stage_name[s], med * 1e3, total / 1e6 / med, failed);
	}
	free(t);
	for (size_t i = 0; i < n; i++)
		free(in[i].buf);
	free(in);
	return 0;
}
