/* pass_tramp.c — the last pass: __gx_devrt, the no-op stubs and the
 * trampolines (between a hook site and a policy function) that the other
 * passes asked for (tramp.c), written out after the module header and the
 * policy code.
 *
 * Why an out-of-line trampoline per (hook, policy function): a site then costs
 * a handful of instructions (compute the lane's address, store three
 * parameters, one call), so the original code around it keeps its register
 * allocation and I-cache footprint, and ptxas is free to inline the
 * trampoline where that is cheaper. The warp-level model of DESIGN.md lives
 * here, once: the lanes that called (activemask — a guarded site is a
 * predicated call, so only the lanes whose guard holds arrive) elect the
 * lowest one as leader (brev + bfind.shiftamt), the leader fills a
 * struct gdev_ctx (devbpf/gdev_ctx.h) in its warp's slot of a module-level
 * global buffer and calls the policy with the generic address of it, and the
 * decision is broadcast with shfl.sync.idx over the same mask (which also
 * reconverges the lanes). Not .local: local memory is interleaved per thread,
 * so one lane's 120-byte fill touched a cache line per word and made vadd with
 * empty hooks 9.5x slower on the H200. Built-in stubs read no context, so
 * their trampolines skip the fill and pass NULL.
 * Every name here starts with the module's fresh prefix ("__gx"), so nothing
 * can clash with the application's symbols. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuext/gx_devrt.h"
#include "ptx-rewrite/ctx_words_internal.h"
#include "ptx-rewrite/pass_internal.h"
#include "ptx-rewrite/passlib_internal.h"
#include "ptx-rewrite/policy_internal.h"
#include "ptx-rewrite/tramp_internal.h"

static void emit_stub(struct gx_buf *b, const char *name)
{
	gx_buf_printf(b,
		      ".func (.param .b32 %s_ret) %s(.param .b64 %s_ctx)\n{\n"
		      "\t.reg .b32 %%r0;\n\tmov.b32 %%r0, 0;\n\tst.param.b32 [%s_ret], %%r0;\n"
		      "\tret;\n}\n",
		      name, name, name, name);
}

/* The trampoline. Registers: r1 = mask, r2 = leader lane, r0 = decision,
 * rd4 = the warp's context slot (global), rd3 = its generic address. */
