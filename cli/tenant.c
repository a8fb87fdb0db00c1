/* `gpuext tenant` — the tenants sharing this user's GPUs (the table of
 * tenant/gx_tenant.h in the maps folder): list them with class, window,
 * launches in flight and time held; change a tenant's class or window while
 * it runs; reap what dead processes left. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_internal.h"
#include "common/gx_util.h"
#include "tenant/gx_tenant.h"

static int do_list(int argc, char **argv)
{
	(void)argc, (void)argv;
	struct gx_tn_info in[GX_TN_MAX_TENANTS];
	int n = gx_tn_list(in, GX_TN_MAX_TENANTS, 1);
	if (n < 0 && n != -ENOENT) {
		p_err("cannot read the tenant table: %s", strerror(-n));
		return 1;
	}
	if (n < 0)
		n = 0;
	if (gx_json)
		printf("[");
	else
		printf("%-20s %-5s %6s %5s %8s %8s %10s %10s %9s %9s  %s\n", "TENANT", "CLASS", "WINDOW", "PROCS",
		       "INFLIGHT", "HELD", "THROTTLED", "LAUNCHES", "P50(us)", "P99(us)", "PIDS");
	for (int i = 0; i < n; i++) {
		const struct gx_tn_info *t = &in[i];
		char pids[96] = "";
		for (uint32_t j = 0; j < t->nr_procs && j < 8; j++)
			snprintf(pids + strlen(pids), sizeof(pids) - strlen(pids), "%s%u", j ? "," : "", t->pids[j]);
		if (gx_json) {
			printf("%s{\"name\":", i ? "," : "");
			gx_json_str(stdout, t->name);
			printf(",\"class\":\"%s\",\"window\":%u,\"procs\":%u,\"pids\":[%s],\"inflight\":%u,"
			       "\"max_inflight\":%u,\"launches\":%" PRIu64 ",\"completions\":%" PRIu64
			       ",\"untracked\":%" PRIu64 ",\"held\":%" PRIu64 ",\"throttled_ns\":%" PRIu64
			       ",\"kernel_ns\":%" PRIu64 ",\"p50_ns\":%" PRIu64 ",\"p99_ns\":%" PRIu64
			       ",\"p999_ns\":%" PRIu64 "}",
			       gx_tn_class_name(t->cls), t->window, t->nr_procs, pids, t->inflight, t->max_inflight,
			       t->launches, t->completions, t->untracked, t->held, t->throttled_ns, t->kernel_ns,
			       t->p50_ns, t->p99_ns, t->p999_ns);
		} else {
			char win[16];
			snprintf(win, sizeof(win), t->window ? "%u" : "-", t->window);
			printf("%-20s %-5s %6s %5u %8u %8" PRIu64 " %8.1fms %10" PRIu64 " %9.1f %9.1f  %s\n", t->name,
			       gx_tn_class_name(t->cls), win, t->nr_procs, t->inflight, t->held, t->throttled_ns / 1e6,
			       t->launches, t->p50_ns / 1e3, t->p99_ns / 1e3, pids);
		}
	}
	if (gx_json)
		printf("]\n");
	return 0;
}

static int do_set(int argc, char **argv)
{
	if (argc < 4 || (argc - 2) % 2) {
		p_err("usage: gpuext tenant set NAME [class lc|be] [window N]");
		return 2;
	}
	const char *name = argv[1];
	int cls = -1;
	int64_t window = -1;
	for (int i = 2; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "class")) {
			if ((cls = gx_tn_parse_class(argv[i + 1])) < 0) {
				p_err("class '%s': use lc or be", argv[i + 1]);
				return 2;
			}
		} else if (!strcmp(argv[i], "window")) {
			char *end;
			unsigned long long w = strtoull(argv[i + 1], &end, 0);
			if (*end || !*argv[i + 1] || w > UINT32_MAX) {
				p_err("window '%s': a number of launches in flight (0: no cap)", argv[i + 1]);
				return 2;
			}
			window = (int64_t)w;
		} else {
			p_err("unknown setting '%s' (class or window)", argv[i]);
			return 2;
		}
	}
	int err = gx_tn_set(name, cls, window);
	if (err) {
		p_err(err == -ENOENT ? "no tenant '%s' (see 'gpuext tenant list')" : "tenant '%s': %s", name,
		      strerror(-err));
		return 1;
	}
	if (gx_json)
		printf("{\"name\":\"%s\",\"changed\":true}\n", name);
	return 0;
}

static int do_gc(int argc, char **argv)
{
	(void)argc, (void)argv;
	int n = gx_tn_gc();
	if (n < 0 && n != -ENOENT) {
		p_err("cannot read the tenant table: %s", strerror(-n));
		return 1;
	}
	if (gx_json)
		printf("{\"reaped\":%d}\n", n < 0 ? 0 : n);
	else
		printf("%d dead processes reaped\n", n < 0 ? 0 : n);
	return 0;
}

static const struct gx_cmd cmds[] = {
	{ "list", do_list, "tenants: class, window, launches in flight, time held, latency" },
	{ "set", do_set, "NAME [class lc|be] [window N]: change a running tenant" },
	{ "gc", do_gc, "reap what dead tenants left in the table" },
	{ 0 },
};

int do_tenant(int argc, char **argv)
{
	int n = 0;
	for (int i = 0; i < argc; i++) /* --json after the command too */
		if (!strcmp(argv[i], "--json") || !strcmp(argv[i], "-j"))
			gx_json = true;
		else
			argv[n++] = argv[i];
	argc = n;
	if (argc < 2)
		return do_list(argc, argv);
	return gx_cmd_dispatch("tenant", cmds, argc - 1, argv + 1);
}
