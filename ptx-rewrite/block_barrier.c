/* block_barrier.c — where a block handler costs a barrier kernel least
 * (issue 40): before the kernel's first barrier that every thread passes
 * once, rather than at the entry or the exits.
 *
 * Why: a block probe runs on one warp per block. At the entry it delays
 * that warp's first loads; at the exits it lengthens the block's last
 * instructions; in a short block of one barrier either is on the block's
 * critical path (CuPy's shared-memory stencil +17.8 % at its exit, +19.4 %
 * at its entry, GPU run 90). Before the barrier, a warp that arrives early
 * waits anyway: a probe run there by a warp that is not the block's last to
 * arrive costs the block nothing. Which warp that is, the handler decides
 * (threadhist_w1 counts with warp 1: warp 0's thread 0 is the one that does
 * a block's odd jobs). Counting there is exact only when every thread
 * passes the barrier exactly once, which this file checks on the kernel's
 * statement graph: the barrier cuts every path from the entry to a way out,
 * and lies on no cycle. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/gx_util.h"
#include "ptx-rewrite/block_barrier_internal.h"
#include "ptx-rewrite/stmt_graph_internal.h"

static bool is_cta_barrier(const struct ptx_stmt *s)
{
	if (s->kind != PTX_STMT_INSN || s->insn.guard || s->insn.nops != 1)
		return false;
	const struct ptx_insn *in = &s->insn;
	bool bar = !strcmp(in->opcode, "bar") && (!in->nmods || ptx_insn_has_mod(in, ".sync")) &&
		   !ptx_insn_has_mod(in, ".warp");
	bool barrier = !strcmp(in->opcode, "barrier") && ptx_insn_has_mod(in, ".sync");
	return bar || barrier;
}

/* Walk the graph without going past node `cut`. !to_cut: from `from`, 1 if
 * a way out of the kernel is reached. to_cut: from from's successors, 1 if
 * `cut` is reached. 0 if not, -1 on a statement the walk does not follow. */
static int reaches(const struct ptx_graph *g, size_t from, size_t cut, bool to_cut, unsigned char *seen, long *stack)
{
	size_t sp = 0;
	memset(seen, 0, g->n);
	long first[2];
	int k = 1;
	first[0] = (long)from;
	if (to_cut && (k = ptx_graph_succ(g, from, first)) < 0)
		return -1;
	for (int j = 0; j < k; j++) {
		if (first[j] == PTX_GRAPH_OUT)
			return !to_cut;
		if (!seen[first[j]])
			seen[first[j]] = 1, stack[sp++] = first[j];
	}
	while (sp) {
		size_t i = (size_t)stack[--sp];
		if (i == cut) {
			if (to_cut)
				return 1;
			continue;
		}
		long nx[2];
		int c = ptx_graph_succ(g, i, nx);
		if (c < 0)
			return -1;
		for (int j = 0; j < c; j++) {
			if (nx[j] == PTX_GRAPH_OUT) {
				if (!to_cut)
					return 1;
				continue;
			}
			if (!seen[nx[j]])
				seen[nx[j]] = 1, stack[sp++] = nx[j];
		}
	}
	return 0;
}

struct ptx_stmt *ptx_once_barrier(struct ptx_func *fn, int *err)
{
	struct ptx_graph g;
	*err = ptx_graph_build(fn, &g);
	if (*err || !g.n)
		return NULL;
	unsigned char *seen = malloc(g.n);
	long *stack = malloc(g.n * sizeof(*stack));
	struct ptx_stmt *found = NULL;
	if (!seen || !stack) {
		*err = gx_err(-ENOMEM);
		goto out;
	}
	for (size_t i = 0, tried = 0; i < g.n && tried < 8 && !found; i++) {
		if (!is_cta_barrier(g.s[i]))
			continue;
		tried++;
		int leaves = reaches(&g, 0, i, false, seen, stack);
		if (leaves < 0)
			break;
		if (leaves)
			continue; /* some thread gets out without it */
		int loops = reaches(&g, i, i, true, seen, stack);
		if (loops < 0)
			break;
		if (!loops)
			found = g.s[i];
	}
out:
	ptx_graph_free(&g);
	free(seen);
	free(stack);
	return found;
}
