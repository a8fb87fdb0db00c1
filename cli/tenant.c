/* `gpuext tenant` — the tenants sharing this user's GPUs (the table of
 * tenant/gx_tenant.h in the maps folder): list them with class, window,
 * launches in flight and time held, memory limit, usage and high-water
 * mark (summed, and per GPU on the rows below), GPU share and GPU time; change a tenant's class, window or limits
 * while it runs; reap what dead processes left. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_internal.h"
#include "common/gx_util.h"
#include "tenant/gx_tenant.h"

/* NVIDIA's spelling of a GPU's UUID (nvidia-smi -L). */
static void uuid_str(char *out, size_t n, const uint8_t *u)
{
	snprintf(out, n, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2],
		 u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

static void gpus_json(const struct gx_tn_info *t)
{
	printf(",\"gpus\":[");
	for (uint32_t g = 0; g < t->nr_gpus; g++) {
		const struct gx_tn_gpu_info *gi = &t->gpus[g];
		char u[48];
		uuid_str(u, sizeof(u), gi->dev);
		printf("%s{\"uuid\":\"%s\",\"mem_limit\":%" PRIu64 ",\"mem_used\":%" PRIu64 ",\"mem_hiwater\":%" PRIu64
		       ",\"mem_denied\":%" PRIu64 "}",
		       g ? "," : "", u, gi->mem_limit, gi->mem_used, gi->mem_hiwater, gi->mem_denied);
	}
	printf("]");
}

/* Under the tenant's row: each of its GPUs (the limit holds per GPU). */
static void gpus_rows(const struct gx_tn_info *t)
{
	for (uint32_t g = 0; g < t->nr_gpus; g++) {
		const struct gx_tn_gpu_info *gi = &t->gpus[g];
		char u[48], lim[24];
		uuid_str(u, sizeof(u), gi->dev);
		snprintf(lim, sizeof(lim), gi->mem_limit ? "%.0f" : "-", gi->mem_limit / 1048576.0);
		printf("  %-44s MEM(MiB) %.0f/%s HIGH(MiB) %.0f REFUSED %" PRIu64 "\n", u, gi->mem_used / 1048576.0,
		       lim, gi->mem_hiwater / 1048576.0, gi->mem_denied);
	}
}

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
		printf("%-20s %-5s %6s %5s %8s %8s %10s %10s %9s %9s %17s %9s %5s %9s  %s\n", "TENANT", "CLASS",
		       "WINDOW", "PROCS", "INFLIGHT", "HELD", "THROTTLED", "LAUNCHES", "P50(us)", "P99(us)", "MEM(MiB)",
		       "HIGH(MiB)", "SHARE", "GPU(s)", "PIDS");
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
			       ",\"p999_ns\":%" PRIu64 ",\"mem_limit\":%" PRIu64 ",\"mem_used\":%" PRIu64
			       ",\"mem_hiwater\":%" PRIu64 ",\"mem_denied\":%" PRIu64
			       ",\"gpu_share\":%u,\"gpu_ns\":%" PRIu64,
			       gx_tn_class_name(t->cls), t->window, t->nr_procs, pids, t->inflight, t->max_inflight,
			       t->launches, t->completions, t->untracked, t->held, t->throttled_ns, t->kernel_ns,
			       t->p50_ns, t->p99_ns, t->p999_ns, t->mem_limit, t->mem_used, t->mem_hiwater,
			       t->mem_denied, t->gpu_share, t->gpu_ns);
			gpus_json(t);
			printf("}");
		} else {
			char win[16];
			snprintf(win, sizeof(win), t->window ? "%u" : "-", t->window);
			char mem[40], share[8];
			if (t->mem_limit)
				snprintf(mem, sizeof(mem), "%.0f/%.0f", t->mem_used / 1048576.0,
					 t->mem_limit / 1048576.0);
			else
				snprintf(mem, sizeof(mem), "%.0f/-", t->mem_used / 1048576.0);
			snprintf(share, sizeof(share), t->gpu_share ? "%u%%" : "-", t->gpu_share);
			printf("%-20s %-5s %6s %5u %8u %8" PRIu64 " %8.1fms %10" PRIu64
			       " %9.1f %9.1f %17s %9.0f %5s %9.2f  %s\n",
			       t->name, gx_tn_class_name(t->cls), win, t->nr_procs, t->inflight, t->held,
			       t->throttled_ns / 1e6, t->launches, t->p50_ns / 1e3, t->p99_ns / 1e3, mem,
			       t->mem_hiwater / 1048576.0, share, t->gpu_ns / 1e9, pids);
			gpus_rows(t);
		}
	}
	if (gx_json)
		printf("]\n");
	return 0;
}

/* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (nvidia-smi -L) -> 16 bytes;
 * the end of it in *end. */
static int uuid_parse(const char *s, uint8_t u[16], const char **end)
{
	if (strncmp(s, "GPU-", 4))
		return -EINVAL;
	s += 4;
	for (int i = 0; i < 32; s++) {
		int v = *s >= '0' && *s <= '9'	 ? *s - '0'
			: *s >= 'a' && *s <= 'f' ? *s - 'a' + 10
			: *s >= 'A' && *s <= 'F' ? *s - 'A' + 10
						 : -1;
		if (*s == '-' && i)
			continue;
		if (v < 0)
			return -EINVAL;
		u[i / 2] = (uint8_t)(i % 2 ? u[i / 2] | v : v << 4);
		i++;
	}
	*end = s;
	return 0;
}

/* mem-limit GPU-UUID=SIZE|none: one GPU's own limit. */
static int set_gpu_limit(const char *name, const char *v)
{
	uint8_t u[16];
	const char *end;
	uint64_t b = 0;
	if (uuid_parse(v, u, &end) || *end != '=' || (strcmp(end + 1, "none") && gx_tn_parse_size(end + 1, &b))) {
		p_err("mem-limit '%s': GPU-UUID=SIZE (as gpuext tenant lists it) or GPU-UUID=none", v);
		return 2;
	}
	int err = gx_tn_set_gpu_mem_limit(name, u, b);
	if (err) {
		p_err(err == -ENOENT   ? "no tenant '%s' (see 'gpuext tenant list')"
		      : err == -ENODEV ? "tenant '%s' does not use that GPU (see 'gpuext tenant list')"
				       : "tenant '%s': %s",
		      name, strerror(-err));
		return 1;
	}
	return 0;
}

static int do_set(int argc, char **argv)
{
	if (argc < 4 || (argc - 2) % 2) {
		p_err("usage: gpuext tenant set NAME [class lc|be] [window N] [mem-limit SIZE|none|GPU-UUID=SIZE|none] "
		      "[gpu-share PCT]");
		return 2;
	}
	const char *name = argv[1];
	int cls = -1;
	int64_t window = -1, mem_limit = -1, gpu_share = -1;
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
		} else if (!strcmp(argv[i], "mem-limit") && !strncmp(argv[i + 1], "GPU-", 4)) {
			int rc = set_gpu_limit(name, argv[i + 1]);
			if (rc)
				return rc;
		} else if (!strcmp(argv[i], "mem-limit")) {
			uint64_t b = 0;
			if (strcmp(argv[i + 1], "none") && strcmp(argv[i + 1], "0") &&
			    (gx_tn_parse_size(argv[i + 1], &b) || b > INT64_MAX)) {
				p_err("mem-limit '%s': bytes with an optional K, M, G or T, or none", argv[i + 1]);
				return 2;
			}
			mem_limit = (int64_t)b;
		} else if (!strcmp(argv[i], "gpu-share")) {
			char *end;
			unsigned long p = strtoul(argv[i + 1], &end, 10);
			if (*end || !*argv[i + 1] || p > 100) {
				p_err("gpu-share '%s': a percentage, 0 (none) to 100", argv[i + 1]);
				return 2;
			}
			gpu_share = (int64_t)p;
		} else {
			p_err("unknown setting '%s' (class, window, mem-limit or gpu-share)", argv[i]);
			return 2;
		}
	}
	int err = cls >= 0 || window >= 0 ? gx_tn_set(name, cls, window) : 0;
	if (!err && (mem_limit >= 0 || gpu_share >= 0))
		err = gx_tn_set_limits(name, mem_limit, gpu_share);
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
	{ "list", do_list, "tenants: class, window, launches in flight, time held, latency, memory, share" },
	{ "set", do_set,
	  "NAME [class lc|be] [window N] [mem-limit SIZE|none] [gpu-share PCT]: change a running tenant" },
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
