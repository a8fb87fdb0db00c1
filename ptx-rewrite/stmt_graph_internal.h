/* stmt_graph_internal.h — a function body as a graph of its instructions and
 * labels (stmt_graph.c), for the checks that follow control flow: the once
 * barrier of a block handler (block_barrier.c), the loops a memory site's
 * sample waits out (site_defer.c). */
#ifndef PTX_STMT_GRAPH_H
#define PTX_STMT_GRAPH_H

#include <stddef.h>

#include "ptx-rewrite/ptx_ir_internal.h"

struct ptx_graph {
	struct ptx_stmt **s; /* node i: an instruction or a label, in text order */
	size_t n;
	struct ptx_graph_lbl {
		const char *name;
		size_t at;
	} *l; /* sorted by name */
	size_t nl;
};

/* A successor that leaves the function (ret, exit). */
#define PTX_GRAPH_OUT (-2L)

/* fn's graph into g (n may be 0): 0 or -ENOMEM. */
int ptx_graph_build(struct ptx_func *fn, struct ptx_graph *g);
void ptx_graph_free(struct ptx_graph *g);
/* The node a branch operand names; -1 if unknown. */
long ptx_graph_label(const struct ptx_graph *g, const struct ptx_opnd *op);
/* Node i's successors into out (PTX_GRAPH_OUT: leaves the function); their
 * count, or -1 for a statement the graph does not follow (brx, trap, a
 * branch to an unknown label). */
int ptx_graph_succ(const struct ptx_graph *g, size_t i, long out[2]);

#endif
