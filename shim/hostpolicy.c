/* hostpolicy.c — host struct_ops policies (hostbpf/gx_NAME.bpf.c, the objects
 * gpuext.ko attaches) run inside the shim by the user-space executor
 * (hostexec/gx_hostexec.h), for machines where the module cannot be loaded.
 *
 * GPUEXT_POLICY is a ':'-separated list; entries whose object has
 * struct_ops/ sections are ours (device policies are the other part's),
 * each `PATH[,knob=value...]`. Events used: managed alloc/free (regions),
 * launches (managed ranges the arguments point into, from the kernel's
 * parameter layout), stream/context create/destroy (queues), syncs.
 * Prefetch decisions become cuMemPrefetchAsync in order on the launch
 * stream (GPUEXT_HOSTPOLICY_STREAM=own: on a per-context prefetch stream the
 * launch stream waits for, by event), so the data moves before the kernel.
 * A rejected queue makes launches on it fail with CUDA_ERROR_NOT_PERMITTED.
 * With /dev/gpuext present the kernel module owns these decisions: launches
 * become prefetch hints on its ioctl channel (hostkmod.c) and the executor
 * stays off. Device policies' gdev_mem_prefetch requests (drained by
 * attach/devrt.c) reach the same policy. Any failure: one line, the application
 * runs without the policy. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpuext/gpu_ext.h"
#include "hostexec/gx_hostexec.h"
#include "shim/hostkmod_internal.h"
#include "shim/hostpolicy_internal.h"
#include "shim/shim_ev_internal.h"
#include "shim/stats_internal.h"

#define MAX_PREF 256
#define MAX_REJECT 64
#define FCACHE 256

static pthread_mutex_t hp_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gx_hx *hx;
static bool via_kmod; /* gpuext.ko runs the policies; we send hints (hostkmod.c) */
static struct { uint64_t va, len; int to_host; } pref[MAX_PREF];
static int npref;
static uint64_t rejected[MAX_REJECT];
static int nrejected;
static struct { CUcontext ctx; CUstream s; CUevent ev; } pstreams[16];
static struct { void *f; int n; uint16_t off[32], size[32]; } fcache[FCACHE];
static unsigned long nr_prefetch_calls;
static uint64_t nr_prefetch_bytes, exec_ns, api_ns;
/* Prefetch in order on the launch stream (what hand-written code does);
 * GPUEXT_HOSTPOLICY_STREAM=own: on the private prefetch stream + event. */
static bool on_launch_stream;
/* GPUEXT_HOSTPOLICY_CHUNK (bytes): ranges go out as soon as the executor has
 * this much, so copies start while it still walks the footprint; 0 (the
 * default): one coalesced call per run of ranges, after the walk. */
static uint64_t chunk_bytes;
/* GPUEXT_HOSTPOLICY_LAUNCH_ARGS=0: launch arguments are not taken as
 * footprints; only device requests (gdev_mem_prefetch) drive the policy. */
static bool launch_args = true;
static unsigned long nr_dev_requests, nr_dev_unmanaged;
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

static void send_one(uint64_t va, uint64_t len, int to_host);
static bool chunked(void);

static void on_prefetch(void *u, uint64_t va, uint64_t len, int to_host)
{
	(void)u;
	if (chunked())
		send_one(va, len, to_host); /* copies start during the walk */
	else if (npref < MAX_PREF)
		pref[npref++] = (__typeof__(pref[0])){va, len, to_host};
}

static CUdevice cur_dev; /* device of the event being handled */
/* The executor keeps one residency model per process. A process driving
 * several GPUs: when launches move to another device, the data they touch
 * is not resident there, as after a host synchronisation — so the switch
 * syncs the model and the new device's launches fault (and prefetch) again. */
static CUdevice model_dev = -1;

static void touch_device(CUdevice d)
{
	if (d < 0)
		return;
	if (model_dev >= 0 && d != model_dev)
		gx_hx__sync(hx);
	model_dev = d;
}
static unsigned long nr_advise_calls;

