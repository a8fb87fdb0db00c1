/* passes.h — the transforms behind ptx_run_passes() (passes.c), one per file:
 *
 *   pass_link.c        merge the policy PTX (devbpf JIT output) into the module
 *   pass_hooks.c       entry/exit/mem/fence hook call sites
 *   pass_persistent.c  persistent-worker transform (blocksched)
 *   pass_tramp.c       trampoline .funcs and no-op stubs the call sites call
 *
 * They share one struct ptx_passes (state of one rewrite): which kernels the
 * persistent transform accepted (so hook sites pass virtual block ids), the
 * policy symbol renames, and the trampolines to emit. Design notes:
 * docs/ptx-rewrite.md (sections "Passes", "Trampolines", "Persistent workers"). */
#ifndef PTX_PASSES_H
#define PTX_PASSES_H

#include "ptx-rewrite/ptx_pass.h"

/* A policy symbol renamed by pass_link (old → new). */
struct ptx_rename {
	const char *from, *to;
};

/* The module's context buffer (pass_tramp.c): one 128-byte struct gdev_ctx
 * slot per resident warp, indexed by (%smid mod 256) * 64 + %warpid mod 64:
 * unique on every GPU with at most 256 SMs and 64 warps per SM (sm_70 to
 * sm_100: 64 warps/SM at most; H200 132 SMs). 2 MiB per module, zeroed at load. */
#define PTX_CTXBUF_SMS 256
#define PTX_CTXBUF_WARPS 64
#define PTX_CTXBUF_WARP_SHIFT 6
#define PTX_CTXBUF_SLOT 128

/* One trampoline: calls `func` (a policy .func or a stub) for `hook`. virt:
 * the call sites pass (virtual) block ids and grid dims as parameters instead
 * of the trampoline reading %ctaid/%nctaid (kernels under the persistent
 * transform). */
struct ptx_tramp {
	unsigned hook;
	const char *func;
	int virt;
	int sched;	/* a sched hook: context from ptx_tramp_sched_site's registers */
	int stub;	/* func is a built-in no-op stub: it reads no context */
	const char *name;
};

/* A hook handler as pass_inline.c sees it (ptx_handler_get). words: bit i
 * set when the handler may read bytes 4i..4i+3 of its struct gdev_ctx
 * (PTX_CTX_ALL_WORDS when the pointer escapes the analysis). */
#define PTX_CTX_WORDS 30
#define PTX_CTX_ALL_WORDS ((1u << PTX_CTX_WORDS) - 1)
struct ptx_inl_tmpl;
struct ptx_an;
struct ptx_handler {
	const char *name;
	struct ptx_func *fn;	/* NULL: not a handler-shaped .func (then called as is) */
	unsigned words;
	int inlinable;		/* exactly inlinable (pass_site.c also weighs the size) */
	size_t ninsn;		/* instructions in the body */
	const char *why;	/* why it is not inlinable (for the log) */
	unsigned char logged;	/* "called, not inlined" was logged */
	/* The body prepared for inlining (pass_inline.c), made on the first
	 * inlined site and cloned at every other one; NULL until then. */
	const struct ptx_inl_tmpl *tmpl;
	/* A called handler's clone taking the words it reads as .param .b32
	 * scalars (pass_site.c), made on its first called site; NULL until then. */
	const char *wclone;
	const struct ptx_an *an;	/* its analysis (pass_inline.c), when inlinable */
	signed char uni_exit;	/* inlined at entry, it leaves early on a warp-uniform
				 * test (pass_site.c): 1 yes, 0 no, -1 not known yet */
};

/* Names and shared operands of the inline hook sites of a module
 * (pass_site.c), made once. The operands are the same objects at every
 * site: no pass changes a register operand of site code in place. */
struct ptx_site_regs {
	const char *q, *m, *l, *t, *w, *x, *c0, *cr, *a; /* "%__gx_q" ... "__gx_c0" */
	struct ptx_opnd *oq, *om, *ol, *ot, *ox, *oa, *oc0, *ocr;
	struct ptx_opnd *ow[PTX_CTX_WORDS]; /* %__gx_w0 ... %__gx_w29 */
	const char *cw[PTX_CTX_WORDS];	/* __gx_cw0 ...: a called clone's word params */
	struct ptx_opnd *ocw[PTX_CTX_WORDS];
	int reconverge; /* bar.warp.sync after entry/mem/fence sites (no GX_PTX_F_NO_RECONVERGE) */
};