static void emit_tramp(struct gx_buf *b, const char *P, const struct ptx_tramp *t)
{
	const char *N = t->name;
	gx_buf_printf(b, ".func (.param .b32 %s_r) %s(.param .b64 %s_kid, .param .b64 %s_addr, "
		      ".param .b32 %s_info", N, N, N, N, N);
	if (t->sched)
		gx_buf_printf(b, ", .param .b32 %s_s1, .param .b32 %s_s2", N, N);
	if (t->virt)
		for (int i = 0; i < 6; i++)
			gx_buf_printf(b, ", .param .b32 %s_c%d", N, i);
	gx_buf_printf(b, ")\n{\n"
		      "\t.reg .pred %%p<2>;\n\t.reg .b32 %%r<32>;\n\t.reg .b64 %%rd<8>;\n"
		      "\tactivemask.b32 %%r1;\n"
		      "\tbrev.b32 %%r2, %%r1;\n"
		      "\tbfind.shiftamt.u32 %%r2, %%r2;\n"
		      "\tmov.u32 %%r3, %%laneid;\n"
		      "\tmov.b32 %%r0, 0;\n"
		      "\tsetp.ne.u32 %%p1, %%r3, %%r2;\n"
		      "\t@%%p1 bra $%s_skip;\n",
		      P);
	if (t->stub) {
		/* A built-in stub reads no context: no fill, a null pointer. */
		gx_buf_puts(b, "\tmov.u64 %rd3, 0;\n");
		goto call;
	}
	/* The warp's slot in the module's context buffer: (smid, hardware warp
	 * slot) is unique among resident warps, so no other warp touches it
	 * while this one runs; the leader lane is the only writer. */
	gx_buf_printf(b,
		      "\tmov.u32 %%r22, %%smid;\n"
		      "\tmov.u32 %%r26, %%warpid;\n"
		      "\tand.b32 %%r27, %%r22, %d;\n"
		      "\tand.b32 %%r28, %%r26, %d;\n"
		      "\tshl.b32 %%r27, %%r27, %d;\n"
		      "\tor.b32 %%r27, %%r27, %%r28;\n"
		      "\tmul.wide.u32 %%rd4, %%r27, %d;\n"
		      "\tmov.u64 %%rd5, %s_ctxbuf;\n"
		      "\tadd.s64 %%rd4, %%rd5, %%rd4;\n",
		      PTX_CTXBUF_SMS - 1, PTX_CTXBUF_WARPS - 1, PTX_CTXBUF_WARP_SHIFT,
		      PTX_CTXBUF_SLOT, P);
	/* kernel_id, launch_id | addr, size, op (sched: start, units, worker,
	 * steals in addr, size, op, space) */
	gx_buf_printf(b,
		      "\tld.param.b64 %%rd1, [%s_kid];\n"
		      "\tld.param.b64 %%rd2, [%s_addr];\n"
		      "\tld.param.b32 %%r4, [%s_info];\n"
		      "\tmov.u64 %%rd3, 0;\n",
		      N, N, N);
	if (t->sched)
		gx_buf_printf(b,
			      "\tmov.b32 %%r5, %%r4;\n"
			      "\tld.param.b32 %%r6, [%s_s1];\n"
			      "\tld.param.b32 %%r7, [%s_s2];\n",
			      N, N);
	else
		gx_buf_puts(b, "\tand.b32 %r5, %r4, 65535;\n"
			       "\tbfe.u32 %r6, %r4, 16, 8;\n"
			       "\tbfe.u32 %r7, %r4, 24, 8;\n");
	gx_buf_printf(b,
		      "\tmov.b64 %%rd6, {%%r5, %%r6};\n"
		      "\tst.global.v2.u64 [%%rd4+%d], {%%rd1, %%rd3};\n"
		      "\tst.global.v2.u64 [%%rd4+%d], {%%rd2, %%rd6};\n",
		      GDEV_CTX_OFF_KERNEL_ID, GDEV_CTX_OFF_ADDR);
	/* space, active_mask, nr_active, hook */
	gx_buf_printf(b,
		      "\tpopc.b32 %%r8, %%r1;\n"
		      "\tmov.u32 %%r9, %u;\n"
		      "\tst.global.v4.u32 [%%rd4+%d], {%%r7, %%r1, %%r8, %%r9};\n",
		      t->hook, GDEV_CTX_OFF_SPACE);
	/* ctaid xyz, nctaid xyz in r10..r15 */
	if (t->virt) {
		for (int i = 0; i < 6; i++)
			gx_buf_printf(b, "\tld.param.b32 %%r%d, [%s_c%d];\n", 10 + i, N, i);
	} else {
		static const char *const sreg[6] = {"%ctaid.x",  "%ctaid.y",  "%ctaid.z",
						    "%nctaid.x", "%nctaid.y", "%nctaid.z"};
		for (int i = 0; i < 6; i++)
			gx_buf_printf(b, "\tmov.u32 %%r%d, %s;\n", 10 + i, sreg[i]);
	}
	/* tid xyz r16..18, ntid xyz r19..21, smid r22, warpid r23, unit r24;
	 * pad0 is never written (the buffer starts zeroed). */
	gx_buf_printf(b,
		      "\tmov.u32 %%r16, %%tid.x;\n\tmov.u32 %%r17, %%tid.y;\n"
		      "\tmov.u32 %%r18, %%tid.z;\n\tmov.u32 %%r19, %%ntid.x;\n"
		      "\tmov.u32 %%r20, %%ntid.y;\n\tmov.u32 %%r21, %%ntid.z;\n"
		      "\tmad.lo.u32 %%r23, %%r18, %%r20, %%r17;\n"
		      "\tmad.lo.u32 %%r23, %%r23, %%r19, %%r16;\n"
		      "\tshr.u32 %%r23, %%r23, 5;\n"
		      "\tmad.lo.u32 %%r24, %%r12, %%r14, %%r11;\n"
		      "\tmad.lo.u32 %%r24, %%r24, %%r13, %%r10;\n"
		      "\tst.global.v4.u32 [%%rd4+%d], {%%r10, %%r11, %%r12, %%r13};\n"
		      "\tst.global.v4.u32 [%%rd4+%d], {%%r14, %%r15, %%r16, %%r17};\n"
		      "\tst.global.v4.u32 [%%rd4+%d], {%%r18, %%r19, %%r20, %%r21};\n"
		      "\tst.global.v4.u32 [%%rd4+%d], {%%r22, %%r23, %%r2, %%r24};\n"
		      "\tcvta.global.u64 %%rd3, %%rd4;\n",
		      GDEV_CTX_OFF_CTAID, GDEV_CTX_OFF_NCTAID + 4, GDEV_CTX_OFF_TID + 8,
		      GDEV_CTX_OFF_SMID);
call:
	gx_buf_printf(b,
		      "\t{\n\t.param .b64 %s_a0;\n\t.param .b32 %s_a1;\n"
		      "\tst.param.b64 [%s_a0], %%rd3;\n"
		      "\tcall.uni (%s_a1), %s, (%s_a0);\n"
		      "\tld.param.b32 %%r0, [%s_a1];\n\t}\n"
		      "$%s_skip:\n"
		      "\tshfl.sync.idx.b32 %%r0, %%r0, %%r2, 31, %%r1;\n"
		      "\tst.param.b32 [%s_r], %%r0;\n"
		      "\tret;\n}\n",
		      P, P, P, P, t->func, P, P, P, N);
}