/* Eviction order made durable (gx_hostexec.h): a cold region prefers the
 * host and stays mapped for the device (remote reads, no migration back);
 * a region a policy brings back loses that advice before its prefetch. */
static void on_advise(void *u, uint64_t va, uint64_t len, int adv)
{
	(void)u;
	CUmemLocation host = {.type = CU_MEM_LOCATION_TYPE_HOST, .id = 0};
	CUmemLocation dev = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = cur_dev};
	CUresult a, b;
	if (adv == GX_HX_ADV_COLD) {
		a = REAL(cuMemAdvise_v2)((CUdeviceptr)va, len, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, host);
		b = REAL(cuMemAdvise_v2)((CUdeviceptr)va, len, CU_MEM_ADVISE_SET_ACCESSED_BY, dev);
	} else {
		a = REAL(cuMemAdvise_v2)((CUdeviceptr)va, len, CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, host);
		b = REAL(cuMemAdvise_v2)((CUdeviceptr)va, len, CU_MEM_ADVISE_UNSET_ACCESSED_BY, dev);
	}
	nr_advise_calls += 2;
	if (a != CUDA_SUCCESS || b != CUDA_SUCCESS)
		pr_warn_once("hostpolicy: cuMemAdvise failed (%d, %d); placement advice dropped", (int)a, (int)b);
}

/* Streams as queues. A stream is bound before the driver makes it
 * (GX_EV_STREAM_CREATING) under a provisional id, so a policy's priority
 * can be the one it is created with (CUDA cannot change a stream's
 * priority later) and a rejection fails the creation as the driver would;
 * the post event gives the queue the stream's handle. */
static __thread uint64_t creating;       /* provisional queue id, 0: none */
static __thread int creating_prio = -1;  /* GPU_ATTR_PRIORITY the policy set, -1: none */
static uint64_t next_provisional = 1;
static unsigned long nr_streams, nr_streams_prio, nr_streams_rejected, nr_attr_other;

static void on_attr(void *u, uint64_t q, uint32_t attr, uint64_t v)
{
	(void)u;
	if (q == creating && attr == GPU_ATTR_PRIORITY)
		creating_prio = (int)v;
	else if (attr != GPU_ATTR_PRIORITY)
		nr_attr_other++; /* timeslice / interleave: no per-stream CUDA control */
	pr_debug("hostpolicy: queue %#llx attr %u = %llu", (unsigned long long)q, attr, (unsigned long long)v);
}

/* CUDA stream priorities run from `least` (0, the default) to `greatest`
 * (e.g. -5): lower numbers are higher priorities. Queues have
 * 0..GPU_PRIO_MAX, higher is higher (gpu_ext.h). Linear, rounded. */
static int queue_prio_of(int cuda, int least, int greatest)
{
	int span = least - greatest;
	if (span <= 0)
		return 0;
	cuda = cuda > least ? least : cuda < greatest ? greatest : cuda;
	return ((least - cuda) * GPU_PRIO_MAX + span / 2) / span;
}

static int cuda_prio_of(int q, int least, int greatest)
{
	int span = least - greatest;
	q = q < 0 ? 0 : q > GPU_PRIO_MAX ? GPU_PRIO_MAX : q;
	return least - (q * span + GPU_PRIO_MAX / 2) / GPU_PRIO_MAX;
}

/* Pre-event of a stream creation: run task_init; apply its priority. */
static CUresult stream_creating(struct gx_event *ev)
{
	if (creating) /* the last creation on this thread failed in the driver */
		gx_hx__queue_destroy(hx, creating);
	int least = 0, greatest = 0;
	if (REAL(cuCtxGetStreamPriorityRange)(&least, &greatest) != CUDA_SUCCESS)
		least = greatest = 0;
	creating = (1ull << 63) | next_provisional++;
	creating_prio = -1;
	int err = gx_hx__queue_create(hx, creating, queue_prio_of(ev->stream.priority, least, greatest));
	if (err == -EPERM) {
		creating = 0;
		nr_streams_rejected++;
		pr_warn("hostpolicy: stream rejected by '%s': cuStreamCreate fails with CUDA_ERROR_NOT_PERMITTED",
			gx_hx__sched_policy(hx));
		return CUDA_ERROR_NOT_PERMITTED;
	}
	if (err) {
		creating = 0;
		return CUDA_SUCCESS;
	}
	if (creating_prio >= 0) {
		int p = cuda_prio_of(creating_prio, least, greatest);
		if (p != ev->stream.priority) {
			pr_debug("hostpolicy: stream priority %d -> %d (queue priority %d, range [%d, %d])",
				 ev->stream.priority, p, creating_prio, greatest, least);
			ev->stream.priority = p;
		}
		nr_streams_prio++;
	}
	return CUDA_SUCCESS;
}

