/* tenant_done.c — when did a tenant's launch complete, without
 * synchronising the application's streams: after each tracked launch a
 * CUDA event (timing off, from a per-context pool) is recorded on the
 * launch's stream, and one background thread per process queries the oldest
 * event of each stream until it reports done. Nothing waits on the
 * application's work; the stream only gains an event record.
 *
 * Why polling, not cuLaunchHostFunc: a host function is a stream
 * dependency — the next kernel of the stream cannot start until our
 * callback ran — so it would put bubbles into exactly the BE streams we
 * want busy. Polling costs this thread's time: every GPUEXT_TENANT_POLL_US
 * (LC tenants 5 µs, BE 20 µs by default) while launches are in flight,
 * asleep otherwise. The thread also keeps the tenant table's lease (a
 * heartbeat every 10 ms) and reaps dead tenants.
 *
 * Context destruction takes the poll lock, so no query runs on an event the
 * driver is destroying; the pending launches of that context count as
 * complete (the destruction waited for them). A query failure counts as a
 * completion too: a tenant's in-flight count never sticks. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "common/gx_capture.h"
#include "shim/stats_internal.h"
#include "shim/tenancy_internal.h"

#define NSTREAMS 64   /* streams with launches in flight at once */
#define DEPTH 1024    /* tracked launches in flight per stream */
#define NPOOLS 16     /* contexts */
#define POOL 2048     /* idle events kept per context */

struct pend {
	CUevent ev;
	uint64_t launch_ns;
	struct gx_tn *tn;
};
struct sq {
	CUstream s;
	CUcontext ctx;
	uint32_t head, n; /* ring of DEPTH */
	struct pend *ring;
};
static struct sq sqs[NSTREAMS];
static struct {
	CUcontext ctx;
	CUevent *ev;
	int n;
} pools[NPOOLS];
static struct gx_tn *tns[GX_TENANCY_MAX_DEVS];
static int ntns;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;      /* the queues and pools */
static pthread_mutex_t poll_mu = PTHREAD_MUTEX_INITIALIZER; /* a query round */
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static pthread_t thread;
static int started, stopping;
static uint64_t poll_override; /* GPUEXT_TENANT_POLL_US, 0: by class */
static uint64_t capture_ns; /* the last launch seen into a capturing stream */
static unsigned long nr_errors;

