/* site_defer_internal.h — the loops of a function whose memory sites keep
 * their sample for later (site_defer.c; site.c builds the sites and the
 * flushes). */
#ifndef PTX_SITE_DEFER_H
#define PTX_SITE_DEFER_H

#include <stdbool.h>

#include "ptx-rewrite/stmt_graph_internal.h"

struct ptx_defer {
	struct ptx_graph g;
	unsigned char *in_loop;	   /* per node: in a loop every way out of which is a flush point */
	struct ptx_stmt **by_addr; /* the in-loop instructions, sorted by address */
	size_t nr_in;
	struct ptx_defer_exit {
		struct ptx_stmt *at;
		bool after; /* after the label at (else before at) */
	} *exits;	    /* where a loop is left and before each ret or exit: each gets a flush */
	size_t nr_exits;
	/* set by the first deferred site (site.c) */
	const char *func;	/* its handler: every deferred site of the function calls it */
	unsigned long long kid; /* the function's kernel id */
	unsigned every;		/* its sample (1 in every): the countdown a flush makes the warp's again */
	unsigned nr_sites;
	/* the samples kept, by every lane that made the access: dbuf (.local)
	 * holds up to PTX_DEFER_SLOTS of {address .b64, stamp .b32, info
	 * .b32}, dpn of them, the next to hand over at index fi; a flush reads
	 * it into pa, pl, pi for the call (pl then becomes the lanes holding
	 * the stamp; dq, dr: scratch predicates); dd: the samples the lane took
	 * with its slots full, reported by the flush as one GDEV_MEM_LOST call */
	const char *dbuf, *pn, *fi, *pa, *pl, *pi, *dq, *dr, *dd;
};

/* The samples a lane keeps between two flush points (16 bytes each): a
 * loop pass that samples more counts the rest as lost (dd). At 1 in 1024
 * that is a warp making more than ~8,000 accesses in one pass of a loop. */
#define PTX_DEFER_SLOTS 8u

/* fn's loops (a branch back to an earlier label spans one) into d: 0,
 * -ENOMEM. A function with a branch the graph does not follow has none; a
 * loop with a ret or exit inside has none of its nodes in_loop. The flush
 * points: where a loop is left (after the label there, or before it when
 * it heads a loop itself: no call in that loop's body), and before every
 * ret and exit, so that no sample is ever left pending. */
int ptx_defer_scan(struct ptx_func *fn, struct ptx_defer *d);
void ptx_defer_free(struct ptx_defer *d);
/* Is instruction s of the scanned function in such a loop? */
bool ptx_defer_in_loop(const struct ptx_defer *d, const struct ptx_stmt *s);

#endif
