/* tenant.c — this process as a tenant of its GPUs: every launch is seen by
 * the other processes through the tenant table (tenant/gx_tenant.h), and
 * before it goes the scheduling policy's task_launch (hostpolicy.c) may let
 * it pass, hold it, or cap the tenant's launches in flight.
 *
 * Why in the launching thread: the only lever a user-space runtime has on
 * another process's GPU work is not to submit its own yet. Holding the
 * application's thread inside its launch call delays exactly that launch
 * and everything the thread would issue after it, keeps stream order and
 * results, and needs no copy of the arguments. The wait is a futex on the
 * table's generation word, so a hold ends as soon as an LC tenant launches
 * or anything completes, not at the next poll.
 *
 * Fail open, always: a tenant table that cannot be opened, a stream being
 * captured into a graph, a policy that errs (hostexec disables it after 16
 * errors with one line) — the launch passes. No hold lasts longer than
 * GPUEXT_TENANT_MAX_HOLD_MS (default 1000) whatever a policy says, and a
 * process dying while its launches are in flight is reaped by the others. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hostexec/gx_hostexec.h"
#include "shim/hostpolicy_internal.h"
#include "shim/memlimit_internal.h"
#include "shim/shim_ev_internal.h"
#include "shim/tenancy_internal.h"

__thread int gx_tenancy_track GX_TLS_IE;
static __thread struct {
	struct gx_tn *tn;
	CUcontext ctx;
	CUstream s;
	uint64_t now;
} pending;

static struct {
	bool on, policy;
	char name[GX_TN_NAME_MAX];
	int cls;
	uint32_t window;
	uint64_t mem_limit;                          /* every GPU's */
	uint64_t dev_mem_limit[GX_TENANCY_MAX_DEVS]; /* by ordinal; 0: mem_limit */
	uint32_t gpu_share;
	uint64_t cgroup_id;
	uint64_t max_hold_ns, poll_ns;
} cfg;
static struct {
	int tried;
	struct gx_tn *tn;
} devs[GX_TENANCY_MAX_DEVS];
static pthread_mutex_t open_mu = PTHREAD_MUTEX_INITIALIZER;
/* One of this process's entries: all are of one tenant, so its share (a
 * tenant field) answers for every GPU without a driver call. */
static struct gx_tn *any_tn;
static int exiting;
static unsigned long nr_launches, nr_held, nr_capture, nr_untracked, nr_timeouts;

uint64_t gx_tenancy_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t env_u64(const char *k, uint64_t dflt)
{
	const char *v = getenv(k);
	char *end;
	unsigned long long x = v && *v ? strtoull(v, &end, 0) : 0;
	if (!v || !*v)
		return dflt;
	if (*end) {
		pr_warn("tenant: %s=%s is not a number; using %llu", k, v, (unsigned long long)dflt);
		return dflt;
	}
	return x;
}

/* The cgroup v2 of this process: its folder's inode is the cgroup id, and
 * its last component names the tenant under GPUEXT_TENANT_SCOPE=cgroup. */
static uint64_t my_cgroup(char *leaf, size_t n)
{
	char buf[512], path[700];
	FILE *f = fopen("/proc/self/cgroup", "re");
	uint64_t id = 0;
	if (leaf && n)
		leaf[0] = 0;
	if (!f)
		return 0;
	while (fgets(buf, sizeof(buf), f)) {
		if (strncmp(buf, "0::", 3))
			continue;
		buf[strcspn(buf, "\n")] = 0;
		snprintf(path, sizeof(path), "/sys/fs/cgroup%s", buf + 3);
		struct stat st;
		if (!stat(path, &st))
			id = st.st_ino;
		const char *l = strrchr(buf + 3, '/');
		if (leaf && l && l[1])
			snprintf(leaf, n, "cg-%s", l + 1);
	}
	fclose(f);
	return id;
}

