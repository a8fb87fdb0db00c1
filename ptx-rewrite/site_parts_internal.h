/* site_parts_internal.h — what the files of the site builder share: site_words.c (the
 * context words a site computes), site_uniform.c (a handler's uniform early
 * exits moved before the election), probe.c (the built-in probe handler).
 * site.c puts them together; nothing outside these files includes this. */
#ifndef PTX_SITE_PRIV_H
#define PTX_SITE_PRIV_H

#include <stdbool.h>

#include "ptx-rewrite/ctx_words_internal.h"
#include "ptx-rewrite/ptx_ir_internal.h"

struct ptx_policy;
struct gx_ptx_rewrite_opts;

/* ptx_chain_insn without guard, the operands counted: INSN(c, "mov",
 * PTX_MODS(".b32"), a, b). Needs `m` in scope. */
#define INSN(c, opcode, mods, ...)                                                                           \
	ptx_chain_insn(m, c, NULL, 0, opcode, mods,                                                          \
		       (unsigned)(sizeof((struct ptx_opnd *[]){ __VA_ARGS__ }) / sizeof(struct ptx_opnd *)), \
		       __VA_ARGS__)

/* site_words.c */
/* How a site's function computes its words (ptx_site_layout): */
#define PTX_SITE_FLAT	  1u /* one-dimensional blocks (ptx_site_flat_block) */
#define PTX_SITE_WARP_REG 2u /* the warp index is in the function's register (GX_PTX_F_HOIST_WARP) */
/* `need` with the words its computed words are made from. */
unsigned ptx_words_closure(unsigned need, unsigned layout);
/* Whether kernel fn's blocks are one-dimensional by its own declaration. */
int ptx_site_flat_block(const struct ptx_func *fn);
/* Is `name` declared among the declarations heading fn's body (registers
 * the sites set once at its start)? */
int ptx_head_declares(const struct ptx_func *fn, const char *name);
/* The layout of fn's sites; with GX_PTX_F_HOIST_WARP in the options, the
 * warp index register is set at fn's start (made by its first site).
 * Returns the PTX_SITE_* bits, or -ENOMEM. */
int ptx_site_layout(struct ptx_module *m, struct ptx_func *fn, const struct gx_ptx_rewrite_opts *o);
/* Compute the words of `need` not in `have` (already in their registers)
 * into r->ow[] (leader only). layout: ptx_site_layout. 0 or -ENOMEM. */
int ptx_site_words(struct ptx_module *m, struct ptx_chain *c, const struct ptx_site_regs *r, unsigned need,
		   unsigned have, unsigned long long kid, unsigned info, unsigned hook, const struct ptx_chain *addr,
		   unsigned layout);
/* With PTX_SITE_WARP_REG in layout: the %smid and %warpid reads of the
 * site's chain c read registers set once at fn's start instead (both are
 * volatile in PTX: a block moved by preemption keeps the values it started
 * with). 0 or -ENOMEM. */
int ptx_site_hoist_sregs(struct ptx_module *m, struct ptx_func *fn, struct ptx_chain *c, unsigned layout);
/* The words in `need` stored to the .local context at `ctx`. */
void ptx_site_store_words(struct ptx_module *m, struct ptx_chain *c, const struct ptx_site_regs *r, unsigned need,
			  const char *ctx, unsigned layout);
/* Append a copy of `in` to c with its own ID operands; NULL (c->failed set)
 * when out of memory. */
struct ptx_stmt *ptx_insn_dup(struct ptx_module *m, struct ptx_chain *c, const struct ptx_insn *in);

/* site_uniform.c: copy into `pre` the warp-uniform tests at the head of the
 * inlined body `hb` as `@p bra.uni out`; *words: the words computed on the
 * way to the last exit. Returns the number of early exits copied (0:
 * nothing usable, pre left empty) or -ENOMEM. */
int ptx_site_uniform_prefix(struct ptx_module *m, const struct ptx_site_regs *r, const struct ptx_chain *hb,
			    const char *end, const char *out, unsigned long long kid, unsigned info, unsigned hook,
			    struct ptx_chain *pre, unsigned *words, unsigned layout);

/* site_sample.c: the 1-in-n test of a mem site of fn (fn gets its seed
 * register once), made where `how` says. n <= 1: nothing emitted, 0; 1
 * emitted; -ENOMEM. site: any per-site number (decorrelates sites). */
enum ptx_gate {
	PTX_GATE_VOTE,	 /* before the election, voted: unsampled groups branch to `out` (GX_PTX_F_SAMPLE_EARLY) */
	PTX_GATE_LEADER, /* after it, by the leader alone: unsampled, it branches to `out` (GX_PTX_F_SAMPLE_LEADER) */
	PTX_GATE_FLAG,	 /* after it, by every lane: the leader flag (%q) cleared when unsampled, no branch */
	PTX_GATE_COUNT,	 /* before it: a per-function countdown of geometric gaps, voted (the default) */
};
/* vote.sync: sm_70 and PTX ISA 6.0 (the count gate's vote). */
bool ptx_can_vote_sync(const struct ptx_module *m);
int ptx_site_sample_gate(struct ptx_module *m, struct ptx_func *fn, struct ptx_chain *c, const struct ptx_site_regs *r,
			 unsigned n, unsigned long long kid, unsigned site, const char *out, enum ptx_gate how);
/* A deferred site's test, branch-free (GPU run 129: a branch in a loop's
 * body keeps ptxas from overlapping the loads around it): the same
 * countdown, decremented by the lanes making the access (guard), %q set on
 * the sampled one, the next gap drawn under %q; *stamp: the generator's
 * word, the sample's stamp (the same for the lanes sampled together).
 * 1 or -ENOMEM. */
int ptx_site_sample_pred(struct ptx_module *m, struct ptx_func *fn, struct ptx_chain *c, const struct ptx_site_regs *r,
			 unsigned n, const char *guard, int guard_neg, struct ptx_opnd **stamp);
/* The predicated form's countdown and generator made the warp's again
 * (the lowest active lane's): converged lanes that drifted apart in
 * divergent code would each sample on their own. Made where the lanes
 * meet (a deferred site's flush). */
int ptx_site_sample_resync(struct ptx_module *m, struct ptx_func *fn, struct ptx_chain *c,
			   const struct ptx_site_regs *r, unsigned n);
/* The N of a mem site calling `func` (renamed): its binding's sample, or
 * opts->mem_sample instead when set; 0 for handlers that do not sample. */
struct ptx_sites;
unsigned ptx_site_sample_every(const struct ptx_sites *s, const char *func);

/* probe.c: the built-in probe handler added to the module after the policy
 * code; its name, or NULL on ENOMEM. */
const char *ptx_probe_add(struct ptx_module *m, struct ptx_policy *pol);

#endif
