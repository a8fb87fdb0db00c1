/* site_defer.c — which memory sites of a function sit in loops, and where
 * those loops are left (issue 40: memtrace on the cooperative sample).
 *
 * Why: a sampled memory site's gate (site_sample.c) is a countdown, a vote
 * and a uniform branch to the handler's call. In a short loop body — a
 * grid-stride loop of one load — that branch to a call is the loop's
 * cost, not the sample: the cooperative sample's kernel ran 2.2-2.3x under
 * memtrace (GPU run 125), uncapped as well as at the original's registers,
 * and tests/gpu/coop/gate_ab.cu times the gate's parts. A site in a loop
 * keeps its sample instead, in a per-thread buffer of PTX_DEFER_SLOTS
 * (address, lanes, info: what memtrace's record needs beside the block and
 * SM, the same later), and the handler is called for each where the loop
 * is left: the loop body keeps a countdown, a vote and a uniform branch
 * over a few stores, no call. The record's time is the call's.
 *
 * Loops: a branch back to a label at or before it (in text order) spans
 * the statements between; the ways out of a span are its nodes' successors
 * outside it. A span with a ret or exit inside has no flush point there:
 * its sites keep the plain gate. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/gx_util.h"
#include "ptx-rewrite/site_defer_internal.h"

static int by_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(struct ptx_stmt *const *)a, y = (uintptr_t)*(struct ptx_stmt *const *)b;
	return x < y ? -1 : x > y;
}

/* Does span [t, i] leave the function? */
static bool span_leaves(const struct ptx_graph *g, size_t t, size_t i)
{
	for (size_t k = t; k <= i; k++) {
		long nx[2];
		int c = ptx_graph_succ(g, k, nx);
		for (int j = 0; j < c; j++)
			if (nx[j] == PTX_GRAPH_OUT)
				return true;
	}
	return false;
}

/* Mark the ways out of span [t, i] (nodes outside it that its nodes lead to). */
static void span_exits(const struct ptx_graph *g, size_t t, size_t i, unsigned char *exit)
{
	for (size_t k = t; k <= i; k++) {
		long nx[2];
		int c = ptx_graph_succ(g, k, nx);
		for (int j = 0; j < c; j++)
			if (nx[j] >= 0 && ((size_t)nx[j] < t || (size_t)nx[j] > i))
				exit[nx[j]] = 1;
	}
}

int ptx_defer_scan(struct ptx_func *fn, struct ptx_defer *d)
{
	*d = (struct ptx_defer){ 0 };
	int err = ptx_graph_build(fn, &d->g);
	if (err || !d->g.n)
		return err;
	const struct ptx_graph *g = &d->g;
	size_t n = g->n;
	d->in_loop = calloc(n, 1);
	d->exits = calloc(n, sizeof(*d->exits));
	unsigned char *bad = calloc(n, 1), *exit = calloc(n, 1), *head = calloc(n, 1);
	if (!d->in_loop || !d->exits || !bad || !exit || !head) {
		err = gx_err(-ENOMEM);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		long nx[2];
		/* brx or an unknown label: no loops followed. A trap ends the
		 * kernel (no successor here: a sample pending then is moot). */
		const struct ptx_stmt *s = g->s[i];
		bool trap = s->kind == PTX_STMT_INSN && !strcmp(s->insn.opcode, "trap");
		if (!trap && ptx_graph_succ(g, i, nx) < 0)
			goto out;
	}
	for (size_t i = 0; i < n; i++) {
		long nx[2];
		int c = ptx_graph_succ(g, i, nx);
		for (int j = 0; j < c; j++) {
			if (nx[j] < 0 || (size_t)nx[j] > i)
				continue;
			size_t t = (size_t)nx[j];
			head[t] = 1;
			bool leaves = span_leaves(g, t, i);
			if (!leaves)
				span_exits(g, t, i, exit);
			for (size_t k = t; k <= i; k++)
				leaves ? (void)(bad[k] = 1) : (void)(d->in_loop[k] = 1);
		}
	}
	for (size_t k = 0; k < n; k++) {
		if (bad[k])
			d->in_loop[k] = 0;
		d->nr_in += d->in_loop[k] && g->s[k]->kind == PTX_STMT_INSN;
	}
	if (!d->nr_in)
		goto out;
	for (size_t k = 0; k < n; k++) {
		const struct ptx_stmt *s = g->s[k];
		bool leave =
			s->kind == PTX_STMT_INSN && (!strcmp(s->insn.opcode, "ret") || !strcmp(s->insn.opcode, "exit"));
		if (exit[k] || leave)
			d->exits[d->nr_exits++] =
				(struct ptx_defer_exit){ g->s[k],
							 exit[k] && !leave && s->kind == PTX_STMT_LABEL && !head[k] };
	}
	if (!(d->by_addr = calloc(d->nr_in, sizeof(*d->by_addr)))) {
		err = gx_err(-ENOMEM);
		goto out;
	}
	for (size_t k = 0, j = 0; k < n; k++)
		if (d->in_loop[k] && g->s[k]->kind == PTX_STMT_INSN)
			d->by_addr[j++] = g->s[k];
	qsort(d->by_addr, d->nr_in, sizeof(*d->by_addr), by_ptr);
out:
	free(bad);
	free(exit);
	free(head);
	if (err)
		ptx_defer_free(d);
	else if (!d->by_addr)
		d->nr_in = d->nr_exits = 0; /* nothing deferred */
	return err;
}

void ptx_defer_free(struct ptx_defer *d)
{
	ptx_graph_free(&d->g);
	free(d->in_loop);
	free(d->by_addr);
	free(d->exits);
	*d = (struct ptx_defer){ 0 };
}

bool ptx_defer_in_loop(const struct ptx_defer *d, const struct ptx_stmt *s)
{
	return d->nr_in && bsearch(&s, d->by_addr, d->nr_in, sizeof(*d->by_addr), by_ptr);
}
