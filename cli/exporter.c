/* exporter.c — gpuext-exporter (also `gpuext exporter`): Prometheus
 * /metrics from what the processes under the shim already publish in the
 * per-user shared-memory folder (docs/metrics.md):
 *   <dir>/<pid>-gpuext.stats    each process's counters (gpuext/gx_stats.h)
 *   <dir>/tenants.tab           the tenant table (gx_tn_list, no reaping)
 *   <dir>/<pid>-<obj>_<map>...  device maps named in --config
 * and the same in each run-* folder gpuext-run --tool makes in it.
 *
 * A scrape reads these files and nothing else: no lock an application takes
 * (the tenant table's robust lock is never touched: listing without a reap
 * reads relaxed words), no write into the folder. Every file goes through the
 * trust rule (common/gx_trust.h), every count is taken as a hint: a short,
 * garbage or foreign file is skipped and counted in
 * gpuext_exporter_files_skipped_total, never a crash. A stats file whose
 * process is gone (or whose pid names another process now) is skipped, so
 * dead processes' series disappear at the next scrape. Kernels are bounded
 * per process (top N by launches, the rest summed as kernel="other").
 *
 * The HTTP side is libmicrohttpd (one internal polling thread: scrapes run
 * one at a time, no lock here either). This is a program of its own because
 * libmicrohttpd is not in the set of libraries gpuext's other binaries may
 * need (scripts/dist-check.sh): `gpuext exporter` execs it. */
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "common/gx_trust.h"
#include "common/gx_util.h"
#include "devbpf/gx_bpf.h"
#include "gpuext/gpu_ext.h"
#include "gpuext/gx_hooks.h"
#include "gpuext/gx_stats.h"
#include "tenant/gx_tenant.h"

#define MAX_PROCS   4096
#define MAX_DIRS    64
#define MAX_METRICS 32
#define MAX_LABELS  4

/* ---- output buffer ---- */
struct out {
	char *p;
	size_t len, cap;
	bool oom;
};

static void outf(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void outf(struct out *o, const char *fmt, ...)
{
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		size_t room = o->cap - o->len;
		int n = o->p ? vsnprintf(o->p + o->len, room, fmt, ap) : -1;
		va_end(ap);
		if (n >= 0 && (size_t)n < room) {
			o->len += (size_t)n;
			return;
		}
		size_t cap = o->cap ? o->cap * 2 : 65536;
		while (n >= 0 && cap - o->len <= (size_t)n)
			cap *= 2;
		char *q = realloc(o->p, cap);
		if (!q) {
			o->oom = true;
			return;
		}
		o->p = q;
		o->cap = cap;
	}
}

/* A label value, escaped as the text format wants (\\, \", \n); bytes
 * that are not printable ASCII become '?' (names from other processes). */
static const char *esc(const char *s, size_t max, char *buf, size_t n)
{
	size_t j = 0;
	for (size_t i = 0; i < max && s[i] && j + 3 < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '\\' || c == '"') {
			buf[j++] = '\\';
			buf[j++] = (char)c;
		} else if (c == '\n') {
			buf[j++] = '\\';
			buf[j++] = 'n';
		} else {
			buf[j++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
		}
	}
	buf[j] = 0;
	return buf;
}