static CUevent pool_get(CUcontext ctx)
{
	int fr = -1;
	for (int i = 0; i < NPOOLS; i++) {
		if (pools[i].ctx == ctx) {
			if (pools[i].n)
				return pools[i].ev[--pools[i].n];
			fr = -2;
			break;
		}
		if (!pools[i].ctx && fr == -1)
			fr = i;
	}
	if (fr >= 0) {
		pools[fr].ev = calloc(POOL, sizeof(CUevent));
		if (pools[fr].ev)
			pools[fr].ctx = ctx;
	}
	CUevent e = NULL;
	if (REAL(cuEventCreate)(&e, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
		return NULL;
	return e;
}

static void pool_put(CUcontext ctx, CUevent e)
{
	for (int i = 0; i < NPOOLS; i++)
		if (pools[i].ctx == ctx && pools[i].n < POOL) {
			pools[i].ev[pools[i].n++] = e;
			return;
		}
	REAL(cuEventDestroy_v2)(e);
}

static void *poller(void *arg);

int gx_tenancy_track_launch(CUcontext ctx, CUstream s, struct gx_tn *tn, uint64_t now)
{
	pthread_mutex_lock(&mu);
	int q = -1, fr = -1;
	for (int i = 0; i < NSTREAMS && q < 0; i++) {
		if (sqs[i].n && sqs[i].s == s && sqs[i].ctx == ctx)
			q = i;
		else if (!sqs[i].n && fr < 0)
			fr = i;
	}
	if (q < 0 && fr >= 0 && (sqs[fr].ring || (sqs[fr].ring = calloc(DEPTH, sizeof(struct pend))))) {
		q = fr;
		sqs[q].s = s;
		sqs[q].ctx = ctx;
		sqs[q].head = 0;
	}
	int err = q < 0 || sqs[q].n == DEPTH ? -ENOSPC : 0;
	CUevent e = err ? NULL : pool_get(ctx);
	if (!err && (!e || REAL(cuEventRecord)(e, s) != CUDA_SUCCESS)) {
		if (e)
			REAL(cuEventDestroy_v2)(e);
		err = -EIO;
	}
	if (!err) {
		struct sq *x = &sqs[q];
		x->ring[(x->head + x->n) % DEPTH] = (struct pend){e, now, tn};
		x->n++;
		pthread_cond_signal(&wake);
	}
	pthread_mutex_unlock(&mu);
	return err;
}

/* One round: the oldest pending event of every stream, queried without
 * holding mu (a launch may enqueue meanwhile; only this thread pops). */
static int poll_round(int *popped)
{
	struct { int q; struct pend p; CUcontext ctx; } h[NSTREAMS];
	int nh = 0, left = 0;
	pthread_mutex_lock(&poll_mu);
	pthread_mutex_lock(&mu);
	for (int i = 0; i < NSTREAMS; i++)
		if (sqs[i].n)
			h[nh++] = (__typeof__(h[0])){i, sqs[i].ring[sqs[i].head], sqs[i].ctx};
	pthread_mutex_unlock(&mu);
	CUcontext cur = NULL;
	for (int i = 0; i < nh; i++) {
		if (h[i].ctx != cur && REAL(cuCtxSetCurrent)(h[i].ctx) == CUDA_SUCCESS)
			cur = h[i].ctx;
		CUresult rc = REAL(cuEventQuery)(h[i].p.ev);
		if (rc == CUDA_ERROR_NOT_READY) {
			left++;
			h[i].q = -1;
			continue;
		}
		if (rc != CUDA_SUCCESS && !nr_errors++)
			pr_info("tenant: cuEventQuery: %d; the launch counts as complete", (int)rc);
		uint64_t done = gx_tenancy_now();
		gx_tn_completed(h[i].p.tn, h[i].p.launch_ns, done);
		gx_stats_latency(done - h[i].p.launch_ns);
		pthread_mutex_lock(&mu);
		struct sq *x = &sqs[h[i].q];
		if (x->n && x->ring[x->head].ev == h[i].p.ev) {
			x->head = (x->head + 1) % DEPTH;
			x->n--;
			left += x->n > 0;
		}
		pool_put(h[i].ctx, h[i].p.ev);
		pthread_mutex_unlock(&mu);
		if (popped)
			++*popped;
	}
	pthread_mutex_unlock(&poll_mu);
	return left;
}

/* 5 µs while this process is an LC tenant anywhere (its completions end
 * BE holds elsewhere, and feed its latency figures), else 20 µs; classes
 * change at run time. */
static uint64_t interval(void)
{
	if (poll_override)
		return poll_override;
	for (int i = 0; i < ntns; i++)
		if (gx_tn_class(tns[i]) == GPU_CLASS_LC)
			return 5000;
	return 20000;
}

void gx_tenancy_capturing(void)
{
	__atomic_store_n(&capture_ns, gx_tenancy_now(), __ATOMIC_RELAXED);
}

static void *poller(void *arg)
{
	(void)arg;
	prctl(PR_SET_TIMERSLACK, 1000ul); /* sleeps of a few µs, not the default 50 */
	/* its queries never invalidate an application's capture (common/gx_capture.h) */
	gx_capture_relax(REAL(cuThreadExchangeStreamCaptureMode));
	uint64_t last_tick = 0;
	while (!__atomic_load_n(&stopping, __ATOMIC_ACQUIRE)) {
		uint64_t now = gx_tenancy_now(), cap = __atomic_load_n(&capture_ns, __ATOMIC_RELAXED);
		/* Capturing lately: no queries for 100 ms after it (pending
		 * launches stay in flight meanwhile; the lease goes on). */
		int busy = cap && now - cap < 100000000ull ? 1 : poll_round(NULL);
		now = gx_tenancy_now();
		if (now - last_tick >= 10000000ull) {
			last_tick = now;
			for (int i = 0; i < ntns; i++)
				gx_tn_tick(tns[i], now);
			gx_stats_tick(); /* at most once per GPUEXT_STATS_MS */
		}
		pthread_mutex_lock(&mu);
		int any = 0;
		for (int i = 0; i < NSTREAMS && !any; i++)
			any = sqs[i].n != 0;
		if (!any && !stopping) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 10000000; /* the heartbeat */
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&wake, &mu, &ts);
		}
		pthread_mutex_unlock(&mu);
		if (any || busy) {
			struct timespec d = {0, (long)interval()};
			nanosleep(&d, NULL);
		}
	}
	return NULL;
}