int ptx_pass_tramp(struct ptx_module *m, const struct ptx_policy *pol, const struct ptx_tramps *tr)
{
	struct gx_buf b;
	gx_buf_init(&b);
	/* the runtime blocks: __gx_devrt always (the shim's sign of a module it
	 * rewrote), __gx_devrt__p<k> for each further policy the code uses */
	unsigned nblocks = 0;
	for (unsigned k = 0; k < 32; k++)
		if (!k || (pol->devrt_blocks >> k & 1)) {
			nblocks++;
			char sym[sizeof(GDEV_DEVRT_SYMBOL) + 16];
			gx_devrt_symbol(sym, sizeof(sym), k);
			gx_buf_printf(&b, ".visible .const .align 8 .b8 %s[%zu];\n", sym, sizeof(struct gx_devrt));
		}
	int fill = 0;
	for (size_t i = 0; i < tr->n; i++)
		fill |= !tr->v[i].stub;
	if (fill)
		gx_buf_printf(&b, ".global .align 16 .b8 %s_ctxbuf[%d];\n", m->fresh_prefix,
			      PTX_CTXBUF_SMS * PTX_CTXBUF_WARPS * PTX_CTXBUF_SLOT);
	for (size_t i = 0; ptx_hook_nth(i); i++)
		if (tr->stubs & ptx_hook_nth(i)) {
			const char *n = ptx_tramp_stub_name(m, ptx_hook_nth(i));
			if (!n) {
				gx_buf_free(&b);
				return gx_err(-ENOMEM);
			}
			emit_stub(&b, n);
		}
	for (size_t i = 0; i < tr->n; i++)
		emit_tramp(&b, m->fresh_prefix, &tr->v[i]);
	if (b.failed) {
		gx_buf_free(&b);
		return gx_err(-ENOMEM);
	}
	struct ptx_item *first, *last;
	int err = ptx_parse_items(m, b.data, b.len, &first, &last);
	gx_buf_free(&b);
	if (err) {
		/* Our own text failed to parse: a bug, reported as such. */
		char why[sizeof(m->err)];
		memcpy(why, m->err, sizeof(why));
		snprintf(m->err, sizeof(m->err), "internal error: trampoline text: %.200s", why);
		return gx_err(-EINVAL);
	}
	/* The blocks go right after the header (the policy code uses them); the
	 * stubs and trampolines after the linked policy code they call. */
	struct ptx_item *hdr = ptx_module_header_end(m), *blocks_last = first;
	for (unsigned i = 1; i < nblocks; i++)
		blocks_last = blocks_last->next;
	struct ptx_item *rest = blocks_last->next;
	blocks_last->next = NULL;
	if (rest)
		rest->prev = NULL;
	ptx_item_insert_after(m, hdr, first, blocks_last);
	if (rest)
		ptx_item_insert_after(m, pol->last ? pol->last : blocks_last, rest, last);
	return 0;
}
