/* stmt_graph.c — a function body's instructions and labels as a graph
 * (stmt_graph_internal.h). Nodes are statements, not basic blocks: the
 * checks built on it walk a few thousand nodes at most, once per kernel. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/gx_util.h"
#include "ptx-rewrite/stmt_graph_internal.h"

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct ptx_graph_lbl *)a)->name, ((const struct ptx_graph_lbl *)b)->name);
}

int ptx_graph_build(struct ptx_func *fn, struct ptx_graph *g)
{
	*g = (struct ptx_graph){ 0 };
	size_t n = 0, nl = 0;
	ptx_for_each_stmt(fn, s, nxt)
	{
		n += s->kind == PTX_STMT_INSN || s->kind == PTX_STMT_LABEL;
		nl += s->kind == PTX_STMT_LABEL;
	}
	if (!n)
		return 0;
	g->s = calloc(n, sizeof(*g->s));
	g->l = calloc(nl ? nl : 1, sizeof(*g->l));
	if (!g->s || !g->l) {
		ptx_graph_free(g);
		return gx_err(-ENOMEM);
	}
	ptx_for_each_stmt(fn, s, nxt)
	{
		if (s->kind == PTX_STMT_LABEL)
			g->l[g->nl++] = (struct ptx_graph_lbl){ s->text, g->n };
		if (s->kind == PTX_STMT_INSN || s->kind == PTX_STMT_LABEL)
			g->s[g->n++] = s;
	}
	qsort(g->l, g->nl, sizeof(*g->l), by_name);
	return 0;
}

void ptx_graph_free(struct ptx_graph *g)
{
	free(g->s);
	free(g->l);
	*g = (struct ptx_graph){ 0 };
}

long ptx_graph_label(const struct ptx_graph *g, const struct ptx_opnd *op)
{
	if (!op || op->kind != PTX_OPND_ID || !g->nl)
		return -1;
	struct ptx_graph_lbl key = { op->text, 0 }, *hit = bsearch(&key, g->l, g->nl, sizeof(key), by_name);
	return hit ? (long)hit->at : -1;
}

int ptx_graph_succ(const struct ptx_graph *g, size_t i, long out[2])
{
	const struct ptx_stmt *s = g->s[i];
	long next = i + 1 < g->n ? (long)i + 1 : PTX_GRAPH_OUT;
	if (s->kind != PTX_STMT_INSN)
		return out[0] = next, 1;
	const char *op = s->insn.opcode;
	if (!strcmp(op, "brx") || !strcmp(op, "trap"))
		return -1;
	if (!strcmp(op, "ret") || !strcmp(op, "exit")) {
		out[0] = PTX_GRAPH_OUT;
		if (!s->insn.guard)
			return 1;
		return out[1] = next, 2;
	}
	if (!strcmp(op, "bra")) {
		long t = ptx_graph_label(g, s->insn.nops ? s->insn.ops[0] : NULL);
		if (t < 0)
			return -1;
		out[0] = t;
		if (!s->insn.guard)
			return 1;
		return out[1] = next, 2;
	}
	return out[0] = next, 1;
}
