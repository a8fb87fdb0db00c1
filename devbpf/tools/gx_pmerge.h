/* gx_pmerge.h — several device policies in one process.
 *
 * Each policy object is JIT'd (and cached) on its own, so two of them would
 * clash in one module: same symbols, and one __gx_devrt for two map index
 * spaces. The first policy is used as it is; every later one (k = 1..4) is
 * relocated: its symbols renamed, its module header dropped, and its code
 * made to reach its own struct gx_devrt through the first one's next[k - 1].
 * The relocated PTX texts are appended to the first; the hook bindings of
 * all policies, in order, make the trampolines call them one after another
 * at every hook they share. */
#ifndef GX_PMERGE_H
#define GX_PMERGE_H

#include "devbpf/tools/gx_pcache.h"
#include "ptx-rewrite/gx_ptx.h"

#define GX_PMERGE_MAX 5 /* device policies per process: 1 + GX_DEVRT_MAX_NEXT */

/* Relocate d, the k-th policy (1 <= k < GX_PMERGE_MAX), in place (d->ptx and
 * d->progs[].func change). 0, or -EINVAL / -ENOMEM with a one-line reason
 * ("policy NAME: cannot run beside the others: ..."). */
int gx_pdesc_relocate(struct gx_policy_desc *d, unsigned k, char *err, size_t en);

/* What gx_ptx_rewrite needs for a set of policies: one PTX text, the
 * bindings of every program in policy order, the union of their hooks. */
struct gx_policy_set {
	char *ptx;
	size_t ptx_len;
	struct gx_hook_binding *binds; /* point into the descriptions' progs */
	size_t nr_binds;
	unsigned hooks;
};
/* Relocate d[1..n-1] (in place) and join them after d[0]. The descriptions
 * must outlive the set. 0 or -errno with a one-line reason. */
int gx_pset_build(struct gx_policy_desc *d, size_t n, struct gx_policy_set *out, char *err, size_t en);
/* The same without relocating: d[k] (k >= 1) already went through
 * gx_pdesc_relocate(&d[k], k). */
int gx_pset_join(const struct gx_policy_desc *d, size_t n, struct gx_policy_set *out);
void gx_pset_free(struct gx_policy_set *s);

#endif
