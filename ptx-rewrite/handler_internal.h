/* handler_internal.h — hook handlers as the sites see them (handler.c): which words
 * of its context a handler reads, whether its body can be inlined exactly,
 * cached per module. The analysis state (struct ptx_an) is kept for the
 * inliner (inline.c), which reads it through the ptx_an_* helpers. */
#ifndef PTX_HANDLER_H
#define PTX_HANDLER_H

#include <stddef.h>

#include "ptx-rewrite/ctx_words_internal.h"
#include "ptx-rewrite/ptx_ir_internal.h"

struct ptx_inl_tmpl;
struct ptx_an;

/* A hook handler. words: bit i set when the handler may read bytes
 * 4i..4i+3 of its struct gdev_ctx (PTX_CTX_ALL_WORDS when the pointer
 * escapes the analysis). */
struct ptx_handler {
	const char *name;
	struct ptx_func *fn; /* NULL: not a handler-shaped .func (then called as is) */
	unsigned words;
	int inlinable;	      /* exactly inlinable (site.c also weighs the size) */
	size_t ninsn;	      /* instructions in the body */
	const char *why;      /* why it is not inlinable (for the log) */
	unsigned char logged; /* "called, not inlined" was logged */
	/* The body prepared for inlining (inline.c), made on the first
	 * inlined site and cloned at every other one; NULL until then. */
	const struct ptx_inl_tmpl *tmpl;
	/* A called handler's clone taking the words it reads as .param .b32
	 * scalars (site.c), made on its first called site; NULL until then. */
	const char *wclone;
	/* The same for every lane of the warp: a first .param .b32, the
	 * leader flag, and the lanes without it return at once
	 * (GX_PTX_F_MEM_CALL_ALL); NULL until made. */
	const char *wclone_all;
	const struct ptx_an *an; /* its analysis, when inlinable */
	signed char uni_exit;	 /* inlined at entry, it leaves early on a warp-uniform
				 * test (site.c): 1 yes, 0 no, -1 not known yet */
};

/* The handlers of a module, analysed once each (in the arena: pointers stay
 * valid). */
struct ptx_handlers {
	struct ptx_module *m;
	struct ptx_handler **v;
	size_t n, cap;
};

/* The analysis of handler `name` (a .func of the module), cached. 0 or -ENOMEM. */
int ptx_handler_get(struct ptx_handlers *hs, const char *name, struct ptx_handler **out);
void ptx_handlers_free(struct ptx_handlers *hs);

/* ---- the analysis, for inline.c */

struct regdecl {
	const char *name;
	unsigned range;
	unsigned size;
};

/* A register holding the context pointer plus delta. */
struct ctxreg {
	const char *name;
	long long delta;
};

struct ptx_an {
	struct ptx_func *fn;
	const char *param, *ret;
	struct regdecl *regs;
	size_t nregs;
	struct ctxreg *cr;
	size_t ncr, capcr;
	int escape, inl;
	size_t ninsn;
	const char *why;
	unsigned words;
};

/* The declaration of register `name` among r[0..n) (ranges included), or NULL. */
struct regdecl *ptx_an_regdecl(struct regdecl *r, size_t n, const char *name);
/* An ID operand with a name. */
int ptx_an_is_id(const struct ptx_opnd *o);
/* `ld.param.u64 %r, [PARAM]` of the context pointer: %r, else NULL. */
const char *ptx_an_param_load(struct ptx_an *a, const struct ptx_insn *in);
/* A copy of a context register (mov, add/sub of a constant): 1 with the
 * destination and its delta, else 0. */
int ptx_an_ctx_copy(struct ptx_an *a, const struct ptx_insn *in, const char **dst, long long *delta);
/* A load through a context register: that register, else NULL. */
struct ctxreg *ptx_an_ctx_load(struct ptx_an *a, const struct ptx_insn *in, struct ptx_opinfo *oi);
/* Does operand o name a context register? */
int ptx_an_mentions(struct ptx_an *a, const struct ptx_opnd *o);
/* The store of the return value (dropped when inlined). */
int ptx_an_ret_store(struct ptx_an *a, const struct ptx_insn *in);

#endif
