/* hostpolicy.c — host struct_ops policies (hostbpf/NAME.bpf.o, the objects
 * gpuext.ko attaches) run inside the shim by the user-space executor
 * (hostbpf/gx_hostexec.h), for machines where the module cannot be loaded.
 *
 * GPUEXT_POLICY is a ':'-separated list; entries whose object has
 * struct_ops/ sections are ours (device policies are the other part's),
 * each `PATH[,knob=value...]`. Events used: managed alloc/free (regions),
 * launches (managed ranges the arguments point into, from the kernel's
 * parameter layout), stream/context create/destroy (queues), syncs.
 * Prefetch decisions become cuMemPrefetchAsync on a per-context prefetch
 * stream; the launch stream waits for it (event), so the data moves before
 * the kernel without serialising unrelated work. A rejected queue makes
 * launches on it fail with CUDA_ERROR_NOT_PERMITTED. With /dev/gpuext
 * present the kernel module owns these decisions and the executor stays
 * off. Any failure: one line, the application runs without the policy. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hostbpf/gx_hostexec.h"
#include "shim/gx_hostpolicy.h"
#include "shim/gx_shim_ev.h"

#define MAX_PREF 256
#define MAX_REJECT 64
#define FCACHE 256

static pthread_mutex_t hp_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gx_hx *hx;
static struct { uint64_t va, len; int to_host; } pref[MAX_PREF];
static int npref;
static uint64_t rejected[MAX_REJECT];
static int nrejected;
static struct { CUcontext ctx; CUstream s; CUevent ev; } pstreams[16];
static struct { void *f; int n; uint16_t off[32], size[32]; } fcache[FCACHE];
static unsigned long nr_prefetch_calls;
static uint64_t nr_prefetch_bytes, exec_ns, api_ns;
/* GPUEXT_HOSTPOLICY_STREAM=launch: prefetch in order on the launch stream
 * (what hand-written code does) instead of the private prefetch stream. */
static bool on_launch_stream;
static uint64_t min_prefetch;

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The shim's cuda.h view keeps the old (v1) prototypes; prefetch is v2 (CUDA
 * 13: a CUmemLocation and flags). */
typedef CUresult (*prefetch_v2_fn)(CUdeviceptr, size_t, CUmemLocation, unsigned int, CUstream);
#define PREFETCH_V2 ((prefetch_v2_fn)__atomic_load_n(&gx_slots[GX_SYM_cuMemPrefetchAsync_v2], __ATOMIC_RELAXED))

static void on_prefetch(void *u, uint64_t va, uint64_t len, int to_host)
{
	(void)u;
	if (npref < MAX_PREF)
		pref[npref++] = (__typeof__(pref[0])){va, len, to_host};
}

static void on_attr(void *u, uint64_t q, uint32_t attr, uint64_t v)
{
	(void)u;
	/* CUDA cannot change a stream's priority after creation: recorded only. */
	pr_debug("hostpolicy: queue %#llx attr %u = %llu", (unsigned long long)q, attr, (unsigned long long)v);
}

bool gx_hostpolicy_is_struct_ops(const char *path)
{
	/* Cheap test on the bytes: a struct_ops object names its sections. */
	size_t len = 0;
	char *buf = NULL;
	FILE *f = fopen(path, "rb");
	if (!f)
		return false;
	if (!fseek(f, 0, SEEK_END)) {
		long l = ftell(f);
		if (l > 0 && l < (64l << 20) && !fseek(f, 0, SEEK_SET) && (buf = malloc((size_t)l)))
			len = fread(buf, 1, (size_t)l, f);
	}
	fclose(f);
	bool yes = len > 4 && !memcmp(buf, "\177ELF", 4) && memmem(buf, len, "struct_ops/", 11);
	free(buf);
	return yes;
}