static void family(struct out *o, const char *name, const char *type, const char *help)
{
	outf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* ---- configuration ---- */
enum mtype { M_COUNTER, M_GAUGE, M_HISTOGRAM };
struct mlabel {
	char name[32];
	unsigned off, size; /* bytes of the key (size 0: the shard index / div) */
	unsigned div;
	bool kernel; /* a u64 kernel id, shown as the kernel's name (top_kernels, the rest "other") */
};
struct metric {
	char name[96], help[160], map[64];
	enum mtype type;
	unsigned voff, vsize; /* value: bytes at voff, 4 or 8 */
	struct mlabel labels[MAX_LABELS];
	unsigned nr_labels;
	/* histograms: the key (u32 at key offset 0) is the bucket, exp2 */
	double mult;
	unsigned bucket_max;
};
static struct metric metrics[MAX_METRICS];
static unsigned nr_metrics;
static unsigned top_kernels = 10;
static unsigned lat_per_octave = 4; /* exported latency buckets per octave (1..16) */

static const char *word(char **s)
{
	char *p = *s;
	while (*p == ' ' || *p == '\t')
		p++;
	if (!*p)
		return NULL;
	char *w = p, *sp = p + strcspn(p, " \t"), *q = strstr(p, "=\"");
	if (q && q < sp) { /* key="a quoted value" */
		char *e = strchr(q + 2, '"');
		if (e) {
			memmove(q + 1, q + 2, (size_t)(e - q - 2));
			e[-1] = 0;
			*s = e + 1;
			return w;
		}
	}
	if (*sp)
		*sp++ = 0;
	*s = sp;
	return w;
}

static int conf_err(const char *file, int line, const char *what)
{
	fprintf(stderr, "gpuext-exporter: %s:%d: %s\n", file, line, what);
	return -EINVAL;
}

static bool valid_name(const char *s)
{
	if (!*s || isdigit((unsigned char)*s))
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_' && *s != ':')
			return false;
	return true;
}

/* Lines:
 *   top_kernels N
 *   latency_buckets_per_octave N
 *   metric NAME counter|gauge|histogram map=MAP [value=OFF[:u32|u64]]
 *          [label=NAME:key@OFF:u32|u64|u8 ...] [label=NAME:shard/DIV]
 *          [multiplier=X] [buckets=N] [help="..."]
 * '#' starts a comment. */
/* Has m a kernel label other than l? */
static bool m_has_kernel(const struct metric *m, const struct mlabel *l)
{
	for (unsigned i = 0; i < m->nr_labels; i++)
		if (m->labels[i].kernel && &m->labels[i] != l)
			return true;
	return false;
}

static int load_config(const char *file)
{
	FILE *f = fopen(file, "re");
	if (!f) {
		fprintf(stderr, "gpuext-exporter: %s: %s\n", file, strerror(errno));
		return -errno;
	}
	char line[1024];
	int ln = 0, err = 0;
	while (!err && fgets(line, sizeof(line), f)) {
		ln++;
		char *h = strchr(line, '#');
		if (h && (h == line || h[-1] == ' ' || h[-1] == '\t') && !memchr(line, '"', (size_t)(h - line)))
			*h = 0;
		line[strcspn(line, "\r\n")] = 0;
		char *s = line;
		const char *k = word(&s);
		if (!k)
			continue;
		if (!strcmp(k, "top_kernels") || !strcmp(k, "latency_buckets_per_octave")) {
			const char *v = word(&s);
			char *end;
			long n = v ? strtol(v, &end, 10) : -1;
			bool lat = k[0] == 'l';
			if (!v || *end || n < (lat ? 1 : 0) || n > (lat ? 16 : 1000) || (lat && 16 % n))
				err = conf_err(file, ln,
					       lat ? "latency_buckets_per_octave: 1, 2, 4, 8 or 16"
						   : "top_kernels: 0..1000");
			else if (lat)
				lat_per_octave = (unsigned)n;
			else
				top_kernels = (unsigned)n;
			continue;
		}
		if (strcmp(k, "metric")) {
			err = conf_err(file, ln, "expected 'metric', 'top_kernels' or 'latency_buckets_per_octave'");
			break;
		}
		if (nr_metrics == MAX_METRICS) {
			err = conf_err(file, ln, "too many metrics (32)");
			break;
		}
		struct metric *m = &metrics[nr_metrics];
		memset(m, 0, sizeof(*m));
		m->vsize = 8;
		m->mult = 1;
		m->bucket_max = 64;
		const char *name = word(&s), *type = word(&s);
		if (!name || !type || !valid_name(name) || strlen(name) >= sizeof(m->name)) {
			err = conf_err(file, ln, "metric NAME TYPE: a Prometheus metric name");
			break;
		}
		snprintf(m->name, sizeof(m->name), "%s", name);
		if (!strcmp(type, "counter"))
			m->type = M_COUNTER;
		else if (!strcmp(type, "gauge"))
			m->type = M_GAUGE;
		else if (!strcmp(type, "histogram"))
			m->type = M_HISTOGRAM;
		else {
			err = conf_err(file, ln, "type: counter, gauge or histogram");
			break;
		}
		const char *a;
		while (!err && (a = word(&s))) {
			unsigned off, div;
			char lname[64], ty[8] = "u64";
			if (!strncmp(a, "map=", 4) && strlen(a + 4) < sizeof(m->map)) {
				snprintf(m->map, sizeof(m->map), "%s", a + 4);
			} else if (!strncmp(a, "help=", 5)) {
				snprintf(m->help, sizeof(m->help), "%s", a + 5);
			} else if (sscanf(a, "value=%u:%7s", &off, ty) >= 1 && off < 4096) {
				m->voff = off;
				m->vsize = !strcmp(ty, "u32") ? 4 : 8;
				if (strcmp(ty, "u32") && strcmp(ty, "u64"))
					err = conf_err(file, ln, "value=OFF[:u32|u64]");
			} else if (!strncmp(a, "multiplier=", 11)) {
				m->mult = strtod(a + 11, NULL);
			} else if (!strncmp(a, "buckets=", 8)) {
				m->bucket_max = (unsigned)strtoul(a + 8, NULL, 10);
				if (!m->bucket_max || m->bucket_max > 64)
					err = conf_err(file, ln, "buckets=1..64");
			} else if (m->nr_labels < MAX_LABELS && sscanf(a, "label=%63[^:]:shard/%u", lname, &div) == 2 &&
				   div && valid_name(lname) && strlen(lname) < 32) {
				struct mlabel *l = &m->labels[m->nr_labels++];
				snprintf(l->name, sizeof(l->name), "%s", lname);
				l->div = div;
			} else if (m->nr_labels < MAX_LABELS &&
				   sscanf(a, "label=%63[^:]:key@%u:%7s", lname, &off, ty) == 3 && valid_name(lname) &&
				   strlen(lname) < 32 && off < 256) {
				struct mlabel *l = &m->labels[m->nr_labels++];
				snprintf(l->name, sizeof(l->name), "%s", lname);
				l->off = off;
				l->size = !strcmp(ty, "u8") ? 1 : !strcmp(ty, "u32") ? 4 : 8;
				l->kernel = !strcmp(ty, "kernel");
				if (strcmp(ty, "u8") && strcmp(ty, "u32") && strcmp(ty, "u64") && !l->kernel)
					err = conf_err(file, ln, "label=NAME:key@OFF:u8|u32|u64|kernel");
				else if (l->kernel && (m->type == M_HISTOGRAM || m_has_kernel(m, l)))
					err = conf_err(file, ln, "one kernel label, counters and gauges only");
			} else {
				char b[160];
				snprintf(b, sizeof(b), "unknown or malformed '%.100s'", a);
				err = conf_err(file, ln, b);
			}
		}
		if (!err && !m->map[0])
			err = conf_err(file, ln, "map=NAME missing");
		if (!err) {
			if (!m->help[0]) {
				char mp[sizeof(m->map)];
				memcpy(mp, m->map, sizeof(mp));
				snprintf(m->help, sizeof(m->help), "device map %s", mp);
			}
			nr_metrics++;
		}
	}
	fclose(f);
	return err;
}

/* ---- what a scrape reads ---- */
struct proc {
	struct gx_stats_file s;
	char dir[512];
};
static struct proc *procs;
static unsigned nr_procs;
static char shm_dir[512];
static char dirs[MAX_DIRS][800];
static unsigned nr_dirs;
static uint64_t files_skipped, files_refused, scrapes;
static int warned_dir;

static void scan_dirs(void)
{
	char why[128];
	nr_dirs = 0;
	int r = gx_dir_trusted(shm_dir, GX_TRUST_OWN | GX_TRUST_PRIVATE, why, sizeof(why));
	if (r) {
		if (r == -EPERM && !warned_dir++)
			fprintf(stderr, "gpuext-exporter: not reading %s: %s\n", shm_dir, why);
		return;
	}
	snprintf(dirs[nr_dirs++], sizeof(dirs[0]), "%s", shm_dir);
	DIR *d = opendir(shm_dir);
	struct dirent *e;
	while (d && (e = readdir(d)) && nr_dirs < MAX_DIRS) {
		if (strncmp(e->d_name, "run-", 4))
			continue;
		char p[800];
		snprintf(p, sizeof(p), "%s/%s", shm_dir, e->d_name);
		if (strlen(p) >= sizeof(dirs[0]))
			continue;
		if (!gx_dir_trusted(p, GX_TRUST_OWN | GX_TRUST_PRIVATE, why, sizeof(why)))
			snprintf(dirs[nr_dirs++], sizeof(dirs[0]), "%s", p);
	}
	if (d)
		closedir(d);
}

/* One stats file: 0 taken, -1 skipped. */
static int read_stats(const char *dir, const char *name, struct proc *out)
{
	char path[1200], why[128];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	char *buf = NULL;
	size_t len = 0;
	int r = gx_read_trusted(path, GX_TRUST_OWN, &buf, &len, 1 << 20, why, sizeof(why));
	if (r) {
		if (r == -EPERM)
			files_refused++;
		else if (r != -ENOENT)
			files_skipped++;
		return -1;
	}
	const struct gx_stats_file *s = (const void *)buf;
	char *end;
	unsigned long pid = strtoul(name, &end, 10);
	if (len < GX_STATS_SIZE_MIN || s->magic != GX_STATS_MAGIC || s->version != GX_STATS_VERSION ||
	    s->size < GX_STATS_SIZE_MIN || s->size > len || s->pid != pid || strcmp(end, GX_STATS_SUFFIX)) {
		free(buf);
		files_skipped++;
		return -1;
	}
	/* a shorter (older) file: the fields it lacks are zero */
	memset(&out->s, 0, sizeof(out->s));
	memcpy(&out->s, s, s->size < sizeof(*s) ? s->size : sizeof(*s));
	free(buf);
	/* gone, or the pid names another process now: no series */
	uint64_t st = gx_proc_start_time(out->s.pid);
	if (!st || (out->s.start_time && st != out->s.start_time))
		return -1;
	out->s.comm[sizeof(out->s.comm) - 1] = 0;
	out->s.policies[sizeof(out->s.policies) - 1] = 0;
	out->s.tenant[sizeof(out->s.tenant) - 1] = 0;
	if (out->s.nr_kernels > GX_STATS_KERNELS)
		out->s.nr_kernels = GX_STATS_KERNELS;
	for (unsigned k = 0; k < GX_STATS_KERNELS; k++)
		out->s.kernels[k].name[GX_STATS_KNAME - 1] = 0;
	snprintf(out->dir, sizeof(out->dir), "%s", dir);
	return 0;
}

static void collect(void)
{
	nr_procs = 0;
	scan_dirs();
	for (unsigned i = 0; i < nr_dirs; i++) {
		DIR *d = opendir(dirs[i]);
		struct dirent *e;
		while (d && (e = readdir(d)) && nr_procs < MAX_PROCS) {
			size_t n = strlen(e->d_name), sl = strlen(GX_STATS_SUFFIX);
			if (e->d_name[0] == '.' || n <= sl || strcmp(e->d_name + n - sl, GX_STATS_SUFFIX))
				continue;
			if (!read_stats(dirs[i], e->d_name, &procs[nr_procs]))
				nr_procs++;
		}
		if (d)
			closedir(d);
	}
}

static const struct proc *proc_of(uint32_t pid)
{
	for (unsigned i = 0; i < nr_procs; i++)
		if (procs[i].s.pid == pid)
			return &procs[i];
	return NULL;
}

/* pid="..",comm=".." */
static const char *plabels(const struct proc *p, char *buf, size_t n)
{
	char c[64];
	snprintf(buf, n, "pid=\"%u\",comm=\"%s\"", p->s.pid, esc(p->s.comm, sizeof(p->s.comm), c, sizeof(c)));
	return buf;
}

#define EACH_PROC(p) for (const struct proc *p = procs; p < procs + nr_procs; p++)

static void proc_counter(struct out *o, const char *name, const char *help, size_t field, bool need_tools, double scale)
{
	bool any = false;
	EACH_PROC(p)
	{
		if (need_tools && !(p->s.flags & GX_STATS_F_TOOLS))
			continue;
		if (!any)
			family(o, name, "counter", help);
		any = true;
		char l[160];
		uint64_t v;
		memcpy(&v, (const char *)&p->s + field, sizeof(v));
		if (scale == 1)
			outf(o, "%s{%s} %" PRIu64 "\n", name, plabels(p, l, sizeof(l)), v);
		else
			outf(o, "%s{%s} %.9g\n", name, plabels(p, l, sizeof(l)), (double)v * scale);
	}
}

static const char *const outcome_names[GX_STATS_MOD__COUNT] = { "rewritten", "passed_through", "fell_back" };
static const char *const reason_names[GX_STATS_WHY__COUNT] = {
	"disabled",	  "sass_only",	     "no_ptx_for_arch", "prehooked", "bad_image",
	"rewrite_failed", "rdc_link_failed", "driver_rejected", "other",
};

static void emit_processes(struct out *o)
{
	char l[160], b[256];
	family(o, "gpuext_process_info", "gauge",
	       "A process under the shim (value 1), with its tenant and attached device policies");
	EACH_PROC(p)
	{
		char t[80];
		outf(o, "gpuext_process_info{%s,tenant=\"%s\",policies=\"%s\"} 1\n", plabels(p, l, sizeof(l)),
		     esc(p->s.tenant, sizeof(p->s.tenant), t, sizeof(t)),
		     esc(p->s.policies, sizeof(p->s.policies), b, sizeof(b)));
	}
	proc_counter(o, "gpuext_process_launches_total",
		     "Kernel launches seen host-side (launch calls and graph kernel nodes)",
		     offsetof(struct gx_stats_file, launches), true, 1);
	proc_counter(o, "gpuext_process_launches_instrumented_total", "Launches of kernels that carry device hooks",
		     offsetof(struct gx_stats_file, instrumented), true, 1);
	proc_counter(o, "gpuext_process_graph_launches_total", "cuGraphLaunch calls",
		     offsetof(struct gx_stats_file, graph_launches), true, 1);
	proc_counter(o, "gpuext_process_graph_kernel_launches_total",
		     "Kernel nodes run by graph launches (included in gpuext_process_launches_total)",
		     offsetof(struct gx_stats_file, graph_kernel_launches), true, 1);
	proc_counter(o, "gpuext_process_graph_timed_launches_total",
		     "Graph launches timed whole (the same sample as launches, per exec)",
		     offsetof(struct gx_stats_file, graph_timed_launches), true, 1);
	proc_counter(o, "gpuext_process_sampled_graph_gpu_seconds_total",
		     "GPU time of the timed graph launches (start to end of each graph on its stream)",
		     offsetof(struct gx_stats_file, graph_gpu_ns), true, 1e-9);
	proc_counter(o, "gpuext_process_sampled_gpu_seconds_total", "GPU time of the timed (sampled) launches",
		     offsetof(struct gx_stats_file, sampled_gpu_ns), true, 1e-9);
	proc_counter(o, "gpuext_process_sampled_gpu_instrumented_seconds_total",
		     "GPU time of the timed launches of instrumented kernels",
		     offsetof(struct gx_stats_file, sampled_gpu_ns_instr), true, 1e-9);
	proc_counter(o, "gpuext_process_ring_dropped_records_total", "Tool ring records dropped (ring full)",
		     offsetof(struct gx_stats_file, ring_drops), true, 1);
	if (nr_procs) {
		family(o, "gpuext_process_modules_total", "counter", "Module loads by outcome");
		EACH_PROC(p)
		for (int i = 0; i < GX_STATS_MOD__COUNT; i++)
			outf(o, "gpuext_process_modules_total{%s,outcome=\"%s\"} %" PRIu64 "\n",
			     plabels(p, l, sizeof(l)), outcome_names[i], p->s.modules[i]);
		family(o, "gpuext_process_modules_passed_through_total", "counter",
		       "Modules loaded unchanged (passed through or fell back), by reason");
		EACH_PROC(p)
		for (int i = 0; i < GX_STATS_WHY__COUNT; i++)
			if (p->s.passed[i])
				outf(o, "gpuext_process_modules_passed_through_total{%s,reason=\"%s\"} %" PRIu64 "\n",
				     plabels(p, l, sizeof(l)), reason_names[i], p->s.passed[i]);
		family(o, "gpuext_process_policies_attached", "gauge", "Policies attached, by kind");
		EACH_PROC(p)
		{
			outf(o, "gpuext_process_policies_attached{%s,kind=\"device\"} %u\n", plabels(p, l, sizeof(l)),
			     p->s.nr_policies);
			outf(o, "gpuext_process_policies_attached{%s,kind=\"host\"} %u\n", plabels(p, l, sizeof(l)),
			     p->s.nr_host_policies);
		}
		family(o, "gpuext_process_policies_disabled", "gauge",
		       "Host policies disabled for misbehaving (errors or faults; the default applies)");
		EACH_PROC(p)
		outf(o, "gpuext_process_policies_disabled{%s} %" PRIu64 "\n", plabels(p, l, sizeof(l)),
		     p->s.policies_disabled);
	}
	/* kernels: top N per process, the rest as "other" */
	bool any = false;
	for (int g = 0; g < 2; g++) {
		any = false;
		const char *name = g ? "gpuext_kernel_graph_launches_total" : "gpuext_kernel_launches_total";
		EACH_PROC(p)
		{
			if (!(p->s.flags & GX_STATS_F_TOOLS) || !p->s.nr_kernels)
				continue;
			if (!any)
				family(o, name, "counter",
				       g ? "Launches of a kernel as a graph kernel node (top kernels per process; the rest as kernel=\"other\")"
					 : "Launches of a kernel (top kernels per process by launches; the rest as kernel=\"other\")");
			any = true;
			uint64_t other = 0, known = 0;
			bool have_other = false;
			for (unsigned k = 0; k < p->s.nr_kernels; k++) {
				const struct gx_stats_kernel *ke = &p->s.kernels[k];
				uint64_t v = g ? ke->graph_launches : ke->launches;
				known += ke->launches;
				if (k >= top_kernels) {
					other += v;
					have_other = true;
					continue;
				}
				outf(o, "%s{%s,kernel=\"%s\"} %" PRIu64 "\n", name, plabels(p, l, sizeof(l)),
				     esc(ke->name, sizeof(ke->name), b, sizeof(b)), v);
			}
			/* kernels beyond those the shim keeps */
			if (!g && p->s.launches > known) {
				other += p->s.launches - known;
				have_other = true;
			}
			if (have_other || p->s.nr_kernels == GX_STATS_KERNELS)
				outf(o, "%s{%s,kernel=\"other\"} %" PRIu64 "\n", name, plabels(p, l, sizeof(l)), other);
		}
	}
	/* host policies */
	any = false;
	EACH_PROC(p) any |= p->s.nr_host_policies != 0;
	if (any) {
		static const struct {
			const char *name, *help;
			size_t off;
		} hp[] = {
			{ "gpuext_hostpolicy_prefetches_total", "cuMemPrefetchAsync calls issued for host policies",
			  offsetof(struct gx_stats_file, prefetch_calls) },
			{ "gpuext_hostpolicy_prefetch_bytes_total", "Bytes host policies moved to the device",
			  offsetof(struct gx_stats_file, prefetch_bytes) },
			{ "gpuext_hostpolicy_evictions_total", "Regions host policies moved back to the host",
			  offsetof(struct gx_stats_file, evictions) },
			{ "gpuext_hostpolicy_device_requests_total",
			  "Prefetch requests from device policies (gdev_mem_prefetch)",
			  offsetof(struct gx_stats_file, device_prefetch_requests) },
		};
		for (size_t i = 0; i < sizeof(hp) / sizeof(hp[0]); i++) {
			family(o, hp[i].name, "counter", hp[i].help);
			EACH_PROC(p)
			if (p->s.nr_host_policies) {
				uint64_t v;
				memcpy(&v, (const char *)&p->s + hp[i].off, sizeof(v));
				outf(o, "%s{%s} %" PRIu64 "\n", hp[i].name, plabels(p, l, sizeof(l)), v);
			}
		}
	}
}

/* Per tenant process: its part of the tenant's memory and GPU time. */
static void emit_tenant_procs(struct out *o)
{
	static const struct {
		const char *name, *type, *help;
		size_t off;
		double scale;
	} f[] = {
		{ "gpuext_process_memory_used_bytes", "gauge",
		  "Device memory this tenant process holds (counted against its tenant's limit)",
		  offsetof(struct gx_stats_file, tenant_mem_used), 1 },
		{ "gpuext_process_memory_high_water_bytes", "gauge", "Highest device memory this tenant process held",
		  offsetof(struct gx_stats_file, tenant_mem_hiwater), 1 },
		{ "gpuext_process_gpu_seconds_total", "counter",
		  "GPU busy time of this tenant process's tracked launches",
		  offsetof(struct gx_stats_file, tenant_gpu_ns), 1e-9 },
	};
	char l[160], t[80];
	for (size_t k = 0; k < sizeof(f) / sizeof(f[0]); k++) {
		bool any = false;
		EACH_PROC(p)
		{
			if (!(p->s.flags & GX_STATS_F_TENANT))
				continue;
			if (!any)
				family(o, f[k].name, f[k].type, f[k].help);
			any = true;
			uint64_t v;
			memcpy(&v, (const char *)&p->s + f[k].off, sizeof(v));
			esc(p->s.tenant, sizeof(p->s.tenant), t, sizeof(t));
			if (f[k].scale == 1)
				outf(o, "%s{%s,tenant=\"%s\"} %" PRIu64 "\n", f[k].name, plabels(p, l, sizeof(l)), t,
				     v);
			else
				outf(o, "%s{%s,tenant=\"%s\"} %.9g\n", f[k].name, plabels(p, l, sizeof(l)), t,
				     (double)v * f[k].scale);
		}
	}
}

/* blocksched: launches of kernels with a persistent copy, as workers or
 * unchanged (reason), and the sampled launches' steals. */
static const char *const bs_reason_names[GX_STATS_BS__COUNT] = {
	"cooperative",	   "extra_params",  "attributes",     "capture",	  "occupancy",
	"no_device_state", "shared_memory", "grid_too_large", "static_only_copy", "guard_original",
};

static void emit_blocksched(struct out *o)
{
	bool any = false;
	EACH_PROC(p) any |= (p->s.flags & GX_STATS_F_SCHED) != 0;
	if (!any)
		return;
	char l[160];
	family(o, "gpuext_blocksched_persistent_launches_total", "counter",
	       "Launches run as persistent workers, by mode (claim: dynamic claims and steals; static)");
	EACH_PROC(p)
	if (p->s.flags & GX_STATS_F_SCHED) {
		plabels(p, l, sizeof(l));
		outf(o, "gpuext_blocksched_persistent_launches_total{%s,mode=\"claim\"} %" PRIu64 "\n", l,
		     p->s.bs_persistent_claim);
		outf(o, "gpuext_blocksched_persistent_launches_total{%s,mode=\"static\"} %" PRIu64 "\n", l,
		     p->s.bs_persistent_static);
	}
	family(o, "gpuext_blocksched_unchanged_launches_total", "counter",
	       "Launches of kernels with a persistent copy that ran unchanged, by reason");
	EACH_PROC(p)
	if (p->s.flags & GX_STATS_F_SCHED) {
		plabels(p, l, sizeof(l));
		for (int r = 0; r < GX_STATS_BS__COUNT; r++)
			outf(o, "gpuext_blocksched_unchanged_launches_total{%s,reason=\"%s\"} %" PRIu64 "\n", l,
			     bs_reason_names[r], p->s.bs_unchanged[r]);
	}
	family(o, "gpuext_blocksched_sampled_launches_total", "counter",
	       "Persistent launches whose workers' statistics were sampled (GPUEXT_SCHED_LOG)");
	EACH_PROC(p)
	if (p->s.flags & GX_STATS_F_SCHED)
		outf(o, "gpuext_blocksched_sampled_launches_total{%s} %" PRIu64 "\n", plabels(p, l, sizeof(l)),
		     p->s.bs_sampled_launches);
	family(o, "gpuext_blocksched_steals_total", "counter", "Chunks stolen by workers, in the sampled launches");
	EACH_PROC(p)
	if (p->s.flags & GX_STATS_F_SCHED)
		outf(o, "gpuext_blocksched_steals_total{%s} %" PRIu64 "\n", plabels(p, l, sizeof(l)), p->s.bs_steals);
}

/* The LC (any tenant) latency histogram per process, from the shim's
 * fine buckets (16 per octave) merged to lat_per_octave. */
static void emit_latency(struct out *o)
{
	bool any = false;
	char l[160], t[80];
	EACH_PROC(p)
	{
		if (!(p->s.flags & GX_STATS_F_TENANT))
			continue;
		if (!any)
			family(o, "gpuext_tenant_latency_seconds", "histogram",
			       "Launch call to completion seen, per tenant process (tracked launches)");
		any = true;
		const char *cls = p->s.tenant_cls == GPU_CLASS_LC ? "lc" : "be";
		esc(p->s.tenant, sizeof(p->s.tenant), t, sizeof(t));
		plabels(p, l, sizeof(l));
		unsigned step = GX_STATS_LAT_SUB / lat_per_octave;
		uint64_t cum = p->s.lat[0];
		outf(o, "gpuext_tenant_latency_seconds_bucket{%s,tenant=\"%s\",class=\"%s\",le=\"%.9g\"} %" PRIu64 "\n",
		     l, t, cls, (double)gx_stats_lat_upper(0) * 1e-9, cum);
		for (unsigned b = 1; b + 1 < GX_STATS_LAT_BUCKETS; b++) {
			cum += p->s.lat[b];
			if (b % step == 0)
				outf(o,
				     "gpuext_tenant_latency_seconds_bucket{%s,tenant=\"%s\",class=\"%s\",le=\"%.9g\"} %" PRIu64
				     "\n",
				     l, t, cls, (double)gx_stats_lat_upper(b) * 1e-9, cum);
		}
		cum += p->s.lat[GX_STATS_LAT_BUCKETS - 1];
		outf(o, "gpuext_tenant_latency_seconds_bucket{%s,tenant=\"%s\",class=\"%s\",le=\"+Inf\"} %" PRIu64 "\n",
		     l, t, cls, cum);
		outf(o, "gpuext_tenant_latency_seconds_sum{%s,tenant=\"%s\",class=\"%s\"} %.9g\n", l, t, cls,
		     (double)p->s.lat_sum_ns * 1e-9);
		outf(o, "gpuext_tenant_latency_seconds_count{%s,tenant=\"%s\",class=\"%s\"} %" PRIu64 "\n", l, t, cls,
		     cum);
	}
}

static void emit_tenants(struct out *o)
{
	struct gx_tn_info *tn = calloc(GX_TN_MAX_TENANTS, sizeof(*tn));
	int n = tn ? gx_tn_list(tn, GX_TN_MAX_TENANTS, 0) : 0;
	if (n <= 0) {
		free(tn);
		return;
	}
	char t[80];
	static const struct {
		const char *name, *type, *help;
		size_t off;
		int kind; /* 0: u32, 1: u64, 2: ns -> s, 3: u32 percent -> ratio */
	} f[] = {
		{ "gpuext_tenant_window", "gauge", "In-flight cap (0: none)", offsetof(struct gx_tn_info, window), 0 },
		{ "gpuext_tenant_processes", "gauge", "Processes of the tenant", offsetof(struct gx_tn_info, nr_procs),
		  0 },
		{ "gpuext_tenant_launches_in_flight", "gauge", "Launches in flight",
		  offsetof(struct gx_tn_info, inflight), 0 },
		{ "gpuext_tenant_launches_total", "counter", "Launches (tenant lifetime, processes gone included)",
		  offsetof(struct gx_tn_info, launches), 1 },
		{ "gpuext_tenant_completions_total", "counter",
		  "Launches seen complete (for BE tenants: BE kernels completed)",
		  offsetof(struct gx_tn_info, completions), 1 },
		{ "gpuext_tenant_untracked_launches_total", "counter", "Launches that went untracked",
		  offsetof(struct gx_tn_info, untracked), 1 },
		{ "gpuext_tenant_held_launches_total", "counter", "Launches a policy held before they went",
		  offsetof(struct gx_tn_info, held), 1 },
		{ "gpuext_tenant_hold_seconds_total", "counter", "Time launches were held",
		  offsetof(struct gx_tn_info, throttled_ns), 2 },
		{ "gpuext_tenant_kernel_seconds", "gauge", "Estimated GPU time per launch",
		  offsetof(struct gx_tn_info, kernel_ns), 2 },
		{ "gpuext_tenant_memory_limit_bytes", "gauge",
		  "Device memory limit over the tenant's processes (0: none)", offsetof(struct gx_tn_info, mem_limit),
		  1 },
		{ "gpuext_tenant_memory_used_bytes", "gauge", "Device memory the tenant's live processes hold",
		  offsetof(struct gx_tn_info, mem_used), 1 },
		{ "gpuext_tenant_memory_high_water_bytes", "gauge", "Highest device memory the tenant held",
		  offsetof(struct gx_tn_info, mem_hiwater), 1 },
		{ "gpuext_tenant_memory_denied_total", "counter", "Allocations refused at the tenant's memory limit",
		  offsetof(struct gx_tn_info, mem_denied), 1 },
		{ "gpuext_tenant_gpu_share_ratio", "gauge", "Share of GPU time the tenant is given (0: none)",
		  offsetof(struct gx_tn_info, gpu_share), 3 },
		{ "gpuext_tenant_gpu_seconds_total", "counter",
		  "GPU busy time of the tenant's tracked launches (live and gone processes)",
		  offsetof(struct gx_tn_info, gpu_ns), 2 },
	};
	family(o, "gpuext_tenant_info", "gauge", "A tenant (value 1) and its class");
	for (int i = 0; i < n; i++)
		outf(o, "gpuext_tenant_info{tenant=\"%s\",class=\"%s\"} 1\n",
		     esc(tn[i].name, GX_TN_NAME_MAX, t, sizeof(t)), gx_tn_class_name(tn[i].cls));
	for (size_t k = 0; k < sizeof(f) / sizeof(f[0]); k++) {
		family(o, f[k].name, f[k].type, f[k].help);
		for (int i = 0; i < n; i++) {
			const char *base = (const char *)&tn[i] + f[k].off;
			esc(tn[i].name, GX_TN_NAME_MAX, t, sizeof(t));
			if (f[k].kind == 0 || f[k].kind == 3) {
				uint32_t v;
				memcpy(&v, base, sizeof(v));
				if (f[k].kind == 0)
					outf(o, "%s{tenant=\"%s\"} %u\n", f[k].name, t, v);
				else
					outf(o, "%s{tenant=\"%s\"} %.9g\n", f[k].name, t, (double)v / 100.0);
			} else {
				uint64_t v;
				memcpy(&v, base, sizeof(v));
				if (f[k].kind == 1)
					outf(o, "%s{tenant=\"%s\"} %" PRIu64 "\n", f[k].name, t, v);
				else
					outf(o, "%s{tenant=\"%s\"} %.9g\n", f[k].name, t, (double)v * 1e-9);
			}
		}
	}
	static const struct {
		const char *name, *help;
		size_t off;
	} q[] = {
		{ "gpuext_tenant_recent_latency_p50_seconds",
		  "Median launch-to-completion over the recent launches (worst process), as policies see it",
		  offsetof(struct gx_tn_info, p50_ns) },
		{ "gpuext_tenant_recent_latency_p99_seconds",
		  "p99 launch-to-completion over the recent launches (worst process)",
		  offsetof(struct gx_tn_info, p99_ns) },
		{ "gpuext_tenant_recent_latency_p999_seconds",
		  "p99.9 launch-to-completion over the recent launches (worst process)",
		  offsetof(struct gx_tn_info, p999_ns) },
	};
	for (size_t k = 0; k < sizeof(q) / sizeof(q[0]); k++) {
		family(o, q[k].name, "gauge", q[k].help);
		for (int i = 0; i < n; i++) {
			uint64_t v;
			memcpy(&v, (const char *)&tn[i] + q[k].off, sizeof(v));
			outf(o, "%s{tenant=\"%s\"} %.9g\n", q[k].name, esc(tn[i].name, GX_TN_NAME_MAX, t, sizeof(t)),
			     (double)v * 1e-9);
		}
	}
	free(tn);
}

/* ---- device maps through the config ---- */
static uint64_t rd(const unsigned char *p, unsigned size)
{
	uint64_t v = 0;
	if (size == 1)
		v = *p;
	else if (size == 4) {
		uint32_t w;
		memcpy(&w, p, 4);
		v = w;
	} else
		memcpy(&v, p, 8);
	return v;
}

/* The map's base name: "<pid>-NAME[@ctx]" -> NAME. */
static bool map_matches(const char *file, const char *want, uint32_t *pid)
{
	char *end;
	unsigned long p = strtoul(file, &end, 10);
	if (end == file || *end != '-')
		return false;
	const char *b = end + 1;
	size_t n = strcspn(b, "@");
	if (n != strlen(want) || strncmp(b, want, n))
		return false;
	*pid = (uint32_t)p;
	return true;
}

/* ---- kernel labels: a u64 kernel id as its name ---- */

/* The name of kernel `id` among p's kernels (the top GX_STATS_KERNELS by
 * launches), escaped into buf; NULL if it is not one of them. */
static const char *kernel_name(const struct proc *p, uint64_t id, char *buf, size_t n)
{
	for (unsigned i = 0; p && id && i < p->s.nr_kernels; i++) {
		const char *nm = p->s.kernels[i].name;
		/* older stats files have no ids: the hash of a name not cut short */
		uint64_t kid = p->s.kernel_ids[i]		 ? p->s.kernel_ids[i]
			       : strlen(nm) < GX_STATS_KNAME - 1 ? gx_kernel_id(nm)
								 : 0;
		if (kid == id)
			return esc(nm, GX_STATS_KNAME, buf, n);
	}
	return NULL;
}

/* Series of one map file whose labels name kernels: summed per label set,
 * the top_kernels largest kept, the rest summed under kernel="other". */
struct sample {
	char kl[400];	 /* the key labels (",a=\"x\",kernel=\"name\"") */
	char other[200]; /* the same with kernel="other" */
	uint64_t v;
};
struct samples {
	struct sample *s;
	size_t n, cap;
};

static void sample_add(struct samples *ss, const char *kl, const char *other, uint64_t v)
{
	for (size_t i = 0; i < ss->n; i++)
		if (!strcmp(ss->s[i].kl, kl)) {
			ss->s[i].v += v;
			return;
		}
	if (ss->n == ss->cap) {
		size_t cap = ss->cap ? ss->cap * 2 : 64;
		struct sample *q = realloc(ss->s, cap * sizeof(*q));
		if (!q)
			return;
		ss->s = q, ss->cap = cap;
	}
	struct sample *x = &ss->s[ss->n++];
	snprintf(x->kl, sizeof(x->kl), "%s", kl);
	snprintf(x->other, sizeof(x->other), "%s", other);
	x->v = v;
}

static int cmp_sample(const void *a, const void *b)
{
	const struct sample *x = a, *y = b;
	return x->v != y->v ? (x->v < y->v ? 1 : -1) : strcmp(x->kl, y->kl);
}

static void samples_emit(struct out *o, const struct metric *m, const char *base, struct samples *ss)
{
	qsort(ss->s, ss->n, sizeof(*ss->s), cmp_sample);
	struct samples rest = { 0 };
	for (size_t i = 0; i < ss->n; i++) {
		bool other = !strcmp(ss->s[i].kl, ss->s[i].other);
		if (!other && i < top_kernels)
			outf(o, "%s{%s%s} %" PRIu64 "\n", m->name, base, ss->s[i].kl, ss->s[i].v);
		else
			sample_add(&rest, ss->s[i].other, ss->s[i].other, ss->s[i].v);
	}
	for (size_t i = 0; i < rest.n; i++)
		outf(o, "%s{%s%s} %" PRIu64 "\n", m->name, base, rest.s[i].kl, rest.s[i].v);
	free(rest.s);
	ss->n = 0;
}

static void emit_map_metric(struct out *o, const struct metric *m)
{
	bool fam = false;
	char l[160];
	for (unsigned d = 0; d < nr_dirs; d++) {
		DIR *dh = opendir(dirs[d]);
		struct dirent *e;
		while (dh && (e = readdir(dh))) {
			uint32_t pid;
			if (e->d_name[0] == '.' || !map_matches(e->d_name, m->map, &pid))
				continue;
			const struct proc *p = proc_of(pid);
			if (!p && !gx_proc_start_time(pid))
				continue; /* a dead process's map file */
			char path[1200];
			snprintf(path, sizeof(path), "%s/%s", dirs[d], e->d_name);
			struct gx_map *mp;
			if (gx_map__open(path, 0, &mp)) {
				files_skipped++;
				continue;
			}
			if (mp->l.type == GX_MAP_RINGBUF || m->voff + m->vsize > mp->l.value_size) {
				gx_map__free(mp);
				files_skipped++;
				continue;
			}
			if (!fam)
				family(o, m->name,
				       m->type == M_COUNTER ? "counter"
				       : m->type == M_GAUGE ? "gauge"
							    : "histogram",
				       m->help);
			fam = true;
			char base[200];
			char c[64];
			int gpu = (int)mp->hdr->dev - 1;
			snprintf(base, sizeof(base), "pid=\"%u\",comm=\"%s\",gpu=\"%d\"", pid,
				 p ? esc(p->s.comm, sizeof(p->s.comm), c, sizeof(c)) : "", gpu);
			bool sharded = mp->l.nr_shards > 1;
			unsigned shard_div = 0;
			for (unsigned i = 0; i < m->nr_labels; i++)
				if (m->labels[i].div)
					shard_div = m->labels[i].div;
			unsigned char key[256];
			uint64_t hist[65] = { 0 };
			unsigned nkeys = 0;
			bool by_kernel = m_has_kernel(m, NULL);
			struct samples ss = { 0 };
			for (int r = gx_map__next_key(mp, NULL, key); !r && nkeys < 100000;
			     r = gx_map__next_key(mp, key, key), nkeys++) {
				uint32_t idx = 0;
				memcpy(&idx, key, mp->l.key_size < 4 ? mp->l.key_size : 4);
				/* label values from the key (kl; ko: kernel="other") */
				char kl[400] = "", ko[200] = "";
				size_t at = 0, ato = 0;
				for (unsigned i = 0; i < m->nr_labels; i++) {
					const struct mlabel *ml = &m->labels[i];
					if (ml->div || ml->off + ml->size > mp->l.key_size)
						continue;
					uint64_t v = rd(key + ml->off, ml->size);
					char num[24], kn[GX_STATS_KNAME * 2 + 4];
					snprintf(num, sizeof(num), "%" PRIu64, v);
					const char *val = ml->kernel ? kernel_name(p, v, kn, sizeof(kn)) : num;
					at += (size_t)snprintf(kl + at, sizeof(kl) - at, ",%s=\"%s\"", ml->name,
							       val ? val : "other");
					ato += (size_t)snprintf(ko + ato, sizeof(ko) - ato, ",%s=\"%s\"", ml->name,
								ml->kernel ? "other" : num);
					at = at < sizeof(kl) ? at : sizeof(kl) - 1;
					ato = ato < sizeof(ko) ? ato : sizeof(ko) - 1;
				}
				if (m->type == M_HISTOGRAM) {
					const unsigned char *v = mp->l.type == GX_MAP_HASH
									 ? gx_map__lookup(mp, key)
									 : gx_map__shard_elem(mp, 0, idx);
					uint64_t sum = 0;
					for (unsigned s = 0; v && s < (sharded ? mp->l.nr_shards : 1); s++) {
						const unsigned char *sv = sharded ? gx_map__shard_elem(mp, s, idx) : v;
						sum += rd(sv + m->voff, m->vsize);
					}
					hist[idx < m->bucket_max ? idx : m->bucket_max] += sum;
					continue;
				}
				if (mp->l.type == GX_MAP_HASH) {
					const unsigned char *v = gx_map__lookup(mp, key);
					if (v && by_kernel)
						sample_add(&ss, kl, ko, rd(v + m->voff, m->vsize));
					else if (v)
						outf(o, "%s{%s%s} %" PRIu64 "\n", m->name, base, kl,
						     rd(v + m->voff, m->vsize));
					continue;
				}
				if (sharded && shard_div) {
					/* per shard group (e.g. per SM: shard / 64) */
					uint64_t acc = 0;
					for (unsigned s = 0; s < mp->l.nr_shards; s++) {
						acc += rd((const unsigned char *)gx_map__shard_elem(mp, s, idx) +
								  m->voff,
							  m->vsize);
						if ((s + 1) % shard_div == 0 || s + 1 == mp->l.nr_shards) {
							const char *sl = "";
							for (unsigned i = 0; i < m->nr_labels; i++)
								if (m->labels[i].div)
									sl = m->labels[i].name;
							outf(o, "%s{%s%s,%s=\"%u\"} %" PRIu64 "\n", m->name, base, kl,
							     sl, s / shard_div, acc);
							acc = 0;
						}
					}
					continue;
				}
				uint64_t acc = 0;
				for (unsigned s = 0; s < (sharded ? mp->l.nr_shards : 1); s++)
					acc += rd((const unsigned char *)gx_map__shard_elem(mp, s, idx) + m->voff,
						  m->vsize);
				if (by_kernel)
					sample_add(&ss, kl, ko, acc);
				else
					outf(o, "%s{%s%s} %" PRIu64 "\n", m->name, base, kl, acc);
			}
			samples_emit(o, m, base, &ss);
			free(ss.s);
			if (m->type == M_HISTOGRAM) {
				uint64_t cum = 0;
				double sum = 0;
				for (unsigned b = 0; b < m->bucket_max; b++) {
					cum += hist[b];
					sum += (double)hist[b] * ldexp(1, (int)b) * m->mult;
					outf(o, "%s_bucket{%s,le=\"%.9g\"} %" PRIu64 "\n", m->name, base,
					     ldexp(1, (int)b) * m->mult, cum);
				}
				cum += hist[m->bucket_max];
				outf(o, "%s_bucket{%s,le=\"+Inf\"} %" PRIu64 "\n", m->name, base, cum);
				outf(o, "%s_sum{%s} %.9g\n", m->name, base, sum);
				outf(o, "%s_count{%s} %" PRIu64 "\n", m->name, base, cum);
			}
			gx_map__free(mp);
			(void)l;
		}
		if (dh)
			closedir(dh);
	}
}

static double mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One exposition, NUL-terminated; NULL when out of memory. */
static char *scrape(size_t *len)
{
	double t0 = mono();
	struct out o = { 0 };
	scrapes++;
	collect();
	emit_processes(&o);
	emit_tenant_procs(&o);
	emit_blocksched(&o);
	emit_latency(&o);
	emit_tenants(&o);
	for (unsigned i = 0; i < nr_metrics; i++)
		emit_map_metric(&o, &metrics[i]);
	family(&o, "gpuext_exporter_processes", "gauge", "Live processes whose stats file was read");
	outf(&o, "gpuext_exporter_processes %u\n", nr_procs);
	family(&o, "gpuext_exporter_files_skipped_total", "counter",
	       "Files skipped: short, garbage, another version, unreadable");
	outf(&o, "gpuext_exporter_files_skipped_total %" PRIu64 "\n", files_skipped);
	family(&o, "gpuext_exporter_files_refused_total", "counter", "Files refused by the trust rule (docs/trust.md)");
	outf(&o, "gpuext_exporter_files_refused_total %" PRIu64 "\n", files_refused);
	family(&o, "gpuext_exporter_scrapes_total", "counter", "Scrapes served");
	outf(&o, "gpuext_exporter_scrapes_total %" PRIu64 "\n", scrapes);
	family(&o, "gpuext_exporter_scrape_duration_seconds", "gauge", "Time this scrape took to read and format");
	outf(&o, "gpuext_exporter_scrape_duration_seconds %.6f\n", mono() - t0);
	if (o.oom) {
		free(o.p);
		return NULL;
	}
	*len = o.len;
	return o.p;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			      const char *version, const char *upload, size_t *upload_len, void **state)
{
	(void)cls, (void)version, (void)upload, (void)upload_len, (void)state;
	struct MHD_Response *r;
	unsigned code = MHD_HTTP_OK;
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		static const char m[] = "method not allowed\n";
		r = MHD_create_response_from_buffer(sizeof(m) - 1, (void *)m, MHD_RESPMEM_PERSISTENT);
		code = MHD_HTTP_METHOD_NOT_ALLOWED;
	} else if (!strcmp(url, "/metrics")) {
		size_t len = 0;
		char *body = scrape(&len);
		if (!body) {
			static const char m[] = "out of memory\n";
			r = MHD_create_response_from_buffer(sizeof(m) - 1, (void *)m, MHD_RESPMEM_PERSISTENT);
			code = MHD_HTTP_INTERNAL_SERVER_ERROR;
		} else {
			r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
			if (r)
				MHD_add_response_header(r, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
		}
	} else if (!strcmp(url, "/")) {
		static const char m[] = "<html><body><a href=\"/metrics\">gpuext metrics</a></body></html>\n";
		r = MHD_create_response_from_buffer(sizeof(m) - 1, (void *)m, MHD_RESPMEM_PERSISTENT);
	} else {
		static const char m[] = "not found\n";
		r = MHD_create_response_from_buffer(sizeof(m) - 1, (void *)m, MHD_RESPMEM_PERSISTENT);
		code = MHD_HTTP_NOT_FOUND;
	}
	if (!r)
		return MHD_NO;
	enum MHD_Result ret = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	return ret;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: gpuext exporter [--listen ADDR:PORT] [--config FILE] [--dir DIR] [--once]\n"
		   "  Prometheus /metrics of the processes under gpuext (docs/metrics.md).\n"
		   "  --listen  address and port (default 127.0.0.1:9477; [::1]:PORT for IPv6)\n"
		   "  --config  device maps as metrics, top_kernels, latency buckets\n"
		   "  --dir     the shared folder (default $GPUEXT_SHM_DIR, else /dev/shm/gpuext-$UID)\n"
		   "  --once    print one exposition on stdout and exit\n");
}

