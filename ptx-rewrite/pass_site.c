/* pass_site.c — a hook site emitted inline, where the hook is.
 *
 * Why inline and not a call to a trampoline .func: ptxas does not inline
 * .funcs, so every out-of-line trampoline cost a CALL/RET pair, a convergence
 * barrier around it and eager special-register reads, on the critical path
 * of every warp (+32 % on vadd with empty entry/exit hooks on the H200). At
 * the site the same warp-level model costs a few instructions:
 *
 *   {                                     // declarations of the site
 *   @!%guard bra END;                     // lanes whose instruction is off
 *   activemask.b32 %m;                    // the lanes that are here
 *   elect.sync %l|%q, %m;                 // sm_90+: one leader, its lane id
 *      (older targets: laneid, brev + bfind.shiftamt = lowest lane, setp)
 *   @!%q bra END;
 *   <context words the handler reads, computed here and only here:
 *    special registers are read by the leader, after the election>
 *   <handler body inlined, context loads → those registers>       (inline)
 *   | <the words stored to a per-thread .local struct gdev_ctx; call F> (call)
 *   END:
 *   }
 *
 * The context of a called handler lives in the thread's own .local copy:
 * two divergent lane groups of one warp reaching hooks at different times
 * each have their own leader, so a per-warp slot could be overwritten by one
 * group while the other's handler still reads it; a per-thread copy cannot.
 * Only the words the handler may read are stored (pass_inline.c), so an
 * analysable handler touches one or two local lines, not the whole struct.
 *
 * Without a policy the built-in handler is chosen by opts->stubs: ELIDE (the
 * empty handler has no effect, so the site is left out altogether), CALL
 * (election + call of an empty .func: the mechanism's cost), PROBE (a handler
 * reading every field, inlined) and PROBE_CALL (the same, called). Decisions
 * of entry/exit/mem/fence handlers are not used, so nothing is broadcast.
 * Every name starts with the module's fresh prefix. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx-rewrite/passes.h"

/* Inlining limits, in handler instructions (the JIT's tools: 60-260). */
#define PTX_INLINE_MAX 1024	/* entry/exit */
#define PTX_INLINE_MAX_MEM 160	/* mem/fence: one copy per memory instruction */

/* The built-in probe: reads all of struct gdev_ctx with the load shapes
 * LLVM emits (64-bit, vector, 32-bit into a 64-bit register) and stores
 * their hash only if it equals a constant, so ptxas keeps every read. */
