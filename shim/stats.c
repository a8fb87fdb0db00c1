/* stats.c — this process's figures for `gpuext exporter`
 * (include/gpuext/gx_stats.h, docs/metrics.md).
 *
 * Nothing here runs on a launch path. The counters are those the parts
 * already keep (attach/'s launch counts, the tenant entry, hostexec's
 * prefetches); module outcomes and tenant latencies are counted where they
 * are logged or measured (a module load, the completion thread). The file
 * is written by whichever background thread the process already runs — the
 * tool drainer (attach/devrt.c, every GPUEXT_FLUSH_MS) or the tenant
 * completion thread (tenant_done.c, every 10 ms) — at most once per
 * GPUEXT_STATS_MS (1000; 0: never), under a lock of its own taken with
 * trylock (no application thread ever waits for it), into a temporary file
 * renamed over `<pid>-gpuext.stats`: readers never see half a file. A
 * process with neither thread publishes at its module loads only. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attach/gx_attach.h"
#include "blocksched/gx_blocksched.h"
#include "common/gx_trust.h"
#include "common/gx_util.h"
#include "devbpf/gx_bpf.h"
#include "gpuext/gx_stats.h"
#include "shim/hostpolicy_internal.h"
#include "shim/shim_internal.h"
#include "shim/stats_internal.h"
#include "shim/tenancy_internal.h"

static uint64_t modules[GX_STATS_MOD__COUNT], passed[GX_STATS_WHY__COUNT];
static uint64_t lat[GX_STATS_LAT_BUCKETS], lat_count, lat_sum;
static pthread_mutex_t pub_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t last_pub_ns, start_time;
static char path[600];
static int published; /* 1: a file exists, removed at exit */
static long period_ms = -1;

#define ADD(x, v) __atomic_add_fetch(&(x), (v), __ATOMIC_RELAXED)
#define LD(x)	  __atomic_load_n(&(x), __ATOMIC_RELAXED)

static uint64_t rt_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The bounded reason behind a "passed through: WHY" line (load.c, rdc.c). */
static enum gx_stats_reason reason_of(const char *why)
{
	static const struct {
		const char *prefix;
		enum gx_stats_reason r;
	} tab[] = {
		{ "GPUEXT_DISABLE", GX_STATS_WHY_DISABLED },
		{ "SASS only", GX_STATS_WHY_SASS_ONLY },
		{ "its cubin was compiled with the hooks", GX_STATS_WHY_PREHOOKED },
		{ "no image", GX_STATS_WHY_BAD_IMAGE },
		{ "unrecognised image", GX_STATS_WHY_BAD_IMAGE },
		{ "rewrite failed", GX_STATS_WHY_REWRITE },
		{ "-rdc", GX_STATS_WHY_RDC },
		{ "rewritten PTX rejected", GX_STATS_WHY_DRIVER },
		{ "no PTX", GX_STATS_WHY_SASS_ONLY },
	};
	if (!why)
		return GX_STATS_WHY_OTHER;
	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (!strncmp(why, tab[i].prefix, strlen(tab[i].prefix)))
			return tab[i].r;
	if (strstr(why, "no PTX for sm_"))
		return GX_STATS_WHY_NO_PTX_ARCH;
	return GX_STATS_WHY_OTHER;
}

void gx_stats_module(enum gx_stats_module outcome, const char *why)
{
	ADD(modules[outcome], 1);
	if (outcome == GX_STATS_MOD_FELL_BACK)
		ADD(passed[GX_STATS_WHY_DRIVER], 1);
	else if (outcome == GX_STATS_MOD_PASSED)
		ADD(passed[reason_of(why)], 1);
	/* a process without a background thread publishes here */
	gx_stats_tick();
}

void gx_stats_latency(uint64_t ns)
{
	ADD(lat[gx_stats_lat_bucket(ns)], 1);
	ADD(lat_count, 1);
	ADD(lat_sum, ns);
}

static void at_exit(void)
{
	pthread_mutex_lock(&pub_lock);
	if (published && getpid() == (pid_t)published)
		unlink(path);
	published = 0;
	period_ms = 0; /* no more */
	pthread_mutex_unlock(&pub_lock);
}

static void fill(struct gx_stats_file *f)
{
	memset(f, 0, sizeof(*f));
	f->magic = GX_STATS_MAGIC;
	f->version = GX_STATS_VERSION;
	f->size = sizeof(*f);
	f->pid = (uint32_t)getpid();
	f->start_time = start_time;
	f->updated_ns = rt_ns();
	FILE *c = fopen("/proc/self/comm", "re");
	if (c) {
		if (fgets(f->comm, sizeof(f->comm), c))
			f->comm[strcspn(f->comm, "\n")] = 0;
		fclose(c);
	}
	for (int i = 0; i < GX_STATS_MOD__COUNT; i++)
		f->modules[i] = LD(modules[i]);
	for (int i = 0; i < GX_STATS_WHY__COUNT; i++)
		f->passed[i] = LD(passed[i]);
	gx_attach_stats(f);
	gx_hostpolicy_stats(f);
	gx_bs_stats(f);
	if (gx_tenancy_stats(f) == 0) {
		f->flags |= GX_STATS_F_TENANT;
		for (int i = 0; i < GX_STATS_LAT_BUCKETS; i++)
			f->lat[i] = LD(lat[i]);
		f->lat_count = LD(lat_count);
		f->lat_sum_ns = LD(lat_sum);
	}
}

void gx_stats_tick(void)
{
	if (period_ms < 0) {
		const char *e = getenv("GPUEXT_STATS_MS");
		char *end;
		long v = e && *e ? strtol(e, &end, 10) : 1000;
		period_ms = e && *e && (*end || v < 0 || v > 3600000) ? 1000 : v;
	}
	if (!period_ms || gx_config.disabled)
		return;
	uint64_t now = rt_ns();
	if (now - LD(last_pub_ns) < (uint64_t)period_ms * 1000000ull || pthread_mutex_trylock(&pub_lock))
		return;
	if (!period_ms || now - last_pub_ns < (uint64_t)period_ms * 1000000ull) {
		pthread_mutex_unlock(&pub_lock);
		return;
	}
	__atomic_store_n(&last_pub_ns, now, __ATOMIC_RELAXED);
	char dir[512], tmp[640];
	struct gx_stats_file *f = malloc(sizeof(*f));
	if (!f || gx_map_shm_dir(dir, sizeof(dir)) || (mkdir(dir, 0700) && errno != EEXIST) ||
	    gx_dir_trusted(dir, GX_TRUST_OWN | GX_TRUST_PRIVATE, tmp, sizeof(tmp))) {
		free(f);
		pthread_mutex_unlock(&pub_lock);
		return;
	}
	if (!start_time)
		start_time = gx_proc_start_time((uint32_t)getpid());
	fill(f);
	snprintf(path, sizeof(path), "%s/%d%s", dir, (int)getpid(), GX_STATS_SUFFIX);
	snprintf(tmp, sizeof(tmp), "%s/.%d%s.tmp", dir, (int)getpid(), GX_STATS_SUFFIX);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0) {
		bool ok = write(fd, f, sizeof(*f)) == (ssize_t)sizeof(*f);
		close(fd);
		if (ok && !rename(tmp, path)) {
			if (!published)
				atexit(at_exit);
			published = (int)getpid();
		} else {
			unlink(tmp);
		}
	}
	free(f);
	pthread_mutex_unlock(&pub_lock);
}