bool gx_hostpolicy_is_struct_ops(const char *path)
{
	return gx_hx_is_struct_ops(path);
}

static bool recording; /* GPUEXT_HOSTPOLICY_RECORD: queue events too */

static struct gx_hx_opts make_opts(void)
{
	struct gx_hx_opts o = {.sz = sizeof(o), .shm_maps = 1,
			       .act = {.prefetch = on_prefetch, .queue_attr = on_attr, .advise = on_advise}};
	const char *cap = getenv("GPUEXT_HOSTPOLICY_CAPACITY"); /* regions; default: device memory */
	if (cap)
		o.capacity = (uint32_t)strtoul(cap, NULL, 0);
	/* Below one VA block a cuMemPrefetchAsync call costs more CPU before the
	 * launch than the GPU's demand paging spends on the same pages. */
	const char *min = getenv("GPUEXT_HOSTPOLICY_MIN_PREFETCH");
	o.min_prefetch = min_prefetch = min ? strtoull(min, NULL, 0) : 2ull << 20;
	/* Native code (libgxjit.so) by default: the executor verified every
	 * handler at load (hostexec/hx_verify.c); where the JIT library cannot
	 * be loaded, one line and the interpreter. */
	const char *jit = getenv("GPUEXT_HOSTPOLICY_JIT");
	o.native = !jit || strcmp(jit, "interp");
	if (jit && strcmp(jit, "native") && strcmp(jit, "interp"))
		pr_warn("hostpolicy: GPUEXT_HOSTPOLICY_JIT=%s: expected 'native' or 'interp'; using native", jit);
	/* GPUEXT_HOSTPOLICY_RECORD=FILE ("%p": the pid): every executor event
	 * as a text line, for gx_hx__replay (differential and regression tests
	 * on real event streams). */
	const char *recp = getenv("GPUEXT_HOSTPOLICY_RECORD");
	if (recp && *recp) {
		static char path[512];
		const char *pp = strstr(recp, "%p");
		if (pp)
			snprintf(path, sizeof(path), "%.*s%d%s", (int)(pp - recp), recp, (int)getpid(), pp + 2);
		else
			snprintf(path, sizeof(path), "%s", recp);
		o.record = path;
		recording = true;
	}
	const char *ch = getenv("GPUEXT_HOSTPOLICY_CHUNK");
	o.max_coalesce = chunk_bytes = ch ? strtoull(ch, NULL, 0) : 0;
	const char *la = getenv("GPUEXT_HOSTPOLICY_LAUNCH_ARGS");
	launch_args = !la || strcmp(la, "0");
	const char *st = getenv("GPUEXT_HOSTPOLICY_STREAM");
	/* Default: in order on the launch stream, as hand-written code does
	 * (bench/results/2026-12-02-gpu-run5.md: ping-pong 291 ms vs 355 ms on the private stream, hand-written
	 * on a side stream 547 vs 403 ms; other patterns within noise). */
	on_launch_stream = !st || strcmp(st, "own");
	if (st && strcmp(st, "launch") && strcmp(st, "own"))
		pr_warn("hostpolicy: GPUEXT_HOSTPOLICY_STREAM=%s: expected 'own' or 'launch'; using 'launch'", st);
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
	}
	for (int i = 0; i < 16; i++) { /* slots of destroyed contexts are free again */
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

/* Where the decisions of the event being handled go: the prefetch stream
 * (+ its event, which the launch stream waits on), or the launch stream. */
static struct {
	bool on;          /* a launch or device request is being handled */
	bool launch;
	bool resolved, usable;
	CUcontext ctx;
	CUdevice dev;
	CUstream ls, s;
	CUevent e;
	int issued;
} cur;

static bool chunked(void)
{
	return chunk_bytes && cur.on;
}

static void cur_begin(CUcontext ctx, CUdevice dev, CUstream ls, bool launch)
{
	cur = (__typeof__(cur)){.on = true, .launch = launch, .ctx = ctx, .dev = dev, .ls = ls};
}

static bool cur_resolve(void)
{
	if (cur.resolved)
		return cur.usable;
	cur.resolved = true;
	if (cur.dev < 0 && REAL(cuCtxGetDevice)(&cur.dev) != CUDA_SUCCESS)
		cur.dev = 0;
	if ((cur.launch && on_launch_stream) || pstream(cur.ctx, &cur.s, &cur.e)) {
		if (!cur.launch) /* no stream of ours and no launch to order by */
			return cur.usable = false;
		cur.s = cur.ls; /* in order on the launch stream */
		cur.e = NULL;
	}
	if (!cur.launch)
		cur.e = NULL;
	return cur.usable = true;
}

static void send_one(uint64_t va, uint64_t len, int to_host)
{
	if (!cur_resolve())
		return;
	uint64_t t0 = mono_ns();
	CUmemLocation loc = {.type = to_host ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE,
			     .id = to_host ? 0 : cur.dev};
	CUresult rc = PREFETCH_V2((CUdeviceptr)va, len, loc, 0, cur.s);
	if (rc != CUDA_SUCCESS)
		pr_warn_once("hostpolicy: cuMemPrefetchAsync failed (%d); hints dropped", (int)rc);
	nr_prefetch_calls++;
	if (!to_host)
		nr_prefetch_bytes += len;
	cur.issued++;
	api_ns += mono_ns() - t0;
}

/* Issue what is queued in pref[]; order the launch after all of it. */
static void cur_end(void)
{
	for (int i = 0; i < npref; i++)
		send_one(pref[i].va, pref[i].len, pref[i].to_host);
	npref = 0;
	if (cur.issued && cur.e) {
		uint64_t t0 = mono_ns();
		if (REAL(cuEventRecord)(cur.e, cur.s) == CUDA_SUCCESS)
			REAL(cuStreamWaitEvent)(cur.ls, cur.e, 0);
		api_ns += mono_ns() - t0;
	}
	cur.on = false;
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
	if (v < 4096)
		return;
	if (via_kmod)
		gx_hostkmod_note(v);
	else
		gx_hx__touch(hx, v, 0); /* -ENOENT for anything not managed */
}

static void on_launch(struct gx_event *ev)
{
	struct gx_launch_event *l = &ev->launch;
	if (!launch_args)
		return;
	if (!via_kmod)
		cur_begin(ev->ctx, ev->dev, l->stream, true);
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
	if (via_kmod)
		gx_hostkmod_flush();
	else
		cur_end();
}

void gx_hostpolicy_device_prefetch(CUcontext ctx, CUdevice dev, uint64_t addr, uint64_t len)
{
	pthread_mutex_lock(&hp_lock);
	if (!len)
		len = 4096;
	if (via_kmod) {
		nr_dev_requests++;
		gx_hostkmod_note_range(addr, len);
		gx_hostkmod_flush();
	} else if (hx && gx_hx__mem_enabled(hx)) {
		nr_dev_requests++;
		cur_dev = dev >= 0 ? dev : 0;
		touch_device(cur_dev);
		CUcontext old = NULL;
		bool switched = REAL(cuCtxGetCurrent)(&old) == CUDA_SUCCESS && old != ctx &&
				REAL(cuCtxSetCurrent)(ctx) == CUDA_SUCCESS;
		cur_begin(ctx, dev, NULL, false);
		uint64_t t0 = mono_ns();
		if (gx_hx__touch(hx, addr, len) == -ENOENT)
			nr_dev_unmanaged++; /* not managed, or freed before the drain */
		exec_ns += mono_ns() - t0;
		cur_end();
		if (switched)
			REAL(cuCtxSetCurrent)(old);
	}
	pthread_mutex_unlock(&hp_lock);
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
	if (via_kmod) {
		if (ev->kind == GX_EV_MEM_ALLOC_MANAGED)
			gx_hostkmod_alloc(ev->mem.ptr, ev->mem.size);
		else if (ev->kind == GX_EV_MEM_FREE)
			gx_hostkmod_free(ev->mem.ptr);
		else if (ev->kind == GX_EV_SYNC)
			gx_hostkmod_sync();
		else if (ev->kind == GX_EV_LAUNCH)
			on_launch(ev);
		pthread_mutex_unlock(&hp_lock);
		return rc;
	}
	if (!hx) { /* after exit's report */
		pthread_mutex_unlock(&hp_lock);
		return rc;
	}
	cur_dev = ev->dev >= 0 ? ev->dev : 0;
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
		else {
			touch_device(cur_dev);
			on_launch(ev);
		}
		break;
	case GX_EV_STREAM_CREATING:
		rc = stream_creating(ev);
		break;
	case GX_EV_STREAM_CREATE:
		if (creating) { /* bound in the pre-event: the queue gets the handle */
			gx_hx__queue_rekey(hx, creating, (uint64_t)(uintptr_t)ev->stream.stream);
			creating = 0;
			nr_streams++;
			break;
		}
		/* fall through */
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
		/* The context's prefetch stream goes with it (the driver frees
		 * it); a later context at the same address gets a new one. */
		for (int i = 0; ev->kind == GX_EV_CTX_DESTROY && i < (int)(sizeof(pstreams) / sizeof(pstreams[0])); i++)
			if (pstreams[i].ctx == ev->ctx)
				memset(&pstreams[i], 0, sizeof(pstreams[i]));
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

bool gx_hostpolicy_has_launch(void)
{
	pthread_mutex_lock(&hp_lock);
	bool yes = hx && !via_kmod && gx_hx__has_launch(hx);
	pthread_mutex_unlock(&hp_lock);
	return yes;
}

int gx_hostpolicy_launch(const struct gpu_tenant *t, const struct gpu_launch *l, struct gx_hx_gate *g)
{
	pthread_mutex_lock(&hp_lock);
	int err = hx && !via_kmod ? gx_hx__launch(hx, t, l, g) : -ENOENT;
	pthread_mutex_unlock(&hp_lock);
	return err;
}

#define SUM_MEM 1
#define SUM_SCHED 2
/* The summary lines (`which`: SUM_MEM, SUM_SCHED; the sched line only with a
 * sched policy) into out, for the exit report and a live detach's answer;
 * hp_lock held. */
static void summary(char *out, size_t n, int which)
{
	out[0] = 0;
	if (!hx)
		return;
	struct gx_hx_stats st;
	gx_hx__stats(hx, &st);
	int k = 0;
	if (which & SUM_MEM)
		k = snprintf(out, n,
			     "%lu prefetch calls issued, %.1f MiB; %llu ranges (%.1f MiB) under %.1f MiB left to "
			     "demand paging; executor %.3f ms in %llu policy calls (%llu faults); cuMemPrefetchAsync "
			     "%.3f ms; %llu evictions, %lu cuMemAdvise calls; %lu device requests (%lu outside managed "
			     "memory) (policy '%s'%s)",
			     nr_prefetch_calls, nr_prefetch_bytes / 1048576.0, (unsigned long long)st.small,
			     st.small_bytes / 1048576.0, min_prefetch / 1048576.0, exec_ns / 1e6,
			     (unsigned long long)st.calls, (unsigned long long)st.faults, api_ns / 1e6,
			     (unsigned long long)st.evictions, nr_advise_calls, nr_dev_requests, nr_dev_unmanaged,
			     gx_hx__mem_policy(hx), gx_hx__mem_enabled(hx) ? "" : ", disabled");
	if ((which & SUM_SCHED) && *gx_hx__sched_policy(hx) && k >= 0 && (size_t)k < n)
		snprintf(out + k, n - (size_t)k,
			 "%s%lu streams created under '%s', %lu with the policy's priority, %lu refused; "
			 "%lu timeslice/interleave settings recorded only",
			 k ? "\n" : "", nr_streams, gx_hx__sched_policy(hx), nr_streams_prio, nr_streams_rejected,
			 nr_attr_other);
}

static void log_summary(void)
{
	char buf[1200];
	summary(buf, sizeof(buf), SUM_MEM | SUM_SCHED);
	for (char *l = buf, *nl; l && *l; l = nl ? nl + 1 : NULL) {
		if ((nl = strchr(l, '\n')))
			*nl = 0;
		pr_info("hostpolicy: %s", l);
	}
}

/* At exit: the summary, and the executor freed so its map files in the
 * shm folder are removed. */
static void report(void)
{
	pthread_mutex_lock(&hp_lock);
	if (via_kmod) {
		gx_hostkmod_close();
		via_kmod = false;
	}
	if (hx) {
		log_summary();
		gx_hx__free(hx);
		hx = NULL;
	}
	pthread_mutex_unlock(&hp_lock);
}

static int hp_sub = -1; /* our event subscription */

static void report_at_exit(void)
{
	static bool once;
	if (!once)
		atexit(report);
	once = true;
}

/* Subscribe the executor's events (hx set): 0 or -errno. */
static int subscribe(void)
{
	/* Context destruction always: its prefetch stream slot is freed. */
	unsigned mask = GX_EV_MASK(GX_EV_MEM_ALLOC_MANAGED) | GX_EV_MASK(GX_EV_MEM_FREE) | GX_EV_MASK(GX_EV_LAUNCH) |
			GX_EV_MASK(GX_EV_SYNC) | GX_EV_MASK(GX_EV_CTX_DESTROY);
	if (*gx_hx__sched_policy(hx) || recording)
		mask |= GX_EV_MASK(GX_EV_STREAM_CREATING) | GX_EV_MASK(GX_EV_STREAM_CREATE) |
			GX_EV_MASK(GX_EV_STREAM_DESTROY) | GX_EV_MASK(GX_EV_CTX_CREATE);
	if (hp_sub >= 0)
		gx_events_unsubscribe(hp_sub);
	hp_sub = gx_events_subscribe(mask, on_event, NULL);
	return hp_sub < 0 ? hp_sub : 0;
}

void gx_hostpolicy_init(void)
{
	const char *list = gx_config.policy;
	if (!list || !*list || gx_config.disabled || hx)
		return;
	char *dup = strdup(list);
	if (!dup)
		return;
	int loaded = 0, kmod_tried = 0;
	struct gx_hx *h = NULL;
	for (char *save = NULL, *e = strtok_r(dup, ":", &save); e; e = strtok_r(NULL, ":", &save)) {
		char *knobs = strchr(e, ',');
		if (knobs)
			*knobs++ = 0;
		if (!gx_hostpolicy_is_struct_ops(e))
			continue;
		if (!kmod_tried++) {
			/* The module sees real faults: it runs the policies, we hint. */
			int err = gx_hostkmod_open();
			if (!err) {
				pr_info("hostpolicy: /dev/gpuext present (backend '%s'): gpuext.ko runs the host policies "
					"(attach them with build/bin/gx_NAME); launches send it prefetch hints, shim executor off",
					gx_hostkmod_backend());
				via_kmod = true;
				break;
			}
			if (err != -ENOENT)
				pr_warn("hostpolicy: /dev/gpuext unusable (%s); running the policies in the shim",
					strerror(-err));
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
	if (via_kmod) {
		unsigned m = GX_EV_MASK(GX_EV_MEM_ALLOC_MANAGED) | GX_EV_MASK(GX_EV_MEM_FREE) | GX_EV_MASK(GX_EV_LAUNCH) |
			     GX_EV_MASK(GX_EV_SYNC);
		if (gx_events_subscribe(m, on_event, NULL) < 0) {
			pr_warn("hostpolicy: cannot subscribe to events; no prefetch hints");
			gx_hostkmod_close();
			via_kmod = false;
			return;
		}
		atexit(report);
		return;
	}
	if (!loaded) {
		gx_hx__free(h);
		return;
	}
	hx = h;
	if (subscribe()) {
		pr_warn("hostpolicy: cannot subscribe to events; running without host policy");
		return;
	}
	report_at_exit();
}

/* ---- live attach (gpuext attach --policy HOST.bpf.o; shim/live.c) ----
 * The executor of a process that runs no host policy from its start is
 * made on the control thread, its policies loaded (their maps in the run
 * folder the CLI made), then its events subscribed: from the next event
 * on, the policies decide. What happened before the attach is unknown to
 * them (managed allocations made earlier are no regions; streams made
 * earlier have the queue of their context). Detach: unsubscribe, then the
 * summary and the executor freed under hp_lock (an event handler that
 * already passed the subscription check finds no executor). The entries
 * are kept so that detaching one of two policies (mem + sched) reloads the
 * other alone: its state restarts. */
static bool live_hp;
static char live_entry[2][4200]; /* [0] mem, [1] sched: "PATH[,knobs]" */

/* Load "PATH[,knobs]" into h, recording which slot it took: 0 or -errno. */
static int live_load(struct gx_hx *h, const char *entry)
{
	char e[4200];
	snprintf(e, sizeof(e), "%s", entry);
	char *knobs = strchr(e, ',');
	if (knobs)
		*knobs++ = 0;
	bool had_mem = *gx_hx__mem_policy(h), had_sched = *gx_hx__sched_policy(h);
	int err = gx_hx__load(h, e, knobs);
	if (err)
		return err;
	if (!had_mem && *gx_hx__mem_policy(h))
		snprintf(live_entry[0], sizeof(live_entry[0]), "%s", entry);
	if (!had_sched && *gx_hx__sched_policy(h))
		snprintf(live_entry[1], sizeof(live_entry[1]), "%s", entry);
	return 0;
}

static void live_names(char *names, size_t nn)
{
	snprintf(names, nn, "%s%s%s", hx ? gx_hx__mem_policy(hx) : "",
		 hx && *gx_hx__mem_policy(hx) && *gx_hx__sched_policy(hx) ? "," : "",
		 hx ? gx_hx__sched_policy(hx) : "");
}

/* A new live executor starts from zero: the figures of its summary, the
 * queues an earlier policy rejected, the device its model followed. */
static void counters_reset(void)
{
	nr_prefetch_calls = nr_advise_calls = nr_dev_requests = nr_dev_unmanaged = 0;
	nr_prefetch_bytes = exec_ns = api_ns = 0;
	nr_streams = nr_streams_prio = nr_streams_rejected = nr_attr_other = 0;
	nrejected = 0;
	model_dev = -1;
}

int gx_hostpolicy_live_attach(const char *const *entries, unsigned nr, char *names, size_t nn, char *err, size_t en)
{
	int ret = 0;
	pthread_mutex_lock(&hp_lock);
	if (via_kmod || (hx && !live_hp)) {
		snprintf(err, en, "%s", via_kmod ? "gpuext.ko runs this process's host policies"
						 : "host policies were attached at its start (GPUEXT_POLICY); they "
						   "cannot be changed while it runs");
		ret = -EBUSY;
		goto out;
	}
	bool fresh = !hx;
	struct gx_hx *h = hx;
	if (fresh) {
		struct gx_hx_opts o = make_opts();
		if (!(h = gx_hx__new(&o))) {
			snprintf(err, en, "cannot make the host policy executor");
			ret = -ENOMEM;
			goto out;
		}
		live_entry[0][0] = live_entry[1][0] = 0;
		counters_reset();
	}
	for (unsigned i = 0; i < nr && !ret; i++)
		if ((ret = live_load(h, entries[i])))
			snprintf(err, en, "%.300s: %s", entries[i],
				 ret == -EEXIST ? "a host policy of its kind (mem or sched) is attached already"
						: "refused by the host policy executor");
	if (ret && fresh) {
		gx_hx__free(h);
		goto out;
	}
	/* adding to a live set: what this request loaded before a failure
	 * stays (the executor cannot unload one); shim/live.c detaches it */
	hx = h;
	if (fresh) {
		live_hp = true;
		report_at_exit();
	}
	if (subscribe()) {
		snprintf(err, en, "no free event subscription");
		ret = -ENOSPC;
	}
	live_names(names, nn);
out:
	pthread_mutex_unlock(&hp_lock);
	return ret;
}

bool gx_hostpolicy_live_has(const char *name)
{
	pthread_mutex_lock(&hp_lock);
	bool yes = live_hp && hx && name && *name &&
		   (!strcmp(name, gx_hx__mem_policy(hx)) || !strcmp(name, gx_hx__sched_policy(hx)));
	pthread_mutex_unlock(&hp_lock);
	return yes;
}

void gx_hostpolicy_live_list(char *names, size_t nn)
{
	pthread_mutex_lock(&hp_lock);
	if (live_hp)
		live_names(names, nn);
	else
		names[0] = 0;
	pthread_mutex_unlock(&hp_lock);
}

int gx_hostpolicy_live_detach(const char *name, char *msg, size_t n)
{
	msg[0] = 0;
	pthread_mutex_lock(&hp_lock);
	if (!live_hp || !hx) {
		pthread_mutex_unlock(&hp_lock);
		return -ENOENT;
	}
	int keep = -1; /* the slot reloaded alone */
	int which = SUM_MEM | SUM_SCHED;
	if (name && *gx_hx__mem_policy(hx) && *gx_hx__sched_policy(hx)) {
		keep = !strcmp(name, gx_hx__mem_policy(hx)) ? 1 : !strcmp(name, gx_hx__sched_policy(hx)) ? 0 : -1;
		which = keep == 1 ? SUM_MEM : keep == 0 ? SUM_SCHED : which;
	} else if (!*gx_hx__mem_policy(hx)) {
		which = SUM_SCHED;
	}
	pthread_mutex_unlock(&hp_lock);
	/* no new event reaches the executor; one already inside waits on hp_lock */
	if (hp_sub >= 0)
		gx_events_unsubscribe(hp_sub);
	hp_sub = -1;
	pthread_mutex_lock(&hp_lock);
	summary(msg, n, which);
	for (char *p = msg; *p; p++)
		if (*p == '\n')
			*p = ';';
	gx_hx__free(hx);
	hx = NULL;
	live_hp = false;
	char entry[4200] = "";
	if (keep >= 0)
		snprintf(entry, sizeof(entry), "%s", live_entry[keep]);
	pthread_mutex_unlock(&hp_lock);
	if (entry[0]) {
		const char *e = entry;
		char names[200], err[400];
		if (gx_hostpolicy_live_attach(&e, 1, names, sizeof(names), err, sizeof(err)))
			pr_warn("hostpolicy: reloading %s after the detach of %s failed: %s", entry, name, err);
	}
	return 0;
}

/* For the stats file (stats.c), from a background thread: hp_lock only if
 * free (an allocation in progress keeps it), else the last figures. */
void gx_hostpolicy_stats(struct gx_stats_file *f)
{
	static struct gx_stats_file last;
	if (!pthread_mutex_trylock(&hp_lock)) {
		if (hx) {
			struct gx_hx_stats st;
			gx_hx__stats(hx, &st);
			last.nr_host_policies = (*gx_hx__mem_policy(hx) != 0) + (*gx_hx__sched_policy(hx) != 0);
			last.policies_disabled = *gx_hx__mem_policy(hx) && !gx_hx__mem_enabled(hx);
			last.prefetch_calls = nr_prefetch_calls;
			last.prefetch_bytes = nr_prefetch_bytes;
			last.evictions = st.evictions;
			last.device_prefetch_requests = nr_dev_requests;
		}
		pthread_mutex_unlock(&hp_lock);
	}
	f->nr_host_policies = last.nr_host_policies;
	f->policies_disabled = last.policies_disabled;
	f->prefetch_calls = last.prefetch_calls;
	f->prefetch_bytes = last.prefetch_bytes;
	f->evictions = last.evictions;
	f->device_prefetch_requests = last.device_prefetch_requests;
}