static const char probe_fmt[] =
	".global .align 4 .u32 %s_probe_sink;\n"
	".func (.param .b32 %s_probe_r) %s_probe(.param .b64 %s_probe_c)\n{\n"
	"\t.reg .pred %%p<2>;\n\t.reg .b32 %%r<32>;\n\t.reg .b64 %%rd<8>;\n"
	"\tld.param.u64 %%rd1, [%s_probe_c];\n"
	"\tld.u64 %%rd2, [%%rd1];\n\tld.u64 %%rd3, [%%rd1+8];\n\tld.u64 %%rd4, [%%rd1+16];\n"
	"\tld.v2.u32 {%%r1, %%r2}, [%%rd1+24];\n"
	"\tld.v4.u32 {%%r3, %%r4, %%r5, %%r6}, [%%rd1+32];\n"
	"\tld.v4.u32 {%%r7, %%r8, %%r9, %%r10}, [%%rd1+48];\n"
	"\tld.v4.u32 {%%r11, %%r12, %%r13, %%r14}, [%%rd1+64];\n"
	"\tld.v4.u32 {%%r15, %%r16, %%r17, %%r18}, [%%rd1+80];\n"
	"\tld.v4.u32 {%%r19, %%r20, %%r21, %%r22}, [%%rd1+96];\n"
	"\tld.u32 %%rd5, [%%rd1+112];\n"
	"\txor.b64 %%rd2, %%rd2, %%rd3;\n\txor.b64 %%rd2, %%rd2, %%rd4;\n"
	"\txor.b64 %%rd2, %%rd2, %%rd5;\n\tcvt.u32.u64 %%r23, %%rd2;\n"
	"\tshr.u64 %%rd2, %%rd2, 32;\n\tcvt.u32.u64 %%r24, %%rd2;\n"
	"\txor.b32 %%r23, %%r23, %%r24;\n"
	"\txor.b32 %%r23, %%r23, %%r1;\n\txor.b32 %%r23, %%r23, %%r2;\n"
	"\txor.b32 %%r23, %%r23, %%r3;\n\txor.b32 %%r23, %%r23, %%r4;\n"
	"\txor.b32 %%r23, %%r23, %%r5;\n\txor.b32 %%r23, %%r23, %%r6;\n"
	"\txor.b32 %%r23, %%r23, %%r7;\n\txor.b32 %%r23, %%r23, %%r8;\n"
	"\txor.b32 %%r23, %%r23, %%r9;\n\txor.b32 %%r23, %%r23, %%r10;\n"
	"\txor.b32 %%r23, %%r23, %%r11;\n\txor.b32 %%r23, %%r23, %%r12;\n"
	"\txor.b32 %%r23, %%r23, %%r13;\n\txor.b32 %%r23, %%r23, %%r14;\n"
	"\txor.b32 %%r23, %%r23, %%r15;\n\txor.b32 %%r23, %%r23, %%r16;\n"
	"\txor.b32 %%r23, %%r23, %%r17;\n\txor.b32 %%r23, %%r23, %%r18;\n"
	"\txor.b32 %%r23, %%r23, %%r19;\n\txor.b32 %%r23, %%r23, %%r20;\n"
	"\txor.b32 %%r23, %%r23, %%r21;\n\txor.b32 %%r23, %%r23, %%r22;\n"
	"\tsetp.ne.u32 %%p1, %%r23, 1641009; /* never in practice: keeps the reads */\n"
	"\t@%%p1 bra $%s_probe_done;\n"
	"\tst.global.u32 [%s_probe_sink], %%r23;\n"
	"$%s_probe_done:\n"
	"\tmov.b32 %%r25, 0;\n\tst.param.b32 [%s_probe_r], %%r25;\n\tret;\n}\n";

static const char *probe_name(struct ptx_passes *ps)
{
	struct ptx_module *m = ps->m;
	const char *P = m->fresh_prefix;
	const char *name = ptx_sprintf(m, "%s_probe", P);
	if (!name || ps->probe_added)
		return name;
	char *text = NULL;
	if (asprintf(&text, probe_fmt, P, P, P, P, P, P, P, P, P) < 0)
		return NULL;
	struct ptx_item *first, *last;
	int err = ptx_parse_items(m, text, strlen(text), &first, &last);
	free(text);
	if (err)
		return NULL;
	struct ptx_item *hdr = ptx_module_header_end(m);
	ptx_item_insert_after(m, ps->policy_last ? ps->policy_last : hdr, first, last);
	ps->policy_last = last;
	ps->probe_added = 1;
	return name;
}

/* elect.sync: sm_90 and PTX ISA 8.0. */
static int can_elect(const struct ptx_module *m)
{
	return ptx_module_target_sm(m) >= 90 && m->version &&
	       m->version->version.major * 10 + m->version->version.minor >= 80;
}

static const char *fn_local(struct ptx_passes *ps, struct ptx_func *fn,
			    const struct ptx_handler *h, const char *from, const char *decl_fmt)
{
	struct ptx_module *m = ps->m;
	for (size_t i = 0; i < ps->nr_locals; i++) {
		struct ptx_site_local *l = &ps->locals[i];
		if (l->fn == fn && l->h == h && !strcmp(l->from, from))
			return l->to;
	}
	struct ptx_site_local *n = realloc(ps->locals, (ps->nr_locals + 1) * sizeof(*n));
	if (!n)
		return NULL;
	ps->locals = n;
	const char *to = h ? ptx_fresh_name(m, "", "d") : ptx_sprintf(m, "%s_lctx", m->fresh_prefix);
	if (!to || ptx_insert_text_before(m, fn, fn->head, NULL, decl_fmt, to))
		return NULL;
	ps->locals[ps->nr_locals++] = (struct ptx_site_local){fn, h, from, to};
	return to;
}