static volatile sig_atomic_t stop;
static void on_signal(int s)
{
	(void)s;
	stop = 1;
}

static int parse_listen(const char *s, struct sockaddr_storage *ss, socklen_t *sl)
{
	char host[128];
	const char *colon = strrchr(s, ':');
	if (!colon || (size_t)(colon - s) >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	char *end;
	long port = strtol(colon + 1, &end, 10);
	if (*end || port < 0 || port > 65535)
		return -EINVAL;
	memset(ss, 0, sizeof(*ss));
	size_t hl = strlen(host);
	if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
		host[hl - 1] = 0;
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, host + 1, &a->sin6_addr) != 1)
			return -EINVAL;
		*sl = sizeof(*a);
		return 0;
	}
	struct sockaddr_in *a = (struct sockaddr_in *)ss;
	a->sin_family = AF_INET;
	a->sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host[0] ? host : "0.0.0.0", &a->sin_addr) != 1)
		return -EINVAL;
	*sl = sizeof(*a);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, 'l' }, { "config", required_argument, NULL, 'c' },
		{ "dir", required_argument, NULL, 'd' },    { "once", no_argument, NULL, '1' },
		{ "help", no_argument, NULL, 'h' },	    { NULL, 0, NULL, 0 },
	};
	const char *listen = "127.0.0.1:9477", *config = NULL, *dir = NULL;
	bool once = false;
	int c;
	while ((c = getopt_long(argc, argv, "l:c:d:1h", opts, NULL)) != -1) {
		switch (c) {
		case 'l':
			listen = optarg;
			break;
		case 'c':
			config = optarg;
			break;
		case 'd':
			dir = optarg;
			break;
		case '1':
			once = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	if (dir)
		setenv("GPUEXT_SHM_DIR", dir, 1); /* the tenant table is found there too */
	if (gx_map_shm_dir(shm_dir, sizeof(shm_dir))) {
		fprintf(stderr, "gpuext-exporter: the shared folder's name is too long\n");
		return 1;
	}
	if (config && load_config(config))
		return 1;
	procs = calloc(MAX_PROCS, sizeof(*procs));
	if (!procs)
		return 1;
	if (once) {
		size_t len;
		char *b = scrape(&len);
		if (!b)
			return 1;
		fwrite(b, 1, len, stdout);
		free(b);
		return 0;
	}
	struct sockaddr_storage ss;
	socklen_t sl;
	if (parse_listen(listen, &ss, &sl)) {
		fprintf(stderr, "gpuext-exporter: --listen %s: expected ADDR:PORT (or [IPv6]:PORT)\n", listen);
		return 2;
	}
	(void)sl;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	struct MHD_Daemon *d =
		MHD_start_daemon(flags, 0, NULL, NULL, handle, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				 MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_CONNECTION_LIMIT, 64u, MHD_OPTION_END);
	if (!d) {
		fprintf(stderr, "gpuext-exporter: cannot listen on %s: %s\n", listen, strerror(errno));
		return 1;
	}
	const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	fprintf(stderr, "gpuext-exporter: serving http://%s/metrics (port %u) from %s\n", listen,
		di ? (unsigned)di->port : 0, shm_dir);
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	while (!stop)
		pause();
	MHD_stop_daemon(d);
	free(procs);
	return 0;
}