static struct gx_tn *tenant_of(CUdevice dev)
{
	if (dev < 0 || dev >= GX_TENANCY_MAX_DEVS)
		dev = 0;
	if (__atomic_load_n(&devs[dev].tried, __ATOMIC_ACQUIRE))
		return devs[dev].tn;
	pthread_mutex_lock(&open_mu);
	if (!devs[dev].tried) {
		CUuuid u;
		memset(&u, 0, sizeof(u));
		if (REAL(cuDeviceGetUuid_v2)(&u, dev) != CUDA_SUCCESS)
			memset(&u, 0, sizeof(u));
		struct gx_tn_opts o = {.sz = sizeof(o), .name = cfg.name, .cls = cfg.cls, .window = cfg.window,
				       .dev = (const uint8_t *)u.bytes, .cgroup_id = cfg.cgroup_id,
				       .mem_limit = cfg.mem_limit, .gpu_share = cfg.gpu_share,
				       .gpu_mem_limit = cfg.dev_mem_limit[dev],
				       .lease_ns = env_u64("GPUEXT_TENANT_LEASE_MS", 1000) * 1000000ull};
		struct gx_tn *tn = NULL;
		int err = gx_tn_open(&o, &tn);
		if (err == -EPERM) {
			/* a file or folder refused by the trust rule: tenant/ said which and why */
		} else if (err) {
			pr_warn("tenant: cannot join the tenant table (%s); launches on device %d are not scheduled",
				strerror(-err), (int)dev);
		} else {
			if ((err = gx_tenancy_poller_start(tn, cfg.poll_ns))) {
				pr_warn("tenant: no completion thread (%s); launches on device %d are not scheduled",
					strerror(-err), (int)dev);
				gx_tn_close(tn);
				tn = NULL;
			} else {
				struct gx_tn_info in;
				gx_tn_self(tn, &in);
				pr_info("tenant: '%s' (%s, window %u) on device %d, policy %s", in.name,
					gx_tn_class_name(in.cls), in.window, (int)dev,
					cfg.policy ? "task_launch" : "none (window only)");
			}
		}
		devs[dev].tn = tn;
		if (tn && !any_tn)
			__atomic_store_n(&any_tn, tn, __ATOMIC_RELEASE);
		__atomic_store_n(&devs[dev].tried, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&open_mu);
	return devs[dev].tn;
}

struct gx_tn *gx_tenancy_of(CUdevice dev)
{
	return cfg.on && !__atomic_load_n(&exiting, __ATOMIC_RELAXED) ? tenant_of(dev) : NULL;
}

/* Ask until the launch may go. Returns how long it was held. le NULL: a
 * graph launch, held by the window and the share, not asked of the policy
 * (a gpu_launch describes one kernel). */
static uint64_t gate(struct gx_tn *tn, const struct gx_launch_event *le)
{
	uint64_t t0 = gx_tenancy_now(), now = t0;
	uint32_t attempt = 0;
	for (;;) {
		uint32_t gen = gx_tn_gen(tn);
		struct gpu_tenant t;
		struct gpu_launch l;
		gx_tn_view(tn, now, &t, &l);
		l.held_ns = now - t0;
		l.attempt = attempt;
		uint64_t b = le ? (uint64_t)le->grid[0] * le->grid[1] * le->grid[2] : 0;
		l.blocks = b > UINT32_MAX ? UINT32_MAX : (uint32_t)b;
		l.threads = le ? le->block[0] * le->block[1] * le->block[2] : 0;
		uint64_t wait = 0; /* 0: pass */
		struct gx_hx_gate g = {.decision = -1, .window = -1};
		if (le && __atomic_load_n(&cfg.policy, __ATOMIC_RELAXED) && gx_hostpolicy_launch(&t, &l, &g) == 0 && g.window >= 0) {
			gx_tn_set_window(tn, (uint32_t)g.window);
			t.window = (uint32_t)g.window;
		}
		if (g.decision == GPU_BYPASS)
			wait = g.hold_us * 1000;
		else if (t.window && t.inflight >= t.window)
			wait = 1000000; /* until a completion (it bumps the generation) */
		else
			wait = gx_tn_share_hold(tn, now); /* another tenant's turn (docs/limits.md) */
		if (!wait || __atomic_load_n(&exiting, __ATOMIC_RELAXED))
			break;
		if (now - t0 >= cfg.max_hold_ns) {
			if (!nr_timeouts++)
				pr_info("tenant: a launch held %llu ms passes (GPUEXT_TENANT_MAX_HOLD_MS)",
					(unsigned long long)(cfg.max_hold_ns / 1000000));
			break;
		}
		if (wait > cfg.max_hold_ns - (now - t0))
			wait = cfg.max_hold_ns - (now - t0);
		gx_tn_wait(tn, gen, wait);
		attempt++;
		now = gx_tenancy_now();
	}
	if (attempt) {
		gx_tn_throttled(tn, now - t0, 1);
		__atomic_add_fetch(&nr_held, 1, __ATOMIC_RELAXED);
	}
	return now - t0;
}

static CUresult on_event(struct gx_event *ev, void *cookie)
{
	(void)cookie;
	if (ev->kind == GX_EV_CTX_DESTROY) {
		gx_tenancy_ctx_gone(ev->ctx);
		return CUDA_SUCCESS;
	}
	gx_tenancy_track = 0;
	if (ev->kind != GX_EV_LAUNCH || __atomic_load_n(&exiting, __ATOMIC_RELAXED))
		return CUDA_SUCCESS;
	struct gx_tn *tn = tenant_of(ev->dev);
	if (!tn)
		return CUDA_SUCCESS;
	/* A launch into a stream being captured is not submitted: nothing to
	 * gate or track, and an event recorded there would join the graph. */
	CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
	if (REAL(cuStreamIsCapturing)(ev->launch.stream, &cs) != CUDA_SUCCESS || cs != CU_STREAM_CAPTURE_STATUS_NONE) {
		__atomic_add_fetch(&nr_capture, 1, __ATOMIC_RELAXED);
		gx_tenancy_capturing();
		return CUDA_SUCCESS;
	}
	gate(tn, &ev->launch);
	pending.now = gx_tenancy_now();
	gx_tn_launched(tn, pending.now);
	pending.tn = tn;
	pending.ctx = ev->ctx;
	pending.s = ev->launch.stream;
	gx_tenancy_track = 1;
	return CUDA_SUCCESS;
}

bool gx_tenancy_graphs;

bool gx_tenancy_graph_launch(CUstream s)
{
	CUcontext ctx = NULL;
	CUdevice dev = 0;
	struct gx_tn *t0 = __atomic_load_n(&any_tn, __ATOMIC_ACQUIRE);
	if (t0 && !gx_tn_share_on(t0))
		return false; /* no share: the common case pays no driver call */
	if (__atomic_load_n(&exiting, __ATOMIC_RELAXED) || REAL(cuCtxGetCurrent)(&ctx) != CUDA_SUCCESS || !ctx ||
	    REAL(cuCtxGetDevice)(&dev) != CUDA_SUCCESS)
		return false;
	struct gx_tn *tn = tenant_of(dev);
	if (!tn || !gx_tn_share_on(tn))
		return false;
	CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
	if (REAL(cuStreamIsCapturing)(s, &cs) != CUDA_SUCCESS || cs != CU_STREAM_CAPTURE_STATUS_NONE) {
		gx_tenancy_capturing(); /* a child graph of the one being captured: not submitted */
		return false;
	}
	gate(tn, NULL);
	pending.now = gx_tenancy_now();
	gx_tn_launched(tn, pending.now);
	pending.tn = tn;
	pending.ctx = ctx;
	pending.s = s;
	gx_tenancy_track = 1;
	return true;
}

void gx_tenancy_launched(CUresult rc)
{
	gx_tenancy_track = 0;
	struct gx_tn *tn = pending.tn;
	pending.tn = NULL;
	if (!tn)
		return;
	if (rc != CUDA_SUCCESS) {
		gx_tn_unlaunched(tn, false);
		return;
	}
	__atomic_add_fetch(&nr_launches, 1, __ATOMIC_RELAXED);
	if (gx_tenancy_track_launch(pending.ctx, pending.s, tn, pending.now)) {
		gx_tn_unlaunched(tn, true);
		gx_tn_untracked(tn);
		__atomic_add_fetch(&nr_untracked, 1, __ATOMIC_RELAXED);
	}
}

static void at_exit(void)
{
	__atomic_store_n(&exiting, 1, __ATOMIC_RELEASE);
	gx_tenancy_poller_stop();
	pr_info("tenant: %lu launches, %lu held, %lu passed at the hold limit, %lu untracked, %lu in captured streams",
		nr_launches, nr_held, nr_timeouts, nr_untracked, nr_capture);
	pthread_mutex_lock(&open_mu);
	for (int i = 0; i < GX_TENANCY_MAX_DEVS; i++) {
		if (!devs[i].tn)
			continue;
		struct gx_tn_info in;
		gx_tn_self(devs[i].tn, &in);
		pr_info("tenant: '%s' (%s) on device %d: %llu launches, %llu complete, max %u in flight, %llu held for %.3f ms; "
			"latency p50 %.1f p99 %.1f us",
			in.name, gx_tn_class_name(in.cls), i, (unsigned long long)in.launches,
			(unsigned long long)in.completions, in.max_inflight, (unsigned long long)in.held,
			in.throttled_ns / 1e6, in.p50_ns / 1e3, in.p99_ns / 1e3);
		/* leave, not close: a thread still inside a launch may hold it */
		gx_tn_leave(devs[i].tn);
	}
	pthread_mutex_unlock(&open_mu);
}

static void after_fork_child(void)
{
	if (!cfg.on)
		return;
	for (int i = 0; i < GX_TENANCY_MAX_DEVS; i++) {
		gx_tn_forget(devs[i].tn);
		devs[i].tn = NULL;
		devs[i].tried = 0;
	}
	gx_tenancy_poller_forget();
	__atomic_store_n(&gx_tenancy_graphs, false, __ATOMIC_RELAXED);
	any_tn = NULL;
	cfg.on = false; /* the child is not a tenant: CUDA does not survive fork */
	__atomic_store_n(&exiting, 1, __ATOMIC_RELEASE);
}

/* GPUEXT_TENANT_MEM_LIMIT_<ordinal>=SIZE (as HAMi's CUDA_DEVICE_MEMORY_LIMIT_<n>):
 * one GPU's limit, over an ORDINAL=SIZE of GPUEXT_TENANT_MEM_LIMIT. */
static bool any_mem_per_ordinal(void)
{
	extern char **environ;
	for (char **e = environ; e && *e; e++)
		if (!strncmp(*e, "GPUEXT_TENANT_MEM_LIMIT_", 24))
			return true;
	return false;
}

static void mem_per_ordinal(void)
{
	char k[64];
	for (int i = 0; i < GX_TENANCY_MAX_DEVS; i++) {
		snprintf(k, sizeof(k), "GPUEXT_TENANT_MEM_LIMIT_%d", i);
		const char *v = getenv(k);
		if (v && *v && gx_tn_parse_size(v, &cfg.dev_mem_limit[i]))
			pr_warn("tenant: %s=%s: expected bytes with an optional K, M, G or T; ignored", k, v);
	}
}

void gx_tenancy_init(void)
{
	if (gx_config.disabled || cfg.on)
		return;
	const char *name = getenv("GPUEXT_TENANT"), *cls = getenv("GPUEXT_TENANT_CLASS");
	const char *win = getenv("GPUEXT_TENANT_WINDOW"), *scope = getenv("GPUEXT_TENANT_SCOPE");
	const char *mem = getenv("GPUEXT_TENANT_MEM_LIMIT"), *share = getenv("GPUEXT_TENANT_GPU_SHARE");
	__atomic_store_n(&cfg.policy, gx_hostpolicy_has_launch(), __ATOMIC_RELAXED);
	if (!cfg.policy && !(name && *name) && !(cls && *cls) && !(win && *win) && !(mem && *mem) &&
	    !(share && *share) && !any_mem_per_ordinal())
		return; /* not a tenant: nothing on the launch path */
	if (mem && *mem && gx_tn_parse_mem_limits(mem, &cfg.mem_limit, cfg.dev_mem_limit, GX_TENANCY_MAX_DEVS))
		pr_warn("tenant: GPUEXT_TENANT_MEM_LIMIT=%s: expected SIZE or ORDINAL=SIZE,... (bytes with an optional "
			"K, M, G or T); no limit",
			mem);
	mem_per_ordinal();
	if (share && *share) {
		cfg.gpu_share = (uint32_t)env_u64("GPUEXT_TENANT_GPU_SHARE", 0);
		if (cfg.gpu_share > 100) {
			pr_warn("tenant: GPUEXT_TENANT_GPU_SHARE=%s: a percentage (1..100); no share", share);
			cfg.gpu_share = 0;
		}
	}
	gx_tn_share_config(env_u64("GPUEXT_TENANT_SHARE_PERIOD_MS", 0) * 1000000ull,
			   env_u64("GPUEXT_TENANT_SHARE_IDLE_US", 0) * 1000ull, 0);
	char leaf[GX_TN_NAME_MAX];
	cfg.cgroup_id = my_cgroup(leaf, sizeof(leaf));
	if (name && *name)
		snprintf(cfg.name, sizeof(cfg.name), "%s", name);
	else if (scope && !strcmp(scope, "cgroup") && leaf[0])
		snprintf(cfg.name, sizeof(cfg.name), "%s", leaf);
	else if (scope && *scope && strcmp(scope, "process") && strcmp(scope, "cgroup"))
		pr_warn("tenant: GPUEXT_TENANT_SCOPE=%s: expected 'process' or 'cgroup'", scope);
	cfg.cls = -1;
	if (cls && *cls && (cfg.cls = gx_tn_parse_class(cls)) < 0) {
		pr_warn("tenant: GPUEXT_TENANT_CLASS=%s: expected 'lc' or 'be'; best effort", cls);
		cfg.cls = GPU_CLASS_BE;
	}
	cfg.window = (uint32_t)env_u64("GPUEXT_TENANT_WINDOW", 0);
	cfg.max_hold_ns = env_u64("GPUEXT_TENANT_MAX_HOLD_MS", 1000) * 1000000ull;
	cfg.poll_ns = env_u64("GPUEXT_TENANT_POLL_US", 0) * 1000ull;
	if (!cfg.max_hold_ns)
		cfg.max_hold_ns = 1;
	if (gx_events_subscribe(GX_EV_MASK(GX_EV_LAUNCH) | GX_EV_MASK(GX_EV_CTX_DESTROY), on_event, NULL) < 0) {
		pr_warn("tenant: cannot subscribe to launches; not scheduled");
		return;
	}
	cfg.on = true;
	__atomic_store_n(&gx_tenancy_graphs, true, __ATOMIC_RELEASE);
	pthread_atfork(NULL, NULL, after_fork_child);
	gx_memlimit_enable(); /* usage is counted for every tenant: a limit may come later */
	atexit(at_exit);
}

/* A host policy attached or detached live (shim/live.c): whether its
 * task_launch is asked from the next launch on. A process that was no
 * tenant becomes one at the attach (registered in the tenant table from
 * its next launch) and stays one after the detach, with no policy and no
 * window: its launches pass at once. */
void gx_tenancy_policy_changed(void)
{
	bool has = gx_hostpolicy_has_launch();
	if (has && !cfg.on)
		gx_tenancy_init();
	__atomic_store_n(&cfg.policy, has, __ATOMIC_RELAXED);
}