static struct gx_hx_opts make_opts(void)
{
	struct gx_hx_opts o = {.sz = sizeof(o), .shm_maps = 1,
			       .act = {.prefetch = on_prefetch, .queue_attr = on_attr}};
	const char *cap = getenv("GPUEXT_HOSTPOLICY_CAPACITY"); /* regions; default: device memory */
	if (cap)
		o.capacity = (uint32_t)strtoul(cap, NULL, 0);
	/* Below one VA block a cuMemPrefetchAsync call costs more CPU before the
	 * launch than the GPU's demand paging spends on the same pages. */
	const char *min = getenv("GPUEXT_HOSTPOLICY_MIN_PREFETCH");
	o.min_prefetch = min_prefetch = min ? strtoull(min, NULL, 0) : 2ull << 20;
	const char *st = getenv("GPUEXT_HOSTPOLICY_STREAM");
	on_launch_stream = st && !strcmp(st, "launch");
	if (st && strcmp(st, "launch") && strcmp(st, "own"))
		pr_warn("hostpolicy: GPUEXT_HOSTPOLICY_STREAM=%s: expected 'own' or 'launch'; using 'own'", st);
	return o;
}

/* A prefetch stream + event for the current context. */
static int pstream(CUcontext ctx, CUstream *s, CUevent *ev)
{
	for (int i = 0; i < 16; i++) {
		if (pstreams[i].ctx == ctx && pstreams[i].s) {
			*s = pstreams[i].s;
			*ev = pstreams[i].ev;
			return 0;
		}
		if (!pstreams[i].ctx) {
			if (REAL(cuStreamCreate)(&pstreams[i].s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
				return -EIO;
			if (REAL(cuEventCreate)(&pstreams[i].ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
				REAL(cuStreamDestroy)(pstreams[i].s);
				pstreams[i].s = NULL;
				return -EIO;
			}
			pstreams[i].ctx = ctx;
			*s = pstreams[i].s;
			*ev = pstreams[i].ev;
			return 0;
		}
	}
	return -ENOSPC;
}

/* Issue the decisions collected in pref[] before the launch on `ls`. */
static void issue(struct gx_event *ev, CUstream ls)
{
	if (!npref)
		return;
	CUstream s;
	CUevent e;
	CUdevice dev = ev->dev;
	if (dev < 0 && REAL(cuCtxGetDevice)(&dev) != CUDA_SUCCESS)
		dev = 0;
	if (on_launch_stream || pstream(ev->ctx, &s, &e)) {
		s = ls; /* in order on the launch stream */
		e = NULL;
	}
	uint64_t t0 = mono_ns();
	for (int i = 0; i < npref; i++) {
		CUmemLocation loc = {.type = pref[i].to_host ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE,
				     .id = pref[i].to_host ? 0 : dev};
		CUresult rc = PREFETCH_V2((CUdeviceptr)pref[i].va, pref[i].len, loc, 0, s);
		if (rc != CUDA_SUCCESS)
			pr_warn_once("hostpolicy: cuMemPrefetchAsync failed (%d); hints dropped", (int)rc);
		nr_prefetch_calls++;
		if (!pref[i].to_host)
			nr_prefetch_bytes += pref[i].len;
	}
	if (e && REAL(cuEventRecord)(e, s) == CUDA_SUCCESS)
		REAL(cuStreamWaitEvent)(ls, e, 0);
	api_ns += mono_ns() - t0;
	npref = 0;
}

/* The parameter layout of a function: offsets/sizes, cached. -1: unknown. */
static int param_layout(void *f, int is_kernel, uint16_t **off, uint16_t **size)
{
	unsigned h = (unsigned)(((uintptr_t)f >> 4) % FCACHE);
	if (fcache[h].f != f) {
		int n = 0;
		for (; n < 32; n++) {
			size_t o = (size_t)-1, s = (size_t)-1;
			CUresult rc = is_kernel ? REAL(cuKernelGetParamInfo)((CUkernel)f, (size_t)n, &o, &s)
						: REAL(cuFuncGetParamInfo)((CUfunction)f, (size_t)n, &o, &s);
			if (rc != CUDA_SUCCESS)
				break;
			if (o == (size_t)-1 || s == (size_t)-1 || o > 65535 || s > 65535) {
				n = -1; /* driver gave no layout */
				break;
			}
			fcache[h].off[n] = (uint16_t)o;
			fcache[h].size[n] = (uint16_t)s;
		}
		fcache[h].f = f;
		fcache[h].n = n;
	}
	*off = fcache[h].off;
	*size = fcache[h].size;
	return fcache[h].n;
}

static void scan_word(uint64_t v)
{
	if (v >= 4096)
		gx_hx__touch(hx, v, 0); /* -ENOENT for anything not managed */
}

static void on_launch(struct gx_event *ev)
{
	struct gx_launch_event *l = &ev->launch;
	uint64_t t0 = mono_ns();
	for (int i = 0; i < nrejected; i++)
		if (rejected[i] == (uint64_t)(uintptr_t)l->stream || rejected[i] == (uint64_t)(uintptr_t)ev->ctx)
			return; /* vetoed by the caller */
	if (l->kernel_params) {
		uint16_t *off, *size;
		int n = param_layout((void *)l->func, l->is_kernel, &off, &size);
		for (int i = 0; i < n; i++) {
			const uint8_t *p = l->kernel_params[i];
			for (unsigned w = 0; p && w + 8 <= size[i]; w += 8) {
				uint64_t v;
				memcpy(&v, p + w, 8);
				scan_word(v);
			}
		}
	} else if (l->extra) {
		void *buf = NULL;
		size_t len = 0;
		for (int i = 0; l->extra[i] != CU_LAUNCH_PARAM_END && i < 16; i += 2) {
			if (l->extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
				buf = l->extra[i + 1];
			else if (l->extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && l->extra[i + 1])
				len = *(size_t *)l->extra[i + 1];
		}
		for (size_t w = 0; buf && w + 8 <= len; w += 8) {
			uint64_t v;
			memcpy(&v, (uint8_t *)buf + w, 8);
			scan_word(v);
		}
	}
	exec_ns += mono_ns() - t0;
	issue(ev, l->stream);
}

static bool is_rejected(uint64_t id)
{
	for (int i = 0; i < nrejected; i++)
		if (rejected[i] == id)
			return true;
	return false;
}

static CUresult on_event(struct gx_event *ev, void *cookie)
{
	(void)cookie;
	CUresult rc = CUDA_SUCCESS;
	pthread_mutex_lock(&hp_lock);
	if (!hx) { /* after exit's report */
		pthread_mutex_unlock(&hp_lock);
		return rc;
	}
	switch (ev->kind) {
	case GX_EV_MEM_ALLOC_MANAGED:
		gx_hx__alloc(hx, ev->mem.ptr, ev->mem.size);
		break;
	case GX_EV_MEM_FREE:
		gx_hx__free_range(hx, ev->mem.ptr);
		break;
	case GX_EV_LAUNCH:
		if (is_rejected((uint64_t)(uintptr_t)ev->launch.stream) || is_rejected((uint64_t)(uintptr_t)ev->ctx))
			rc = CUDA_ERROR_NOT_PERMITTED;
		else
			on_launch(ev);
		break;
	case GX_EV_STREAM_CREATE:
	case GX_EV_CTX_CREATE: {
		uint64_t id = ev->kind == GX_EV_STREAM_CREATE ? (uint64_t)(uintptr_t)ev->stream.stream
							      : (uint64_t)(uintptr_t)ev->ctx;
		int prio = ev->kind == GX_EV_STREAM_CREATE ? ev->stream.priority : 0;
		/* CUDA priorities: lower number = higher priority, 0 default. */
		if (gx_hx__queue_create(hx, id, prio < 0 ? -prio : 0) == -EPERM && nrejected < MAX_REJECT) {
			rejected[nrejected++] = id;
			pr_warn("hostpolicy: %s %#llx rejected by '%s': launches on it fail with CUDA_ERROR_NOT_PERMITTED",
				ev->kind == GX_EV_STREAM_CREATE ? "stream" : "context", (unsigned long long)id,
				gx_hx__sched_policy(hx));
		}
		break;
	}
	case GX_EV_STREAM_DESTROY:
	case GX_EV_CTX_DESTROY:
		gx_hx__queue_destroy(hx, ev->kind == GX_EV_STREAM_DESTROY ? (uint64_t)(uintptr_t)ev->stream.stream
									  : (uint64_t)(uintptr_t)ev->ctx);
		break;
	case GX_EV_SYNC:
		gx_hx__sync(hx);
		break;
	default:
		break;
	}
	pthread_mutex_unlock(&hp_lock);
	return rc;
}

/* At exit: one summary line, and the executor freed so its map files in
 * the shm folder are removed. */
static void report(void)
{
	pthread_mutex_lock(&hp_lock);
	if (hx) {
		struct gx_hx_stats st;
		gx_hx__stats(hx, &st);
		pr_info("hostpolicy: %lu prefetch calls issued, %.1f MiB; %llu ranges (%.1f MiB) under %.1f MiB left to "
			"demand paging; executor %.3f ms in %llu policy calls (%llu faults); cuMemPrefetchAsync %.3f ms "
			"(policy '%s'%s)",
			nr_prefetch_calls, nr_prefetch_bytes / 1048576.0, (unsigned long long)st.small,
			st.small_bytes / 1048576.0, min_prefetch / 1048576.0, exec_ns / 1e6,
			(unsigned long long)st.calls, (unsigned long long)st.faults, api_ns / 1e6, gx_hx__mem_policy(hx),
			gx_hx__mem_enabled(hx) ? "" : ", disabled");
		gx_hx__free(hx);
		hx = NULL;
	}
	pthread_mutex_unlock(&hp_lock);
}

void gx_hostpolicy_init(void)
{
	const char *list = gx_config.policy;
	if (!list || !*list || gx_config.disabled || hx)
		return;
	char *dup = strdup(list);
	if (!dup)
		return;
	int loaded = 0;
	struct gx_hx *h = NULL;
	for (char *save = NULL, *e = strtok_r(dup, ":", &save); e; e = strtok_r(NULL, ":", &save)) {
		char *knobs = strchr(e, ',');
		if (knobs)
			*knobs++ = 0;
		if (!gx_hostpolicy_is_struct_ops(e))
			continue;
		if (!access("/dev/gpuext", F_OK)) {
			pr_info("hostpolicy: %s: /dev/gpuext present: the kernel module runs host policies, shim executor off", e);
			break;
		}
		if (!h) {
			struct gx_hx_opts o = make_opts();
			h = gx_hx__new(&o);
			if (!h)
				break;
		}
		loaded += gx_hx__load(h, e, knobs) == 0;
	}
	free(dup);
	if (!loaded) {
		gx_hx__free(h);
		return;
	}
	hx = h;
	unsigned mask = GX_EV_MASK(GX_EV_MEM_ALLOC_MANAGED) | GX_EV_MASK(GX_EV_MEM_FREE) | GX_EV_MASK(GX_EV_LAUNCH) |
			GX_EV_MASK(GX_EV_SYNC);
	if (*gx_hx__sched_policy(hx))
		mask |= GX_EV_MASK(GX_EV_STREAM_CREATE) | GX_EV_MASK(GX_EV_STREAM_DESTROY) |
			GX_EV_MASK(GX_EV_CTX_CREATE) | GX_EV_MASK(GX_EV_CTX_DESTROY);
	if (gx_events_subscribe(mask, on_event, NULL) < 0) {
		pr_warn("hostpolicy: cannot subscribe to events; running without host policy");
		return;
	}
	atexit(report);
}