const char *ptx_site_local(struct ptx_passes *ps, struct ptx_func *fn, const struct ptx_handler *h,
			   const struct ptx_decl *d)
{
	struct ptx_decl c = *d;
	c.name = "%s";
	struct ptx_stmt s = {.kind = PTX_STMT_DECL, .decl = c};
	struct gx_buf b;
	gx_buf_init(&b);
	ptx_stmt_emit(&s, &b);
	const char *fmt = b.failed ? NULL : ptx_strdup(ps->m, b.data);
	gx_buf_free(&b);
	return fmt ? fn_local(ps, fn, h, d->name, fmt) : NULL;
}

/* The words of the context in W<i>, for the bits of `need` (leader only). */
static void emit_words(struct gx_buf *b, const char *P, const char *A, unsigned need,
		       unsigned long long kid, unsigned info, unsigned hook, const char *addr_setup)
{
	static const char *const sreg[12] = {"%ctaid.x", "%ctaid.y", "%ctaid.z", "%nctaid.x",
					     "%nctaid.y", "%nctaid.z", "%tid.x", "%tid.y",
					     "%tid.z", "%ntid.x", "%ntid.y", "%ntid.z"};
	if (need & 1u << 25) /* warpid = linear tid / 32 */
		need |= 0x1fu << 18;
	if (need & 1u << 27) /* unit = linear block id */
		need |= 0x1fu << 12;
	for (unsigned i = 0; i < PTX_CTX_WORDS; i++) {
		if (!(need & 1u << i))
			continue;
		switch (i) {
		case 0:
		case 1:
			gx_buf_printf(b, "mov.b32 %%%s_w%u, %u;\n", P, i,
				      (unsigned)(i ? kid >> 32 : kid & 0xffffffffu));
			break;
		case 4:
		case 5:
			if (i == 5 && (need & 1u << 4))
				break;
			if (addr_setup)
				gx_buf_printf(b, "%smov.b64 {%%%s_w4, %%%s_w5}, %s;\n", addr_setup, P, P,
					      A);
			else
				gx_buf_printf(b, "mov.b32 %%%s_w4, 0;\nmov.b32 %%%s_w5, 0;\n", P, P);
			break;
		case 6:
			gx_buf_printf(b, "mov.b32 %%%s_w6, %u;\n", P, info & 0xffff);
			break;
		case 7:
			gx_buf_printf(b, "mov.b32 %%%s_w7, %u;\n", P, info >> 16 & 0xff);
			break;
		case 8:
			gx_buf_printf(b, "mov.b32 %%%s_w8, %u;\n", P, info >> 24 & 0xff);
			break;
		case 9:
			gx_buf_printf(b, "mov.b32 %%%s_w9, %%%s_m;\n", P, P);
			break;
		case 10:
			gx_buf_printf(b, "popc.b32 %%%s_w10, %%%s_m;\n", P, P);
			break;
		case 11:
			gx_buf_printf(b, "mov.b32 %%%s_w11, %u;\n", P, hook);
			break;
		case 24:
			gx_buf_printf(b, "mov.u32 %%%s_w24, %%smid;\n", P);
			break;
		case 25:
			gx_buf_printf(b,
				      "mad.lo.u32 %%%s_t, %%%s_w20, %%%s_w22, %%%s_w19;\n"
				      "mad.lo.u32 %%%s_t, %%%s_t, %%%s_w21, %%%s_w18;\n"
				      "shr.u32 %%%s_w25, %%%s_t, 5;\n",
				      P, P, P, P, P, P, P, P, P, P);
			break;
		case 26:
			gx_buf_printf(b, "mov.b32 %%%s_w26, %%%s_l;\n", P, P);
			break;
		case 27:
			gx_buf_printf(b,
				      "mad.lo.u32 %%%s_t, %%%s_w14, %%%s_w16, %%%s_w13;\n"
				      "mad.lo.u32 %%%s_w27, %%%s_t, %%%s_w15, %%%s_w12;\n",
				      P, P, P, P, P, P, P, P);
			break;
		default:
			if (i >= 12 && i < 24)
				gx_buf_printf(b, "mov.u32 %%%s_w%u, %s;\n", P, i, sreg[i - 12]);
			else /* launch_id (0 until the shim numbers launches), pad */
				gx_buf_printf(b, "mov.b32 %%%s_w%u, 0;\n", P, i);
		}
	}
}