int gx_tenancy_poller_start(struct gx_tn *tn, uint64_t interval_ns)
{
	pthread_mutex_lock(&mu);
	poll_override = interval_ns;
	int err = 0;
	if (!started) {
		pthread_attr_t a;
		pthread_attr_init(&a);
		pthread_attr_setstacksize(&a, 256 << 10);
		err = -pthread_create(&thread, &a, poller, NULL);
		pthread_attr_destroy(&a);
		started = !err;
	}
	if (!err && ntns < GX_TENANCY_MAX_DEVS)
		tns[ntns++] = tn;
	pthread_mutex_unlock(&mu);
	return err;
}


void gx_tenancy_ctx_gone(CUcontext ctx)
{
	pthread_mutex_lock(&poll_mu);
	pthread_mutex_lock(&mu);
	uint64_t now = gx_tenancy_now();
	for (int i = 0; i < NSTREAMS; i++) {
		struct sq *x = &sqs[i];
		while (x->n && x->ctx == ctx) {
			struct pend *p = &x->ring[x->head];
			gx_tn_completed(p->tn, p->launch_ns, now);
			REAL(cuEventDestroy_v2)(p->ev);
			x->head = (x->head + 1) % DEPTH;
			x->n--;
		}
	}
	for (int i = 0; i < NPOOLS; i++)
		if (pools[i].ctx == ctx) {
			for (int j = 0; j < pools[i].n; j++)
				REAL(cuEventDestroy_v2)(pools[i].ev[j]);
			free(pools[i].ev);
			memset(&pools[i], 0, sizeof(pools[i]));
		}
	pthread_mutex_unlock(&mu);
	pthread_mutex_unlock(&poll_mu);
}

void gx_tenancy_poller_stop(void)
{
	pthread_mutex_lock(&mu);
	int was = started;
	__atomic_store_n(&stopping, 1, __ATOMIC_RELEASE);
	pthread_cond_signal(&wake);
	pthread_mutex_unlock(&mu);
	if (was) {
		pthread_join(thread, NULL);
		/* What completed since its last look: a round pops one launch per
		 * stream, so go on while rounds make progress (an application
		 * that synchronized before exit has all of them complete). */
		for (int popped = 1; popped;) {
			popped = 0;
			if (!poll_round(&popped))
				break;
		}
	}
	started = 0;
}

/* In a forked child (the fork handlers released our locks): no thread, and
 * nothing of the parent's to track. */
void gx_tenancy_poller_forget(void)
{
	started = 0;
	ntns = 0;
	memset(sqs, 0, sizeof(sqs));
	memset(pools, 0, sizeof(pools));
}

__attribute__((constructor)) static void done_init(void)
{
	gx_lock_register(&poll_mu, GX_LOCK_TENANT);
	gx_lock_register(&mu, GX_LOCK_TENANT + 1);
}

int gx_tenancy_stats(struct gx_stats_file *f)
{
	pthread_mutex_lock(&mu);
	struct gx_tn *tn = ntns ? tns[0] : NULL;
	pthread_mutex_unlock(&mu);
	if (!tn)
		return -ENOENT;
	struct gx_tn_info in;
	gx_tn_self(tn, &in);
	snprintf(f->tenant, sizeof(f->tenant), "%s", in.name);
	f->tenant_cls = (uint32_t)in.cls;
	f->held = in.held;
	f->held_ns = in.throttled_ns;
	f->completions = in.completions;
	gx_tn_self_usage(tn, &f->tenant_mem_used, &f->tenant_mem_hiwater, &f->tenant_gpu_ns);
	return 0;
}