/* A function-level .local declared for hook sites (context, handler depots). */
struct ptx_site_local {
	const struct ptx_func *fn;
	const struct ptx_handler *h;	/* NULL: the context buffer */
	const char *from, *to;
};

struct ptx_passes {
	struct ptx_module *m;
	struct ptx_pass_ctx *ctx;
	/* pass_link */
	struct ptx_rename *renames;
	size_t nr_renames;
	struct ptx_item *policy_last; /* last item inserted from the policy, or NULL */
	/* pass_link: the runtime blocks the policy code declares, bit k for
	 * __gx_devrt__p<k> (bit 0: __gx_devrt, always defined) */
	unsigned devrt_blocks;
	/* pass_persistent: kernels accepted by ptx_persistent_check() */
	struct ptx_persist *persist;
	size_t nr_persist;
	struct ptx_item *rt_first; /* the device runtime, parsed (not in the module) */
	/* pass_tramp */
	struct ptx_tramp *tramps;
	size_t nr_tramps, cap_tramps;
	unsigned stubs; /* GDEV_HOOK_* bits whose no-op stub is needed */
	/* pass_inline / pass_site */
	struct ptx_handler **handlers;	/* each in the arena: pointers stay valid */
	size_t nr_handlers, cap_handlers;
	unsigned nr_inlined;
	struct ptx_site_local *locals;
	size_t nr_locals;
	const char *probe_added;	/* the built-in probe handler's name, once in the module */
	unsigned nr_elided;	/* sites of empty built-in handlers left out */
	const struct ptx_site_names *site_names; /* made on first use */
	const struct ptx_site_regs *site_regs;	/* pass_site.c, made on first use */
	/* pass_hooks: the kernel prologue begin..last (inclusive) that the entry
	 * sites at `end` were moved past; each handler's path re-executes it
	 * (pass_site.c). Several entry sites go before `end` one after the
	 * other: the range stops at `last`, never reaching a site's code. */
	struct ptx_stmt *remat_begin, *remat_last, *remat_end;
	/* pass_hooks: where this kernel's GDEV_HOOK_BLOCK handlers go
	 * (GDEV_HOOK_ENTRY or GDEV_HOOK_EXIT; 0: none) */
	unsigned block_at;
};

/* pass_link.c: parse opts->policy_ptx, rename its symbols, drop its module
 * directives, reconcile .version, insert its items after the module header.
 * Fills ps->renames. 0 or -errno with m->err set. */
int ptx_pass_link(struct ptx_passes *ps);
/* The name a policy symbol has after linking (itself if not renamed). */
const char *ptx_link_name(const struct ptx_passes *ps, const char *name);

/* pass_persistent.c (which kernels, and what their loop needs) and
 * pass_persist_loop.c (the loop). */
struct ptx_persist {
	const struct ptx_func *fn;
	unsigned bar_id;	/* a CTA barrier id the kernel does not use */
	int unit_bar;		/* the kernel (or a callee) uses shared memory or CTA
				 * barriers: its block must finish a unit before any
				 * thread starts the next */
};
/* pass_rt_inline.c: a leaf .func (clang's / the JIT's NVPTX shape) inlined
 * at the end of c, in kernel site_fn (its .local depots go there): args
 * and ret are registers. 0, -EOPNOTSUPP (the function has something the
 * inliner does not follow: why in m->err, c unchanged only if the caller
 * built into a scratch chain) or -ENOMEM. ptx_rt_inline: the runtime's
 * function `name` (begin, next, steal); anything it cannot inline is an
 * internal error (-EINVAL). */
int ptx_func_inline(struct ptx_passes *ps, struct ptx_func *site_fn, struct ptx_chain *c,
		    const struct ptx_func *fn, unsigned nargs, const char *const *args, const char *ret);
int ptx_rt_inline(struct ptx_passes *ps, struct ptx_func *site_fn, struct ptx_chain *c, const char *name,
		  unsigned nargs, const char *const *args, const char *ret);
const struct ptx_persist *ptx_persistent_find(const struct ptx_passes *ps, const struct ptx_func *fn);
/* Decide for each kernel whether the transform is safe; log refusals. */
int ptx_persistent_check(struct ptx_passes *ps);
int ptx_persistent_accepted(const struct ptx_passes *ps, const struct ptx_func *fn);
/* Transform the accepted kernels (after the hook pass). */
int ptx_pass_persistent(struct ptx_passes *ps);

