/* cfg_pdom_internal.h — immediate post-dominators of a statement-level control-flow
 * graph (cfg_pdom.c), for the persistent transform's barrier check: a
 * thread-dependent branch whose paths meet again before any barrier or exit
 * cannot strand threads at a barrier. */
#ifndef PTX_CFG_PDOM_H
#define PTX_CFG_PDOM_H

#include <stddef.h>

/* The successors of node i (at most 2) into out; their count. A node with
 * none leaves the function. */
typedef int (*ptx_succ_fn)(const void *g, size_t i, long out[2]);

/* ipdom[i] for every node 0..n-1: its immediate post-dominator, n for the
 * function's exit, -1 for a node that never reaches the exit (an endless
 * loop). Cooper, Harvey and Kennedy's iterative algorithm on the reversed
 * graph: linear memory, a few passes on structured code. 0 or -ENOMEM. */
int ptx_cfg_ipdom(const void *g, size_t n, ptx_succ_fn succ, long *ipdom);

#endif