/* The words in `need` stored to the .local context at `ctx`. */
static void store_words(struct gx_buf *b, const char *P, unsigned need, const char *ctx)
{
	if (need & 1u << 25)
		need |= 0x1fu << 18;
	if (need & 1u << 27)
		need |= 0x1fu << 12;
	for (unsigned i = 0; i < PTX_CTX_WORDS; i++) {
		if (!(need & 1u << i))
			continue;
		if (!(i & 3) && (need >> i & 0xfu) == 0xfu) {
			gx_buf_printf(b, "st.local.v4.u32 [%s+%u], {%%%s_w%u, %%%s_w%u, %%%s_w%u, %%%s_w%u};\n",
				      ctx, 4 * i, P, i, P, i + 1, P, i + 2, P, i + 3);
			i += 3;
		} else if (!(i & 1) && (need & 1u << (i + 1))) {
			gx_buf_printf(b, "st.local.v2.u32 [%s+%u], {%%%s_w%u, %%%s_w%u};\n", ctx, 4 * i,
				      P, i, P, i + 1);
			i++;
		} else {
			gx_buf_printf(b, "st.local.u32 [%s+%u], %%%s_w%u;\n", ctx, 4 * i, P, i);
		}
	}
}

int ptx_site_insert(struct ptx_passes *ps, struct ptx_func *fn, struct ptx_stmt *pos,
		    unsigned hook, const char *func, unsigned long long kid,
		    const struct ptx_chain *addr, unsigned info, const char *guard, int guard_neg)
{
	struct ptx_module *m = ps->m;
	const struct gx_ptx_rewrite_opts *o = ps->ctx->opts;
	const char *P = m->fresh_prefix;
	const struct ptx_handler *h = NULL;
	int force_call = 0, stub = 0;
	if (!func) {
		switch (o->stubs) {
		case GX_PTX_STUBS_CALL:
			stub = 1;
			ps->stubs |= hook;
			func = ptx_sprintf(m, "%s_stub_%s", P, ptx_hook_name(hook));
			break;
		case GX_PTX_STUBS_PROBE:
		case GX_PTX_STUBS_PROBE_CALL:
			force_call = o->stubs == GX_PTX_STUBS_PROBE_CALL;
			func = probe_name(ps);
			break;
		default:
			ps->nr_elided++;
			return 0;
		}
		if (!func)
			return gx_err(-ENOMEM);
	}
	unsigned need = 0;
	int inl = 0;
	const char *A = ptx_tramp_addr_reg(ps);
	if (!A)
		return gx_err(-ENOMEM);
	if (!stub) {
		int err = ptx_handler_get(ps, func, &h);
		if (err)
			return err;
		need = h->words;
		/* entry/exit sites are few per kernel; a mem/fence handler is
		 * copied to every memory instruction, so only small ones are */
		size_t max = hook & (GDEV_HOOK_MEM | GDEV_HOOK_FENCE) ? PTX_INLINE_MAX_MEM
								      : PTX_INLINE_MAX;
		inl = h->inlinable && h->ninsn <= max && !force_call;
		if (!inl && !force_call && !h->logged) {
			struct ptx_handler *hw = (struct ptx_handler *)h;
			hw->logged = 1;
			ptx_pass_log(ps->ctx, "hooks: handler %s is called, not inlined (%s); "
				     "context words stored: %s", func,
				     !h->inlinable ? (h->why ? h->why : "?")
						   : "too large for this hook",
				     h->words == PTX_CTX_ALL_WORDS ? "all" : "those it reads");
		}
	}
	const char *end = ptx_fresh_name(m, "$", "Lh");
	if (!end)
		return gx_err(-ENOMEM);
	struct gx_buf hd, bd;
	gx_buf_init(&hd);
	gx_buf_init(&bd);
	gx_buf_printf(&hd, "{\n.reg .pred %%%s_q;\n.reg .b32 %%%s_m, %%%s_l, %%%s_t;\n", P, P, P, P);
	if (need)
		gx_buf_printf(&hd, ".reg .b32 %%%s_w<%d>;\n", P, PTX_CTX_WORDS);
	if (need & 0x30u)
		gx_buf_printf(&hd, ".reg .b64 %s;\n", A);
	if (!inl)
		gx_buf_printf(&hd, ".reg .b64 %%%s_x;\n.param .b64 %s_c0;\n.param .b32 %s_cr;\n", P,
			      P, P);
	if (guard)
		gx_buf_printf(&bd, "@%s%s bra %s;\n", guard_neg ? "" : "!", guard, end);
	gx_buf_printf(&bd, "activemask.b32 %%%s_m;\n", P);
	if (can_elect(m))
		gx_buf_printf(&bd, "elect.sync %%%s_l|%%%s_q, %%%s_m;\n", P, P, P);
	else
		gx_buf_printf(&bd,
			      "mov.u32 %%%s_t, %%laneid;\nbrev.b32 %%%s_l, %%%s_m;\n"
			      "bfind.shiftamt.u32 %%%s_l, %%%s_l;\nsetp.eq.u32 %%%s_q, %%%s_t, %%%s_l;\n",
			      P, P, P, P, P, P, P, P);
	gx_buf_printf(&bd, "@!%%%s_q bra %s;\n", P, end);
	char *addr_setup = NULL;
	if ((need & 0x30u) && addr && addr->head) {
		struct gx_buf ab;
		gx_buf_init(&ab);
		ptx_chain_emit(addr, &ab);
		addr_setup = ab.failed ? NULL : gx_buf_steal(&ab, NULL);
		gx_buf_free(&ab);
		if (!addr_setup) {
			gx_buf_free(&hd);
			gx_buf_free(&bd);
			return gx_err(-ENOMEM);
		}
	}
	emit_words(&bd, P, A, need, kid, info, hook, addr_setup);
	free(addr_setup);
	int err = 0;
	if (inl) {
		char W[64], T[64];
		snprintf(W, sizeof(W), "%%%s_w", P);
		snprintf(T, sizeof(T), "%%%s_t", P);
		err = ptx_handler_inline(ps, fn, h, &hd, &bd, W, T, end);
	} else if (stub || !need) {
		gx_buf_printf(&bd, "mov.u64 %%%s_x, 0;\n", P);
	} else {
		const char *ctx = fn_local(ps, fn, NULL, "", ".local .align 16 .b8 %s[128];");
		if (!ctx)
			err = -ENOMEM;
		else {
			store_words(&bd, P, need, ctx);
			gx_buf_printf(&bd, "mov.u64 %%%s_x, %s;\ncvta.local.u64 %%%s_x, %%%s_x;\n", P,
				      ctx, P, P);
		}
	}
	if (!inl)
		gx_buf_printf(&bd, "st.param.b64 [%s_c0], %%%s_x;\ncall (%s_cr), %s, (%s_c0);\n", P,
			      P, P, func, P);
	gx_buf_printf(&bd, "%s:\n}\n", end);
	if (!err && (hd.failed || bd.failed))
		err = -ENOMEM;
	if (!err) {
		gx_buf_puts(&hd, bd.data);
		err = hd.failed ? -ENOMEM
				: ptx_insert_text_before(m, fn, pos, NULL, "%s", hd.data);
	}
	gx_buf_free(&hd);
	gx_buf_free(&bd);
	if (err)
		return gx_err(err);
	ps->ctx->res->nr_hooks++;
	return 0;
}
