/* events.c — subscriber registry and dispatch for gx_events.h.
 *
 * Subscribers live in a fixed array written under a lock and read without
 * one: each slot's fields are published with atomic stores, so dispatch on
 * the launch path never blocks. gx_ev_mask (a union of all subscribed kinds)
 * is the only thing the fast paths read. */
#include <errno.h>
#include <string.h>

#include "common/gx_tls.h"
#include "shim/shim_internal.h"
#include "shim/shim_ev_internal.h"

#define MAX_SUBS 32 /* one bit each in launch.done_for */

struct sub {
	unsigned mask; /* GX_EV_MASK bits | GX_EV_F_DONE_ASKED; 0: free */
	gx_event_fn fn;
	void *cookie;
};

unsigned gx_ev_mask;
/* GX_EV_LAUNCH_DONE subscribed with GX_EV_F_DONE_ASKED: in neither the
 * fast-path mask nor gx_ev_on(GX_EV_LAUNCH_DONE), which then mean "after
 * every launch"; such a subscriber also takes GX_EV_LAUNCH, where it asks. */
static unsigned ev_asked_mask;
static struct sub subs[MAX_SUBS];
static int subs_end; /* slots at and past it were never used: dispatch stops there */
static pthread_mutex_t subs_lock = PTHREAD_MUTEX_INITIALIZER;

/* The device of the last context this thread raised an event for. Asking the
 * driver (cuCtxGetCurrent, then cuCtxGetDevice) on every launch cost more
 * than delivering the event. A context's device never changes, but its
 * address may be reused by a later context of another device: the cache is
 * good while ctx_gen is unchanged, and every creation or destruction of a
 * context that the shim sees bumps it (gx_ev_ctx_changed). */
static unsigned long ctx_gen;
/* This thread's state, one TLS block, initial-exec (gx_tls.h: one load per
 * access instead of a __tls_get_addr call; an event touched it seven times). */
static __thread struct ev_tls {
	int in_event;
	CUdevice dev;  /* the cache: ctx's device, good while gen == ctx_gen */
	CUcontext ctx;
	unsigned long gen;
} ev_tls GX_TLS_IE;

void gx_ev_ctx_changed(void)
{
	__atomic_fetch_add(&ctx_gen, 1, __ATOMIC_ACQ_REL);
}

static void recompute_mask(void)
{
	unsigned m = 0, asked = 0;
	for (int i = 0; i < MAX_SUBS; i++) {
		unsigned s = __atomic_load_n(&subs[i].mask, __ATOMIC_RELAXED);
		if (s & GX_EV_F_DONE_ASKED) {
			asked |= s & GX_EV_MASK(GX_EV_LAUNCH_DONE);
			s &= ~GX_EV_MASK(GX_EV_LAUNCH_DONE);
		}
		m |= s & GX_EV_ALL;
	}
	__atomic_store_n(&ev_asked_mask, asked, __ATOMIC_RELAXED);
	__atomic_store_n(&gx_ev_mask, m, __ATOMIC_RELEASE);
}

GX_EXPORT int gx_events_subscribe(unsigned mask, gx_event_fn fn, void *cookie)
{
	const unsigned launch_both = GX_EV_MASK(GX_EV_LAUNCH) | GX_EV_MASK(GX_EV_LAUNCH_DONE);
	if (!fn || !(mask & GX_EV_ALL) || (mask & ~(GX_EV_ALL | GX_EV_F_DONE_ASKED)))
		return gx_err(-EINVAL);
	/* asking happens in a launch callback: the flag needs both kinds */
	if ((mask & GX_EV_F_DONE_ASKED) && (mask & launch_both) != launch_both)
		return gx_err(-EINVAL);
	gx_config_load();
	if (gx_config.disabled) {
		pr_info("event subscription refused: GPUEXT_DISABLE is set");
		return gx_err(-ENODEV);
	}
	pthread_mutex_lock(&subs_lock);
	int id = -ENOSPC;
	for (int i = 0; i < MAX_SUBS; i++) {
		if (subs[i].mask)
			continue;
		__atomic_store_n(&subs[i].fn, fn, __ATOMIC_RELAXED);
		__atomic_store_n(&subs[i].cookie, cookie, __ATOMIC_RELAXED);
		__atomic_store_n(&subs[i].mask, mask, __ATOMIC_RELEASE);
		if (i >= subs_end)
			__atomic_store_n(&subs_end, i + 1, __ATOMIC_RELEASE);
		id = i;
		break;
	}
	if (id >= 0)
		recompute_mask();
	pthread_mutex_unlock(&subs_lock);
	return gx_err(id);
}

