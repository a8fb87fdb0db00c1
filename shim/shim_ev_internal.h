/* shim_ev_internal.h — the shim's side of gx_events.h: the fast-path test and the
 * dispatcher. */
#ifndef SHIM_EV_INTERNAL_H
#define SHIM_EV_INTERNAL_H

#include "shim/shim_internal.h" /* first: the internal cuda.h view */
#include "gpuext/gx_events.h"

extern unsigned gx_ev_mask; /* kinds with at least one subscriber */

/* Is anybody listening for `kind`? One relaxed load: the launch fast path. */
static inline bool gx_ev_on(enum gx_event_kind kind)
{
	return __builtin_expect(__atomic_load_n(&gx_ev_mask, __ATOMIC_RELAXED) & (1u << kind), 0);
}

/* Fill ctx/dev if unset and run the subscribers; returns the first veto. */
CUresult gx_ev_raise(struct gx_event *ev);
/* True inside a callback (nested driver calls raise no events). */
bool gx_ev_nested(void);
/* A context was created or destroyed: forget the cached context -> device
 * of every thread (events.c). */
void gx_ev_ctx_changed(void);

#endif
