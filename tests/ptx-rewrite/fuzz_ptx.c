/* libFuzzer target for the PTX parser and emitter (and, through
 * gx_ptx_rewrite, the passes): any bytes must either parse, or fail with a
 * "line:col: message" error; what parses must emit text that parses again to
 * the same text (the emitter's fixpoint); editing helpers and every pass must
 * not crash on whatever parsed. Build: make; run: make fuzz-ptx. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx-rewrite/copy_state_internal.h"
#include "ptx-rewrite/gx_ptx.h"
#include "ptx-rewrite/ptx_ir_internal.h"

static void check_err(const char *err)
{
	unsigned l, c;
	/* "line:col: message" or "snippet:line:col: message" */
	if (!strncmp(err, "snippet:", 8))
		err += 8;
	if (sscanf(err, "%u:%u: ", &l, &c) != 2 && strcmp(err, "out of memory")) {
		fprintf(stderr, "bad error message: '%s'\n", err);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	const char *text = (const char *)data;
	struct ptx_module *m = ptx_module_parse(text, size, err, sizeof(err));
	if (!m) {
		check_err(err);
		return 0;
	}
	struct gx_buf e1, e2;
	gx_buf_init(&e1);
	gx_buf_init(&e2);
	if (ptx_module_emit(m, &e1))
		abort();
	struct ptx_module *m2 = ptx_module_parse(e1.data, e1.len, err, sizeof(err));
	if (!m2) {
		fprintf(stderr, "emitted text does not parse: %s\n---\n%s\n", err, e1.data);
		abort();
	}
	if (ptx_module_emit(m2, &e2) || e1.len != e2.len || memcmp(e1.data, e2.data, e1.len)) {
		fprintf(stderr, "not a fixpoint\n--- first\n%s\n--- second\n%s\n", e1.data, e2.data);
		abort();
	}
	/* module state a copy could not share (gpuext attach): any answer, no crash */
	char vname[64];
	(void)ptx_copy_unsafe(m, vname, sizeof(vname));
	(void)ptx_copy_unsafe(m, NULL, 0);
	/* the first .func with a body: bound as a handler below */
	char hname[128] = "f";
	ptx_for_each_item(m, it) if (it->kind == PTX_ITEM_FUNC && !it->func.is_entry && it->func.has_body)
	{
		snprintf(hname, sizeof(hname), "%s", it->func.name);
		break;
	}
	/* editing helpers on every function body */
	ptx_for_each_item(m, it)
	{
		if (it->kind != PTX_ITEM_FUNC || !it->func.has_body)
			continue;
		struct ptx_func *fn = &it->func;
		const char *r = ptx_new_reg(m, fn, ".b32");
		if (r && ptx_insert_text_before(m, fn, ptx_func_entry_point(fn), NULL, "mov.u32 %s, %%tid.x;", r))
			abort();
		for (struct ptx_stmt *s = fn->head; s; s = s->next) {
			if (s->kind != PTX_STMT_INSN)
				continue;
			struct ptx_opinfo oi;
			struct ptx_call_parts cp;
			if (ptx_classify(&s->insn, &oi) == PTX_OP_CALL)
				ptx_call_parts(&s->insn, &cp);
		}
	}
	gx_buf_free(&e1);
	gx_buf_init(&e1);
	if (ptx_module_emit(m, &e1))
		abort();
	/* the same bytes as statements (snippet parser) */
	struct ptx_stmt *f, *l;
	if (ptx_parse_stmts(m, text, size, &f, &l))
		check_err(m->err);
	ptx_module_free(m2);
	ptx_module_free(m);
	gx_buf_free(&e1);
	gx_buf_free(&e2);

	/* every pass: may refuse, must not crash (small inputs: keeps the rate up) */
	if (size > 8192)
		return 0;
	struct gx_ptx_rewrite_opts o = {
		.sz = sizeof(o), .hooks = 0xf, .persistent = size & 1, .stubs = (unsigned)(size >> 1) % 4
	};
	struct gx_ptx_rewrite_result res;
	if (gx_ptx_rewrite(text, size, &o, &res) == 0 && !res.ptx)
		abort();
	gx_ptx_rewrite_result_free(&res);
	/* the input as a policy whose first .func handles every hook of a
	 * small kernel: the handler analysis and the inliner (handler.c, inline.c) */
	static const char app[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
				  ".visible .entry k(.param .u64 p)\n{\n.reg .b64 %rd<3>;\n.reg .pred %p<2>;\n"
				  "ld.param.u64 %rd1, [p];\nsetp.eq.u64 %p1, %rd1, 0;\n@%p1 ret;\n"
				  "ld.global.u64 %rd2, [%rd1+8];\nst.global.u64 [%rd1], %rd2;\nret;\n}\n";
	const struct gx_hook_binding bd[] = { { GDEV_HOOK_ENTRY, NULL, hname },
					      { GDEV_HOOK_EXIT, NULL, hname },
					      { GDEV_HOOK_MEM, NULL, hname },
					      { GDEV_HOOK_FENCE, NULL, hname } };
	struct gx_ptx_rewrite_opts po = {
		.sz = sizeof(po), .hooks = 0xf, .policy_ptx = text, .policy_len = size, .bindings = bd, .nr_bindings = 4
	};
	if (gx_ptx_rewrite(app, sizeof(app) - 1, &po, &res) == 0 && !res.ptx)
		abort();
	gx_ptx_rewrite_result_free(&res);
	/* the input as the application, a fixed handler as a block probe: the
	 * placement's scan of the kernels and of what they call (pass_hooks.c:
	 * block_site, blk_scan — recursion, indirect and extern calls) */
	static const char blk[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
				  ".visible .func (.param .b32 r) gx_blk(.param .b64 ctx)\n{\n.reg .b32 %r<2>;\n"
				  "mov.b32 %r1, 0;\nst.param.b32 [r], %r1;\nret;\n}\n";
	const struct gx_hook_binding bb = { GDEV_HOOK_BLOCK, NULL, "gx_blk" };
	struct gx_ptx_rewrite_opts bo = { .sz = sizeof(bo),
					  .hooks = GDEV_HOOK_BLOCK,
					  .policy_ptx = blk,
					  .policy_len = sizeof(blk) - 1,
					  .bindings = &bb,
					  .nr_bindings = 1 };
	if (gx_ptx_rewrite(text, size, &bo, &res) == 0 && !res.ptx)
		abort();
	gx_ptx_rewrite_result_free(&res);
	/* the same before the first barrier every thread passes once
	 * (block_barrier.c: the statement graph, labels, branches, loops),
	 * with the warp index set at each function's start (site_words.c) */
	bo.flags = GX_PTX_F_BLOCK_BARRIER | GX_PTX_F_HOIST_WARP;
	if (gx_ptx_rewrite(text, size, &bo, &res) == 0 && !res.ptx)
		abort();
	gx_ptx_rewrite_result_free(&res);
	/* the input as the application, the same handler bound to memory
	 * accesses and sampled 1 in 16 (site_sample.c): a countdown before the
	 * election (the default), a voted hash there (GX_PTX_F_SAMPLE_EARLY),
	 * the leader's hash after it (GX_PTX_F_SAMPLE_LEADER, inlined and, with
	 * the test folded into the leader flag, called by every lane), and the
	 * leader alone calling (GX_PTX_F_MEM_LEADER_CALL); samples in loops
	 * kept for the loops' ways out (GX_PTX_F_MEM_DEFER) */
	const struct gx_hook_binding mb = { GDEV_HOOK_MEM, NULL, "gx_blk" };
	const unsigned every = 16;
	struct gx_ptx_rewrite_opts mo = { .sz = sizeof(mo),
					  .hooks = GDEV_HOOK_MEM,
					  .policy_ptx = blk,
					  .policy_len = sizeof(blk) - 1,
					  .bindings = &mb,
					  .nr_bindings = 1,
					  .bind_samples = &every };
	static const unsigned mflags[] = { 0,
					   GX_PTX_F_SAMPLE_EARLY,
					   GX_PTX_F_SAMPLE_LEADER | GX_PTX_F_SAMPLE_INLINE,
					   GX_PTX_F_SAMPLE_LEADER | GX_PTX_F_MEM_SMALL_INLINE,
					   GX_PTX_F_MEM_SMALL_INLINE | GX_PTX_F_MEM_LEADER_CALL,
					   GX_PTX_F_MEM_DEFER,
					   GX_PTX_F_MEM_DEFER | GX_PTX_F_MEM_SMALL_INLINE };
	for (size_t i = 0; i < sizeof(mflags) / sizeof(mflags[0]); i++) {
		mo.flags = mflags[i];
		if (gx_ptx_rewrite(text, size, &mo, &res) == 0 && !res.ptx)
			abort();
		gx_ptx_rewrite_result_free(&res);
	}
	return 0;
}
