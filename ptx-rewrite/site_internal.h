/* site_internal.h — hook sites emitted inline, where the hook is (site.c): what the
 * hook pass (pass_hooks.c) builds its sites with. One struct ptx_sites per
 * rewrite holds what the sites of a module share: the registers every site
 * names, the handlers (analysed once), the function-level .locals. */
#ifndef PTX_SITE_H
#define PTX_SITE_H

#include <stdbool.h>

#include "ptx-rewrite/ctx_words_internal.h"
#include "ptx-rewrite/fnlocal_internal.h"
#include "ptx-rewrite/handler_internal.h"
#include "ptx-rewrite/inline_internal.h"
#include "ptx-rewrite/passlib_internal.h"
#include "ptx-rewrite/site_defer_internal.h"

struct ptx_policy;
struct ptx_tramps;

struct ptx_sites {
	struct ptx_module *m;
	struct ptx_pass_ctx *ctx; /* options, nr_hooks, log */
	struct ptx_policy *pol;	  /* the probe handler and word clones join it */
	struct ptx_tramps *tr;	  /* the no-op stubs sites call */
	struct ptx_handlers handlers;
	struct ptx_inliner inl;
	struct ptx_fn_locals locals;
	const struct ptx_site_regs *regs; /* made on first use */
	const char *probe;		  /* the built-in probe handler's name, once in the module */
	unsigned nr_elided;		  /* sites of the empty built-in handler left out */
	size_t mem_inl_insn;		  /* mem/fence handler instructions inlined past the small limit */
	bool block_site;		  /* the sites being inserted are a block handler's (pass_hooks.c) */
	struct ptx_defer *defer; /* the function's loops, when its sampled mem sites defer (GX_PTX_F_MEM_DEFER) */
};

/* A kernel's prologue begin..last (inclusive) that its entry site at `end`
 * was moved past (pass_hooks.c: entry_site_pos): the handler's path
 * re-executes it. Several entry sites go before `end` one after the other:
 * the range stops at `last`, never reaching a site's code. */
struct ptx_prologue {
	struct ptx_stmt *begin, *last, *end;
};

void ptx_sites_init(struct ptx_sites *s, struct ptx_module *m, struct ptx_pass_ctx *ctx, struct ptx_policy *pol,
		    struct ptx_tramps *tr);
void ptx_sites_free(struct ptx_sites *s);

/* Insert the inline site of `hook` before pos (NULL: end of fn): guard and
 * guard_neg the guard of the hooked instruction (NULL: none), func the
 * handler (NULL: the built-in one chosen by opts->stubs), addr statements
 * computing the lane's address into ptx_site_addr_reg() (NULL: 0), info
 * size | op << 16 | space << 24, pro the prologue an entry site re-executes
 * (NULL or begin NULL: none). 0 or -errno. */
int ptx_site_insert(struct ptx_sites *s, struct ptx_func *fn, struct ptx_stmt *pos, unsigned hook, const char *func,
		    unsigned long long kid, const struct ptx_chain *addr, unsigned info, const char *guard,
		    int guard_neg, const struct ptx_prologue *pro);
/* The calls of the samples that fn's deferred memory sites keep (s->defer,
 * scanned before its sites were inserted): one flush at each of the
 * defer's points. 0 or -errno. */
int ptx_site_flushes(struct ptx_sites *s, struct ptx_func *fn);
/* Will the site of `hook` with handler func (NULL: the built-in one) inline
 * it? 1 yes (*ninsn: its instructions), 0 no (called, or no site at all),
 * -errno. */
int ptx_site_inlines(struct ptx_sites *s, unsigned hook, const char *func, size_t *ninsn);
/* Does the entry site of handler func (NULL: the built-in one) send most
 * warps away before its election: inlined, with a warp-uniform early exit
 * (site_uniform.c)? 1 yes, 0 no, -errno. */
int ptx_site_uniform_exit(struct ptx_sites *s, struct ptx_func *fn, const char *func);
/* The register a site's address goes to ("%__gx_a"); NULL on ENOMEM. */
const char *ptx_site_addr_reg(struct ptx_sites *s);

#endif
