/* cfg_pdom.c — immediate post-dominators (cfg_pdom_internal.h says what for).
 *
 * Post-dominators are the dominators of the reversed graph rooted at a
 * virtual exit node X = n that every leaving node points to. The reversed
 * graph's successors of v are v's forward predecessors (a CSR list built
 * here); its predecessors are v's forward successors. Nodes are numbered in
 * postorder of a DFS from X, then idom is refined in reverse postorder until
 * nothing changes (Cooper, Harvey, Kennedy: "A Simple, Fast Dominance
 * Algorithm"). */
#include "ptx-rewrite/cfg_pdom_internal.h"

#include <errno.h>
#include <stdlib.h>

static long meet(const long *idom, const long *po, long a, long b)
{
	while (a != b) {
		while (po[a] < po[b])
			a = idom[a];
		while (po[b] < po[a])
			b = idom[b];
	}
	return a;
}

int ptx_cfg_ipdom(const void *g, size_t n, ptx_succ_fn succ, long *ipdom)
{
	size_t N = n + 1, X = n;
	long *cnt = calloc(N + 1, sizeof(long)), *pred = calloc(2 * n + 1, sizeof(long));
	long *po = malloc(N * sizeof(long)), *order = malloc(N * sizeof(long));
	long *stack = malloc(N * sizeof(long)), *edge = calloc(N, sizeof(long));
	long *idom = malloc(N * sizeof(long));
	int rc = -ENOMEM;
	if (!cnt || !pred || !po || !order || !stack || !edge || !idom)
		goto out;
	/* forward predecessors, CSR: pred[cnt[v] .. cnt[v+1]) */
	long sv[2];
	for (size_t i = 0; i < n; i++) {
		int k = succ(g, i, sv);
		for (int t = 0; t < k; t++)
			cnt[sv[t] + 1]++;
	}
	for (size_t v = 0; v < N; v++)
		cnt[v + 1] += cnt[v];
	long *fill = edge; /* reused as the fill cursor, cleared after */
	for (size_t i = 0; i < n; i++) {
		int k = succ(g, i, sv);
		for (int t = 0; t < k; t++)
			pred[cnt[sv[t]] + fill[sv[t]]++] = (long)i;
	}
	for (size_t v = 0; v < N; v++)
		edge[v] = 0, po[v] = -1, idom[v] = -1;
	/* postorder DFS from X over reversed edges; X's are the leaving nodes,
	 * walked by scanning (edge[X] is the next node to look at) */
	size_t sp = 0, np = 0;
	stack[sp++] = (long)X;
	po[X] = -2; /* on the stack */
	while (sp) {
		long v = stack[sp - 1], next = -1;
		if ((size_t)v == X) {
			while (edge[X] < (long)n && next < 0) {
				long c = edge[X]++;
				if (po[c] == -1 && !succ(g, (size_t)c, sv))
					next = c;
			}
		} else {
			while (edge[v] < cnt[v + 1] - cnt[v] && next < 0) {
				long c = pred[cnt[v] + edge[v]++];
				if (po[c] == -1)
					next = c;
			}
		}
		if (next >= 0) {
			po[next] = -2;
			stack[sp++] = next;
		} else {
			order[np] = v;
			po[v] = (long)np++;
			sp--;
		}
	}
	/* reverse postorder: X first */
	idom[X] = (long)X;
	for (int changed = 1; changed;) {
		changed = 0;
		for (size_t r = np - 1; r-- > 0;) {
			long b = order[r], nd = -1;
			int k = succ(g, (size_t)b, sv);
			if (!k)
				nd = (long)X;
			for (int t = 0; t < k; t++)
				if (idom[sv[t]] >= 0)
					nd = nd < 0 ? sv[t] : meet(idom, po, nd, sv[t]);
			if (nd >= 0 && idom[b] != nd) {
				idom[b] = nd;
				changed = 1;
			}
		}
	}
	for (size_t i = 0; i < n; i++)
		ipdom[i] = po[i] >= 0 ? idom[i] : -1;
	rc = 0;
out:
	free(cnt), free(pred), free(po), free(order), free(stack), free(edge), free(idom);
	return rc;
}
