/* ctx_words_internal.h — struct gdev_ctx as the rewriter lays it out: 30 4-byte
 * words, a 128-byte slot, the module's context buffer of slots (pass_tramp.c)
 * and the registers a hook site keeps the words in (site.c, inline.c).
 * Header only, shared by the files that build sites and trampolines. */
#ifndef PTX_CTX_WORDS_H
#define PTX_CTX_WORDS_H

#include "gpuext/gdev_ctx.h"
#include "ptx-rewrite/ptx_ir_internal.h"

/* Word i of a handler's context is bytes 4i..4i+3 of its struct gdev_ctx;
 * PTX_CTX_ALL_WORDS when the pointer escapes the analysis (inline.c). */
#define PTX_CTX_WORDS	  30
#define PTX_CTX_ALL_WORDS ((1u << PTX_CTX_WORDS) - 1)

/* The module's context buffer (pass_tramp.c): one 128-byte struct gdev_ctx
 * slot per resident warp, indexed by (%smid mod 256) * 64 + %warpid mod 64:
 * unique on every GPU with at most 256 SMs and 64 warps per SM (sm_70 to
 * sm_100: 64 warps/SM at most; H200 132 SMs). 2 MiB per module, zeroed at load. */
#define PTX_CTXBUF_SMS	      256
#define PTX_CTXBUF_WARPS      64
#define PTX_CTXBUF_WARP_SHIFT 6
#define PTX_CTXBUF_SLOT	      128

/* Names and shared operands of the inline hook sites of a module (site.c),
 * made once. The operands are the same objects at every site: no pass
 * changes a register operand of site code in place. */
struct ptx_site_regs {
	const char *q, *m, *l, *t, *w, *x, *c0, *cr, *a; /* "%__gx_q" ... "__gx_c0" */
	struct ptx_opnd *oq, *om, *ol, *ot, *ox, *oa, *oc0, *ocr;
	struct ptx_opnd *ow[PTX_CTX_WORDS]; /* %__gx_w0 ... %__gx_w29 */
	const char *cw[PTX_CTX_WORDS];	    /* __gx_cw0 ...: a called clone's word params */
	struct ptx_opnd *ocw[PTX_CTX_WORDS];
	int reconverge; /* bar.warp.sync after entry/mem/fence sites (no GX_PTX_F_NO_RECONVERGE) */
};

#endif