/* pass_inline.c */
/* The analysis of handler `name` (a .func of the module), cached. 0 or -ENOMEM. */
int ptx_handler_get(struct ptx_passes *ps, const char *name, struct ptx_handler **out);
/* Append h's body, inlined, for a site in site_fn: its top-level
 * declarations (renamed) to decls, its code to body. Context word i is read
 * from register r->ow[i], r->ot is a .b32 scratch register, `end` the label
 * after the site. Only for h->inlinable. The body is analysed and turned into
 * IR once per handler; each site clones it with fresh names. 0 or -errno. */
int ptx_handler_inline(struct ptx_passes *ps, struct ptx_func *site_fn, struct ptx_handler *h,
		       struct ptx_chain *decls, struct ptx_chain *body,
		       const struct ptx_site_regs *r, const char *end);

/* pass_site.c */
/* Insert the inline site of `hook` before pos (NULL: end of fn): guard and
 * guard_neg the guard of the hooked instruction (NULL: none), func the
 * handler (NULL: the built-in one chosen by opts->stubs), addr statements
 * computing the lane's address into ptx_tramp_addr_reg() (NULL: 0), info
 * size | op << 16 | space << 24. */
int ptx_site_insert(struct ptx_passes *ps, struct ptx_func *fn, struct ptx_stmt *pos,
		    unsigned hook, const char *func, unsigned long long kid,
		    const struct ptx_chain *addr, unsigned info, const char *guard, int guard_neg);
/* Will the site of `hook` with handler func (NULL: the built-in one) inline
 * it? 1 yes (*ninsn: its instructions), 0 no (called, or no site at all),
 * -errno. */
int ptx_site_inlines(struct ptx_passes *ps, unsigned hook, const char *func, size_t *ninsn);
/* Does the entry site of handler func (NULL: the built-in one) send most
 * warps away before its election: inlined, with a warp-uniform early exit
 * (pass_site.c: uniform_prefix)? 1 yes, 0 no, -errno. */
int ptx_site_uniform_exit(struct ptx_passes *ps, struct ptx_func *fn, const char *func);
/* Name of a function-level copy of the handler's .local `d` in fn (declared
 * once per function and handler). NULL on ENOMEM. */
const char *ptx_site_local(struct ptx_passes *ps, struct ptx_func *fn, const struct ptx_handler *h,
			   const struct ptx_decl *d);

/* pass_hooks.c */
int ptx_pass_hooks(struct ptx_passes *ps);

/* pass_tramp.c */
/* Name of the trampoline for (hook, func, virt), created on first use; func
 * NULL = the built-in no-op stub for the hook. NULL on ENOMEM. */
const char *ptx_tramp_get(struct ptx_passes *ps, unsigned hook, const char *func, int virt);
/* The call site, appended to c as statements: a `{ }` block that passes
 * kernel id, address, info (size | op << 16 | space << 24) and, if virt,
 * block ids to the trampoline. addr: statements computing the address into
 * ptx_tramp_addr_reg() (moved into the block), or NULL/empty for address 0.
 * guard/guard_neg: the call's guard predicate (NULL: none). ret_reg: a .b32
 * register that receives the decision, or NULL. 0 or -ENOMEM. */
int ptx_tramp_site(struct ptx_passes *ps, struct ptx_chain *c, const char *tramp,
		   unsigned long long kid, struct ptx_chain *addr, unsigned info, int virt,
		   const char *guard, int guard_neg, const char *ret_reg);
/* A sched hook site (pass_persist_loop.c): the trampoline of a
 * GDEV_HOOK_SCHED_* hook takes its context from registers, vals = start
 * (.b64), units, worker, steals, ctaid x y z, nctaid x y z (.b32): they
 * become the context's addr, size, op, space (the sched_* names of
 * gdev_ctx.h), block index and grid. */
int ptx_tramp_sched_site(struct ptx_passes *ps, struct ptx_chain *c, const char *tramp,
			 unsigned long long kid, const char *const vals[10], const char *guard,
			 int guard_neg, const char *ret_reg);
/* The register a site's address goes to ("%__gx_a"); NULL on ENOMEM. */
const char *ptx_tramp_addr_reg(struct ptx_passes *ps);

/* Insert __gx_devrt, the stubs and the trampolines after the module header
 * (and after linked policy code). */
int ptx_tramp_emit(struct ptx_passes *ps);
/* Name of a hook bit ("entry", "mem" ...), NULL if not exactly one known bit. */
const char *ptx_hook_name(unsigned hook);

/* passes.c: the item after which module-level code is inserted (the last of
 * .version/.target/.address_size), NULL = module start. */
struct ptx_item *ptx_module_header_end(struct ptx_module *m);

#endif
