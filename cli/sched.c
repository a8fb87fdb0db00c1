/* sched.c — `gpuext sched [LOG]`: what blocksched decided and what the
 * workers did in a run (the schedule log the shim writes with
 * GPUEXT_SCHED_LOG, which gpuext-run --sched sets): per kernel the
 * decisions, and per sampled launch units per SM, steals, span and idle
 * share; --json for the same as JSON, --trace FILE for a Perfetto/Chrome
 * trace with a track per SM. Without LOG: the newest *-sched.log of the
 * shm folder ($GPUEXT_SHM_DIR, /dev/shm/gpuext-$UID). */
#include <dirent.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blocksched/gx_blocksched.h"
#include "cli/cli_internal.h"
#include "devbpf/gx_bpf.h"

/* The newest "<pid>-sched.log" in dir, into out. 0 or -1. */
static int newest_log(const char *dir, char *out, size_t n)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	struct dirent *e;
	time_t best = 0;
	int found = -1;
	char p[PATH_MAX];
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		struct stat st;
		if (l < 10 || strcmp(e->d_name + l - 10, "-sched.log"))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		if (!stat(p, &st) && (found < 0 || st.st_mtime >= best)) {
			best = st.st_mtime;
			snprintf(out, n, "%s", p);
			found = 0;
		}
	}
	closedir(d);
	return found;
}

int do_sched(int argc, char **argv)
{
	const char *trace = NULL;
	static const struct option lo[] = { { "trace", required_argument, 0, 't' },
					    { "json", no_argument, 0, 'j' },
					    { "help", no_argument, 0, 'h' },
					    { 0, 0, 0, 0 } };
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "t:jh", lo, NULL)) != -1) {
		switch (c) {
		case 't':
			trace = optarg;
			break;
		case 'j':
			gx_json = true;
			break;
		case 'h':
			printf("usage: gpuext [--json] sched [--trace FILE] [LOG]\n"
			       "What blocksched decided per kernel and what the workers of sampled launches\n"
			       "did (units per SM, steals, span, idle share), from a schedule log\n"
			       "(GPUEXT_SCHED_LOG; default: the newest *-sched.log in the shm folder).\n");
			return 0;
		default:
			return 2;
		}
	}
	char path[PATH_MAX], dir[PATH_MAX - 64];
	if (optind < argc) {
		snprintf(path, sizeof(path), "%s", argv[optind]);
	} else if (gx_map_shm_dir(dir, sizeof(dir)) || newest_log(dir, path, sizeof(path))) {
		p_err("no schedule log given and none in the shm folder (run with gpuext-run --sched)");
		return 1;
	}
	char err[512] = "";
	int ret = gx_bs_report(path, gx_json, trace, err, sizeof(err));
	if (ret) {
		p_err("%s", err[0] ? err : "cannot read the schedule log");
		return 1;
	}
	return 0;
}