GX_EXPORT int gx_events_unsubscribe(int id)
{
	if (id < 0 || id >= MAX_SUBS)
		return gx_err(-ENOENT);
	pthread_mutex_lock(&subs_lock);
	int ret = subs[id].mask ? 0 : -ENOENT;
	__atomic_store_n(&subs[id].mask, 0, __ATOMIC_RELEASE);
	recompute_mask();
	pthread_mutex_unlock(&subs_lock);
	return gx_err(ret);
}

GX_EXPORT unsigned gx_events_active(void)
{
	return __atomic_load_n(&gx_ev_mask, __ATOMIC_ACQUIRE) | __atomic_load_n(&ev_asked_mask, __ATOMIC_RELAXED);
}

bool gx_ev_nested(void)
{
	return ev_tls.in_event != 0;
}

CUresult gx_ev_raise(struct gx_event *ev)
{
	struct ev_tls *t = &ev_tls;
	if (t->in_event)
		return CUDA_SUCCESS;
	if (ev->sz == sizeof(*ev)) /* raised before (a launch, then its LAUNCH_DONE): ctx and dev known */
		goto deliver;
	ev->sz = sizeof(*ev);
	if (!ev->ctx) {
		CUcontext c = NULL;
		if (REAL(cuCtxGetCurrent)(&c) == CUDA_SUCCESS)
			ev->ctx = c;
	}
	ev->dev = -1;
	/* read before asking the driver: a change meanwhile makes this stale */
	unsigned long gen = __atomic_load_n(&ctx_gen, __ATOMIC_ACQUIRE);
	if (ev->ctx && t->ctx == ev->ctx && t->gen == gen) {
		ev->dev = t->dev;
	} else if (ev->ctx) {
		/* The device of the event's context, which need not be the current
		 * one (a primary context retained for another GPU, a context
		 * destroyed from elsewhere). */
		CUdevice d = -1;
		CUcontext cur = NULL, popped;
		if (REAL(cuCtxGetCurrent)(&cur) == CUDA_SUCCESS && cur == ev->ctx) {
			if (REAL(cuCtxGetDevice)(&d) != CUDA_SUCCESS)
				d = -1;
		} else if (REAL(cuCtxGetDevice_v2)(&d, ev->ctx) != CUDA_SUCCESS) {
			d = -1; /* a driver before 12.8: ask with the context pushed */
			if (REAL(cuCtxPushCurrent_v2)(ev->ctx) == CUDA_SUCCESS) {
				if (REAL(cuCtxGetDevice)(&d) != CUDA_SUCCESS)
					d = -1;
				REAL(cuCtxPopCurrent_v2)(&popped);
			}
		}
		ev->dev = d;
		if (d >= 0) {
			t->ctx = ev->ctx;
			t->dev = d;
			t->gen = gen;
		}
	}
deliver:;
	CUresult ret = CUDA_SUCCESS;
	unsigned bit = 1u << ev->kind;
	t->in_event = 1;
	int end = __atomic_load_n(&subs_end, __ATOMIC_ACQUIRE);
	for (int i = 0; i < end; i++) {
		unsigned m = __atomic_load_n(&subs[i].mask, __ATOMIC_ACQUIRE);
		if (!(m & bit))
			continue;
		if ((m & GX_EV_F_DONE_ASKED) && ev->kind == GX_EV_LAUNCH_DONE && !(ev->launch.done_for & (1u << i)))
			continue; /* not a launch this subscriber asked about */
		gx_event_fn fn = __atomic_load_n(&subs[i].fn, __ATOMIC_RELAXED);
		void *cookie = __atomic_load_n(&subs[i].cookie, __ATOMIC_RELAXED);
		CUresult r = fn(ev, cookie);
		if (r != CUDA_SUCCESS && ret == CUDA_SUCCESS)
			ret = r;
	}
	t->in_event = 0;
	return ret;
}

__attribute__((constructor)) static void events_init(void)
{
	gx_lock_register(&subs_lock, GX_LOCK_EVENTS);
}
