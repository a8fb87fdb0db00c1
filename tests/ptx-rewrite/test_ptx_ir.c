/* Unit tests of the PTX parser, IR helpers and emitter: what each construct
 * parses into, the editing API the passes rely on, opcode classification,
 * error messages (`line:col: message`, a table), and gx_ptx_rewrite()'s
 * argument handling. Corpus-wide round trips live in test_corpus.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/gx_test.h"
#include "ptx-rewrite/gx_ptx.h"
#include "ptx-rewrite/ptx_ir_internal.h"
#include "ptx-rewrite/cfg_pdom_internal.h"
#include "ptx-rewrite/copy_state_internal.h"

static const char *emit_str(struct ptx_module *m, struct gx_buf *b)
{
	gx_buf_free(b);
	gx_buf_init(b);
	ptx_module_emit(m, b);
	return b->data ? b->data : "";
}

static struct ptx_module *parse(const char *s)
{
	char err[256];
	struct ptx_module *m = ptx_module_parse(s, strlen(s), err, sizeof(err));
	if (!m)
		printf("# parse failed: %s\n", err);
	return m;
}

static struct ptx_func *func_named(struct ptx_module *m, const char *name)
{
	struct ptx_item *it = ptx_find_func(m, name);
	return it ? &it->func : NULL;
}

static struct ptx_stmt *nth_insn(struct ptx_func *fn, int n)
{
	for (struct ptx_stmt *s = fn->head; s; s = s->next)
		if (s->kind == PTX_STMT_INSN && n-- == 0)
			return s;
	return NULL;
}

static const char *opnd_str(const struct ptx_opnd *o)
{
	static struct gx_buf b;
	gx_buf_free(&b);
	gx_buf_init(&b);
	ptx_opnd_emit(o, &b);
	return b.data ? b.data : "";
}

static const char *MOD1 =
	".version 8.5\n"
	".target sm_90a, debug\n"
	".address_size 64\n"
	"// a comment\n"
	".file 1 \"/tmp/a.cu\"\n"
	".extern .func (.param .b32 func_retval0) vprintf(.param .b64 p0, .param .b64 p1);\n"
	".visible .global .align 8 .u64 tab[2] = {1, 2};\n"
	".global .attribute(.managed) .align 4 .b32 mv;\n"
	".extern .shared .align 16 .b8 dyn[];\n"
	".const .align 4 .f32 c3[3][2] = {{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}};\n"
	".global .texref tx;\n"
	".visible .entry k(\n"
	"\t.param .u64 .ptr .global .align 16 k_p0,\n"
	"\t.param .align 8 .b8 k_p1[16]\n"
	")\n"
	".maxntid 128, 1, 1\n"
	".minnctapersm 2\n"
	"{\n"
	"\t.reg .pred %p<3>;\n"
	"\t.reg .b32 %r<10>, extra;\n"
	"\t.reg .b64 %rd<5>;\n"
	"\t.reg .f32 %f<5>;\n"
	"\t.shared .align 4 .b8 sbuf[1024];\n"
	"\tld.param.u64 %rd1, [k_p0];\n"
	"\tmov.u32 %r1, %tid.x;\n"
	"\tsetp.ne.s32 %p1, %r1, -1;\n"
	"\t@!%p1 bra $L__BB0_2;\n"
	"\tld.global.nc.v4.f32 {%f1, %f2, _, %f4}, [%rd1+-16];\n"
	"\tst.shared.u8 [sbuf+3], %r1;\n"
	"\tatom.global.cas.b64 %rd2, [%rd1], %rd3, %rd4;\n"
	"\tred.add.f32 [%rd1+0x10], 0f3F800000;\n"
	"\tshfl.sync.bfly.b32 %r2|%p2, %r1, 16, 31, -1;\n"
	"\tmov.u64 %rd4, tab+8;\n"
	"\t{\n"
	"\t.reg .pred p;\n"
	"\tsetp.eq.u32 p, %r1, 0;\n"
	"\t@p membar.gl;\n"
	"\t}\n"
	"\t.loc 1 12 3\n"
	"$L__BB0_2:\n"
	"\tret;\n"
	"}\n";

static void test_module_structure(void)
{
	struct ptx_module *m = parse(MOD1);
	GX_CHECK(m, "parse a module with every top-level construct");
	if (!m)
		return;
	GX_CHECK(m->version && m->version->version.major == 8 && m->version->version.minor == 5,
		 ".version parsed into major.minor");
	GX_CHECK(m->target && m->target->target.n == 2 &&
			 !strcmp(m->target->target.names[0], "sm_90a") &&
			 !strcmp(m->target->target.names[1], "debug"),
		 ".target parsed into names");
	GX_CHECK(m->address_size && m->address_size->address_size == 64, ".address_size parsed");
	int nverb = 0, ndecl = 0, nfunc = 0;
	const struct ptx_decl *tab = NULL, *mv = NULL, *dyn = NULL, *c3 = NULL;
	ptx_for_each_item(m, it) {
		if (it->kind == PTX_ITEM_VERBATIM)
			nverb++;
		if (it->kind == PTX_ITEM_FUNC)
			nfunc++;
		if (it->kind != PTX_ITEM_DECL)
			continue;
		ndecl++;
		if (!strcmp(it->decl.name, "tab"))
			tab = &it->decl;
		if (!strcmp(it->decl.name, "mv"))
			mv = &it->decl;
		if (!strcmp(it->decl.name, "dyn"))
			dyn = &it->decl;
		if (!strcmp(it->decl.name, "c3"))
			c3 = &it->decl;
	}
	GX_CHECK(nverb == 1 && ndecl == 5 && nfunc == 2, ".file verbatim, 5 globals, 2 functions");
	GX_CHECK(tab && tab->linkage == PTX_LINK_VISIBLE && tab->space == PTX_SPACE_GLOBAL &&
			 tab->align == 8 && !strcmp(tab->type, ".u64") && tab->ndims == 1 &&
			 tab->dims[0] == 2 && tab->init && !strcmp(tab->init, "{1, 2}"),
		 "global with linkage, align, array and initialiser");
	GX_CHECK(mv && mv->attr && !strcmp(mv->attr, ".attribute(.managed)"), ".attribute kept");
	GX_CHECK(dyn && dyn->linkage == PTX_LINK_EXTERN && dyn->space == PTX_SPACE_SHARED &&
			 dyn->ndims == 1 && dyn->dims[0] == -1,
		 "extern shared unsized array");
	GX_CHECK(c3 && c3->space == PTX_SPACE_CONST && c3->ndims == 2 && c3->dims[1] == 2,
		 "two-dimensional const array");

	struct ptx_func *vp = func_named(m, "vprintf");
	GX_CHECK(vp && !vp->has_body && vp->linkage == PTX_LINK_EXTERN && vp->nrets == 1 &&
			 vp->nparams == 2 && !strcmp(vp->rets[0].name, "func_retval0"),
		 "extern .func declaration with return and parameters");
	struct ptx_func *k = func_named(m, "k");
	GX_CHECK(k && k->is_entry && k->has_body && k->nparams == 2, ".entry with two params");
	if (!k)
		goto out;
	GX_CHECK(k->params[0].is_ptr && !strcmp(k->params[0].ptr_space, ".global") &&
			 k->params[0].ptr_align == 16 && !strcmp(k->params[0].type, ".u64"),
		 "param .ptr .global .align 16");
	GX_CHECK(k->params[1].align == 8 && k->params[1].ndims == 1 && k->params[1].dims[0] == 16,
		 "param .align 8 .b8 name[16]");
	GX_CHECK(k->nperf == 2 && !strcmp(k->perf[0].name, ".maxntid") && k->perf[0].nvals == 3 &&
			 k->perf[0].vals[0] == 128 && k->perf[1].vals[0] == 2,
		 "performance directives with values");

	int decls = 0, opens = 0, closes = 0, labels = 0, verb = 0;
	const struct ptx_decl *range = NULL;
	for (struct ptx_stmt *s = k->head; s; s = s->next) {
		decls += s->kind == PTX_STMT_DECL;
		opens += s->kind == PTX_STMT_OPEN;
		closes += s->kind == PTX_STMT_CLOSE;
		labels += s->kind == PTX_STMT_LABEL;
		verb += s->kind == PTX_STMT_VERBATIM;
		if (s->kind == PTX_STMT_DECL && !strcmp(s->decl.name, "%r"))
			range = &s->decl;
	}
	GX_CHECK(decls == 7 && opens == 1 && closes == 1 && labels == 1 && verb == 1,
		 "body: 7 decls (multi-name split), a scope, a label, .loc verbatim (got %d %d %d %d %d)",
		 decls, opens, closes, labels, verb);
	GX_CHECK(range && range->range == 10 && range->space == PTX_SPACE_REG, "%%r<10> range");

	struct ptx_stmt *s = nth_insn(k, 3);
	GX_CHECK(s && s->insn.guard && !strcmp(s->insn.guard, "%p1") && s->insn.guard_neg &&
			 !strcmp(s->insn.opcode, "bra"),
		 "guard @!%%p1");
	s = nth_insn(k, 1);
	GX_CHECK(s && s->insn.nops == 2 && s->insn.ops[1]->kind == PTX_OPND_ID &&
			 !strcmp(s->insn.ops[1]->text, "%tid.x"),
		 "special register with component is one ID");
	s = nth_insn(k, 2);
	GX_CHECK(s && s->insn.ops[2]->kind == PTX_OPND_INT && s->insn.ops[2]->ival == -1,
		 "negative integer immediate");
	s = nth_insn(k, 4);
	GX_CHECK(s && s->insn.nmods == 4 && !strcmp(s->insn.mods[0], ".global") &&
			 !strcmp(s->insn.mods[3], ".f32") && s->insn.ops[0]->kind == PTX_OPND_VEC &&
			 s->insn.ops[0]->n == 4 && s->insn.ops[0]->elems[2]->kind == PTX_OPND_SINK &&
			 s->insn.ops[1]->kind == PTX_OPND_ADDR && s->insn.ops[1]->off == -16,
		 "vector destination with sink, address with negative offset");
	struct ptx_opinfo oi;
	GX_CHECK(s && ptx_classify(&s->insn, &oi) == PTX_OP_LD && oi.space == PTX_SPACE_GLOBAL &&
			 oi.vec == 4 && oi.elem_size == 4 && oi.size == 16 && oi.addr_op == 1 && oi.nc,
		 "classify ld.global.nc.v4.f32");
	s = nth_insn(k, 5);
	GX_CHECK(s && ptx_classify(&s->insn, &oi) == PTX_OP_ST && oi.space == PTX_SPACE_SHARED &&
			 oi.size == 1 && oi.addr_op == 0 &&
			 !strcmp(opnd_str(s->insn.ops[0]), "[sbuf+3]"),
		 "classify st.shared.u8, [sym+off]");
	s = nth_insn(k, 6);
	GX_CHECK(s && ptx_classify(&s->insn, &oi) == PTX_OP_ATOM && oi.space == PTX_SPACE_GLOBAL &&
			 oi.size == 8 && oi.addr_op == 1,
		 "classify atom.global.cas.b64");
	s = nth_insn(k, 7);
	GX_CHECK(s && ptx_classify(&s->insn, &oi) == PTX_OP_RED && oi.space == PTX_SPACE_GENERIC &&
			 oi.size == 4 && s->insn.ops[0]->off == 16 &&
			 s->insn.ops[1]->kind == PTX_OPND_FLOAT,
		 "classify generic red.add.f32, hex offset, float immediate");
	s = nth_insn(k, 8);
	GX_CHECK(s && s->insn.ops[0]->kind == PTX_OPND_PIPE &&
			 !strcmp(opnd_str(s->insn.ops[0]), "%r2|%p2"),
		 "setp-style a|b destination");
	s = nth_insn(k, 9);
	GX_CHECK(s && s->insn.ops[1]->kind == PTX_OPND_EXPR && !strcmp(s->insn.ops[1]->text, "tab+8"),
		 "unmodelled operand expression kept verbatim");
	s = nth_insn(k, 11);
	GX_CHECK(s && ptx_classify(&s->insn, &oi) == PTX_OP_FENCE && s->insn.guard, "membar is a fence");
	s = nth_insn(k, 12);
	GX_CHECK(s && ptx_classify(&s->insn, &oi) == PTX_OP_RET, "ret");
	GX_CHECK(s && s->line == 41 && s->col == 2, "source position of ret is 41:2 (got %u:%u)",
		 s ? s->line : 0, s ? s->col : 0);

	/* emit: fixpoint and content */
	struct gx_buf b1, b2;
	gx_buf_init(&b1);
	gx_buf_init(&b2);
	const char *t1 = emit_str(m, &b1);
	struct ptx_module *m2 = parse(t1);
	const char *t2 = m2 ? emit_str(m2, &b2) : "";
	GX_CHECK(m2 && !strcmp(t1, t2), "emit(parse(emit(m))) == emit(m)");
	GX_CHECK(strstr(t1, "\tld.global.nc.v4.f32\t{%f1, %f2, _, %f4}, [%rd1+-16];\n") &&
			 strstr(t1, ".file 1 \"/tmp/a.cu\"\n") && strstr(t1, "\t.loc 1 12 3\n") &&
			 strstr(t1, ".global .attribute(.managed) .align 4 .b32 mv;\n") &&
			 !strstr(t1, "a comment"),
		 "emitted text keeps verbatim items, drops comments");
	ptx_module_free(m2);
	gx_buf_free(&b1);
	gx_buf_free(&b2);

	/* An operand kept verbatim ends at its last character of code: a line
	 * comment after it, then the ';' on the next line, was emitted as
	 * `(r}//;` — the ';' commented out (fuzz_ptx) */
	struct ptx_module *v = parse(".version 8.0\n.target sm_90\n.address_size 64\n"
				     ".func o()\n{\n\tfoo (r} // note\n\t;\n\tret;\n}\n");
	gx_buf_init(&b1);
	gx_buf_init(&b2);
	t1 = v ? emit_str(v, &b1) : "";
	m2 = v ? parse(t1) : NULL;
	t2 = m2 ? emit_str(m2, &b2) : "";
	GX_CHECK(v && m2 && !strcmp(t1, t2) && strstr(t1, "\tfoo\t(r};\n") && !strstr(t1, "note"),
		 "a verbatim operand before a comment: emitted without it, re-parsed alike");
	ptx_module_free(m2);
	ptx_module_free(v);
	gx_buf_free(&b1);
	gx_buf_free(&b2);
out:
	ptx_module_free(m);
}

static void test_editing(void)
{
	const char *src = ".version 8.0\n.target sm_80\n.address_size 64\n"
			  ".visible .entry e()\n{\n\t.reg .b32 %r<3>;\n\tmov.u32 %r1, 1;\n"
			  "\t@%p bra L1;\nL1:\n\texit;\n}\n";
	struct ptx_module *m = parse(src);
	GX_CHECK(m, "parse editing fixture");
	if (!m)
		return;
	struct ptx_func *fn = func_named(m, "e");
	struct ptx_stmt *entry = ptx_func_entry_point(fn);
	GX_CHECK(entry && entry->kind == PTX_STMT_INSN && !strcmp(entry->insn.opcode, "mov"),
		 "entry point is after the declarations");
	const char *r = ptx_new_reg(m, fn, ".b32");
	const char *r2 = ptx_new_reg(m, fn, ".pred");
	GX_CHECK(r && r2 && strcmp(r, r2) && !strncmp(r, "%__gx_r", 7), "fresh registers %s %s", r, r2);
	struct ptx_stmt *first = NULL;
	int err = ptx_insert_text_before(m, fn, entry, &first,
					 "mov.u32 %s, %%tid.x;\nsetp.eq.u32 %s, %s, 0;", r, r2, r);
	GX_CHECK(!err && first && first->kind == PTX_STMT_INSN && first->line == 0 &&
			 first->next->next == entry,
		 "insert two parsed statements before the entry point");
	struct ptx_stmt *ex = NULL;
	ptx_for_each_stmt(fn, s, nxt) {
		struct ptx_opinfo oi;
		if (s->kind == PTX_STMT_INSN && ptx_classify(&s->insn, &oi) == PTX_OP_EXIT)
			ex = s;
	}
	err = ex ? ptx_insert_text_after(m, fn, ex->prev, NULL, "membar.cta;") : -1;
	GX_CHECK(!err && ex && ex->prev->kind == PTX_STMT_INSN &&
			 !strcmp(ex->prev->insn.opcode, "membar"),
		 "insert after the label, before exit");
	const char *l = ptx_fresh_name(m, "$", "L");
	GX_CHECK(l && !strncmp(l, "$__gx_L", 7), "fresh label %s", l);
	struct ptx_stmt *f, *la;
	err = ptx_parse_stmts(m, "mov.u32 %r1, ;", 14, &f, &la);
	GX_CHECK(err == -EINVAL && strstr(m->err, "snippet:1:"), "snippet error names the snippet: %s",
		 m->err);
	struct ptx_item *i1, *i2;
	err = ptx_parse_items(m, ".func (.param .b32 r) __gx_stub(.param .b64 c)\n{\n\tst.param.b32 [r], 0;\n\tret;\n}\n",
			      78, &i1, &i2);
	GX_CHECK(!err && i1 && i1 == i2 && i1->kind == PTX_ITEM_FUNC, "parse top-level snippet items");
	if (!err)
		ptx_item_insert_after(m, m->address_size, i1, i2);
	struct ptx_decl d = {.space = PTX_SPACE_PARAM, .space_str = ".param", .type = ".u64", .name = "e_extra"};
	GX_CHECK(!ptx_func_add_param(m, fn, &d) && fn->nparams == 1, "add a parameter");
	struct gx_buf b;
	gx_buf_init(&b);
	const char *t = emit_str(m, &b);
	GX_CHECK(strstr(t, ".address_size 64\n\n\n.func (.param .b32 r) __gx_stub(") &&
			 strstr(t, "\tmov.u32\t%__gx_r0, %tid.x;\n\tsetp.eq.u32\t%__gx_r1, %__gx_r0, 0;\n\tmov.u32\t%r1, 1;") &&
			 strstr(t, "L1:\n\tmembar.cta;\n\texit;") && strstr(t, ".entry e(\n\t.param .u64 e_extra\n)"),
		 "edits appear in the emitted text");
	if (gx_test_failed)
		printf("# %s", t);
	gx_buf_free(&b);
	ptx_module_free(m);

	/* fresh names avoid names already in the input */
	m = parse(".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry e2()\n{\n"
		  "\t.reg .b32 %__gx_r0;\n\tmov.u32 %__gx_r0, 0;\n\tret;\n}\n");
	GX_CHECK(m && strcmp(m->fresh_prefix, "__gx"), "prefix changes when the input uses %%__gx_*: %s",
		 m ? m->fresh_prefix : "?");
	if (m) {
		const char *r3 = ptx_new_reg(m, func_named(m, "e2"), ".b32");
		GX_CHECK(r3 && strcmp(r3, "%__gx_r0"), "fresh register %s does not clash", r3);
	}
	ptx_module_free(m);
}

static void test_call_parts(void)
{
	struct ptx_module *m = parse(".version 8.0\n.target sm_80\n.address_size 64\n"
				     ".func (.param .b32 r) f(.param .b32 a);\n"
				     ".visible .entry e()\n{\n\t.reg .b64 %rd<2>;\n"
				     "\t{\n\t.param .b32 p0;\n\t.param .b32 rv;\n"
				     "\tcall.uni (rv), f, (p0);\n\t}\n"
				     "\tproto: .callprototype (.param .b32 _) _ (.param .b32 _);\n"
				     "\t{\n\t.param .b32 p0;\n\t.param .b32 rv;\n"
				     "\tcall (rv), %rd1, (p0), proto;\n\t}\n"
				     "\tcall.uni f2, ();\n\tret;\n}\n");
	GX_CHECK(m, "parse calls and a prototype");
	if (!m)
		return;
	struct ptx_func *fn = func_named(m, "e");
	struct ptx_call_parts cp;
	struct ptx_stmt *s = nth_insn(fn, 0);
	GX_CHECK(s && !ptx_call_parts(&s->insn, &cp) && cp.rets && cp.rets->n == 1 &&
			 !strcmp(cp.callee->text, "f") && cp.args->n == 1 && !cp.proto,
		 "direct call parts");
	s = nth_insn(fn, 1);
	GX_CHECK(s && !ptx_call_parts(&s->insn, &cp) && !strcmp(cp.callee->text, "%rd1") && cp.proto &&
			 !strcmp(cp.proto->text, "proto"),
		 "indirect call with prototype");
	s = nth_insn(fn, 2);
	GX_CHECK(s && !ptx_call_parts(&s->insn, &cp) && !cp.rets && cp.args && cp.args->n == 0,
		 "call without return value, empty argument list");
	struct gx_buf b;
	gx_buf_init(&b);
	GX_CHECK(strstr(emit_str(m, &b), "proto: .callprototype (.param .b32 _) _ (.param .b32 _);\n"),
		 "label and .callprototype stay on one line");
	gx_buf_free(&b);
	ptx_module_free(m);
}

/* Error table: input → exact "line:col: message". */
static const struct {
	const char *in;
	const char *err;
} errors[] = {
	{".version 8.0\n.target sm_80\n.entry k()\n{\n\tmov.u32 %r1, 1\n}\n",
	 "6:1: expected ',' or ';' after an operand, found '}'"},
	{".version 8.0\n.entry k()\n{\n\tret;\n", "5:1: unexpected end of input in function body (missing '}')"},
	{".version x\n", "1:10: expected a version number, found 'x'"},
	{".version 8.0\nfoo\n", "2:1: expected a directive, found 'foo'"},
	{".version 8.0\n.entry k()\n{\n\tmov.u32 %r1, \"s;\n}\n", "4:15: unterminated string"},
	{".version 8.0\n/* open", "2:1: unterminated comment"},
	{".version 8.0\n.entry k()\n{\n\t#\n}\n", "4:2: unexpected character '#'"},
	{".version 8.0\n.entry k()\n{\n\t\x01\n}\n", "4:2: unexpected byte 0x01"},
	{".version 8.0\x00\n", "1:13: NUL byte in the text (a PTX image ends at its first NUL)"},
	{"", "1:1: empty input: no PTX (expected .version)"},
	{"// a comment\n\n", "3:1: empty input: no PTX (expected .version)"},
	{".version 8.0\n.entry k()\n{\n\t.reg .b32 %r<16777216>;\n}\n",
	 "4:15: register count 16777216 out of range (at most 16777215)"},
	{".version 8.0\n.entry k()\n{\n\t.reg .b32 %r<99999999999999999999999>;\n}\n",
	 "4:15: register count 99999999999999999999999 out of range (at most 16777215)"},
	{".version 8.0\n.global .b8 a[281474976710657];\n",
	 "2:15: array size 281474976710657 out of range (at most 2^48 elements)"},
	{".version 8.0\n.global .b8 a[65536][65536][65537];\n",
	 "2:29: array size 65537 out of range (at most 2^48 elements)"},
	{".version 8.0\n.entry k()\n{\n\tmov.u64 %rd1, 0x10000000000000000;\n}\n",
	 "4:16: integer constant 0x10000000000000000 does not fit in 64 bits"},
	{".version 8.0\n.entry k()\n{\n\tld.u32 %r1, [%rd1+281474976710657];\n}\n",
	 "4:20: address offset 281474976710657 out of range (at most 2^48)"},
	{".version 8.0\n.address_size 48\n", "2:1: address size must be 32 or 64"},
	{".version 8.0\n.entry k(.param .u32)\n{\n}\n", "2:10: invalid parameter declaration"},
	{".version 8.0\n.entry k()\n.maxntid 1,\n{\n}\n", "4:1: expected an integer, found '{'"},
	{".version 8.0\n.entry k()\n{\n\t%r1 ret;\n}\n", "4:2: expected an instruction, found '%r1'"},
	{".version 8.0\n.entry k()\n{\n\t@ ret;\n}\n", "4:7: expected an instruction, found ';'"},
	{".version 8.0\n.entry k()\n", "3:1: expected '{' or ';' after the function header, found end of input"},
	{".version 8.0\n.entry ()\n", "2:8: expected a function name, found '('"},
	{".version 8.0\n.pragma \"x\"\n", "2:1: unterminated directive (missing ';')"},
	{".version 8.0\n.entry k()\n{\n\tadd.s32 %r1, 0x;\n}\n", "4:15: invalid integer constant"},
	{".version 8.0\n.entry k()\n{\n\tmov.f32 %f1, 0f3F80;\n}\n", "4:15: invalid floating-point constant"},
	{".version 8.0\n.entry k()\n{\n\tmov.u32 %r1, 12ab;\n}\n", "4:15: invalid numeric constant"},
	{".version 8.0\n.section .debug_info {\n.b8 1\n", "2:1: unterminated directive (missing ';')"},
	{".version 8.0\n.alias a, b);\n", "2:12: unbalanced ')'"},
};

static void test_errors(void)
{
	for (size_t i = 0; i < GX_ARRAY_SIZE(errors); i++) {
		char err[256] = "";
		size_t len = strlen(errors[i].in);
		if (strstr(errors[i].err, "NUL byte"))
			len = 14;
		struct ptx_module *m = ptx_module_parse(errors[i].in, len, err, sizeof(err));
		GX_CHECK(!m && errno == EINVAL && !strcmp(err, errors[i].err), "error %zu: '%s' (got '%s')", i,
			 errors[i].err, err);
		ptx_module_free(m);
	}
	/* deep operand nesting is an error, not a stack overflow */
	char deep[400];
	int n = snprintf(deep, sizeof(deep), ".version 8.0\n.entry k()\n{\n\tmov.b32 ");
	for (int i = 0; i < 100; i++)
		deep[n++] = '{';
	deep[n] = 0;
	char err[256];
	struct ptx_module *m = ptx_module_parse(deep, (size_t)n, err, sizeof(err));
	GX_CHECK(!m && strstr(err, "operand nested too deeply"), "deep nesting: %s", err);
	/* the limits themselves parse: 2^24 - 1 registers, 2^48 elements, the
	 * extremes of 64 bits */
	static const char edge[] = ".version 8.0\n.global .b8 a[65536][65536][65536];\n.entry k()\n{\n"
				   "\t.reg .b32 %r<16777215>;\n\tmov.u64 %rd1, 0xffffffffffffffff;\n"
				   "\tmov.s64 %rd1, -9223372036854775808;\n\tld.u32 %r1, [%rd1+-281474976710656];\n}\n";
	m = ptx_module_parse(edge, strlen(edge), err, sizeof(err));
	GX_CHECK(m, "limits: 2^24-1 registers, 2^48 elements, 64-bit extremes parse (%s)", m ? "" : err);
	ptx_module_free(m);
}

static void test_rewrite_api(void)
{
	const char *src = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry e()\n{\n\tret;\n}\n";
	struct gx_ptx_rewrite_result r;
	struct gx_ptx_rewrite_opts o = {.sz = sizeof(o)};
	int err = gx_ptx_rewrite(src, strlen(src) + 1, &o, &r); /* trailing NUL like a module image */
	GX_CHECK(!err && r.ptx && r.nr_kernels == 1 && strstr(r.ptx, ".visible .entry e()\n{\n\tret;\n}\n"),
		 "identity rewrite");
	gx_ptx_rewrite_result_free(&r);
	err = gx_ptx_rewrite(src, strlen(src), NULL, &r);
	GX_CHECK(!err && r.ptx, "NULL options mean identity");
	gx_ptx_rewrite_result_free(&r);
	struct {
		struct gx_ptx_rewrite_opts o;
		unsigned long long tail;
	} big = {.o = {.sz = sizeof(big)}, .tail = 1};
	err = gx_ptx_rewrite(src, strlen(src), &big.o, &r);
	GX_CHECK(err == -EINVAL && !r.ptx, "unknown non-zero option bytes are rejected");
	big.tail = 0;
	err = gx_ptx_rewrite(src, strlen(src), &big.o, &r);
	GX_CHECK(!err, "zero tail of a larger options struct is accepted");
	gx_ptx_rewrite_result_free(&r);
	err = gx_ptx_rewrite(".version 8.0\n.entry\n", 20, &o, &r);
	GX_CHECK(err == -EINVAL && !r.ptx && !strncmp(r.err, "3:1: ", 5), "syntax error reported: %s", r.err);
	gx_ptx_rewrite_result_free(&r);
}

static void test_types(void)
{
	GX_CHECK(ptx_type_size(".b8") == 1 && ptx_type_size(".f16") == 2 && ptx_type_size(".bf16x2") == 4 &&
			 ptx_type_size(".u64") == 8 && ptx_type_size(".b128") == 16 &&
			 ptx_type_size(".pred") == 0 && ptx_type_size(".e4m3x2") == 2 &&
			 ptx_type_size(".global") == 0 && ptx_type_size(".b7") == 0,
		 "type sizes");
	GX_CHECK(ptx_space_of(".shared::cluster") == PTX_SPACE_SHARED &&
			 ptx_space_of(".param::entry") == PTX_SPACE_PARAM &&
			 ptx_space_of(".globalx") == PTX_SPACE_NONE && ptx_space_of(".f32") == PTX_SPACE_NONE,
		 "state spaces");
}

/* Graphs for ptx_cfg_ipdom: node i's successors, -1 for none. */
struct tgraph {
	long s[16][2];
};

static int tg_succ(const void *g, size_t i, long out[2])
{
	const struct tgraph *t = g;
	int k = 0;
	for (int j = 0; j < 2; j++)
		if (t->s[i][j] >= 0)
			out[k++] = t->s[i][j];
	return k;
}

static void test_ipdom(void)
{
	long ip[16];
	/* a diamond: 0 -> 1,2 -> 3 -> exit */
	struct tgraph d = { { { 1, 2 }, { 3, -1 }, { 3, -1 }, { -1, -1 } } };
	GX_CHECK(!ptx_cfg_ipdom(&d, 4, tg_succ, ip) && ip[0] == 3 && ip[1] == 3 && ip[2] == 3 && ip[3] == 4,
		 "diamond: the branch's paths join at 3 (%ld %ld %ld %ld)", ip[0], ip[1], ip[2], ip[3]);
	/* an early exit: 0 -> 1 (leaves), 2; 2 -> 3 -> exit: 0's join is the exit */
	struct tgraph e = { { { 1, 2 }, { -1, -1 }, { 3, -1 }, { -1, -1 } } };
	GX_CHECK(!ptx_cfg_ipdom(&e, 4, tg_succ, ip) && ip[0] == 4 && ip[2] == 3,
		 "early exit: the branch only joins at the exit (%ld)", ip[0]);
	/* a loop: 0 -> 1; 1 -> 2; 2 -> 1 (back), 3; 3 -> exit */
	struct tgraph l = { { { 1, -1 }, { 2, -1 }, { 1, 3 }, { -1, -1 } } };
	GX_CHECK(!ptx_cfg_ipdom(&l, 4, tg_succ, ip) && ip[0] == 1 && ip[1] == 2 && ip[2] == 3,
		 "loop: the latch's join is the loop exit (%ld %ld %ld)", ip[0], ip[1], ip[2]);
	/* an endless loop beside the exit: 0 -> 1, 3; 1 -> 2 -> 1; 3 -> exit */
	struct tgraph n = { { { 1, 3 }, { 2, -1 }, { 1, -1 }, { -1, -1 } } };
	GX_CHECK(!ptx_cfg_ipdom(&n, 4, tg_succ, ip) && ip[1] == -1 && ip[2] == -1 && ip[0] == 3,
		 "endless loop: its nodes have no post-dominator, the branch joins at 3 (%ld %ld %ld)", ip[0],
		 ip[1], ip[2]);
	GX_CHECK(!ptx_cfg_ipdom(&n, 0, tg_succ, ip), "an empty graph");
}

/* Module state a second copy (gpuext attach) could not share: a table of
 * modules, the count and the first name ptx_copy_unsafe gives. */
static void test_copy_unsafe(void)
{
#define HDR ".version 8.0\n.target sm_90\n.address_size 64\n"
#define K(body) ".visible .entry k(.param .u64 p)\n{\n.reg .b32 %r<4>;\n.reg .b64 %rd<4>;\n" body "ret;\n}\n"
	static const struct {
		const char *what, *ptx;
		unsigned bad;
		const char *name;
	} t[] = {
		{ "no module state", HDR K("ld.param.u64 %rd1, [p];\nst.global.u32 [%rd1], 1;\n"), 0, "" },
		{ "shared and local state are per launch",
		  HDR ".shared .align 4 .b8 sm[64];\n" K("ld.shared.u32 %r1, [sm];\nst.shared.u32 [sm+4], %r1;\n"), 0,
		  "" },
		{ "a .const table read through a computed address",
		  HDR ".const .align 4 .u32 ct[4] = {1, 2, 3, 4};\n" K("mov.u64 %rd1, ct;\nld.const.u32 %r1, [%rd1+4];\n"),
		  0, "" },
		{ "a .global variable only loaded (offsets, ld.global.nc)",
		  HDR ".global .align 4 .u32 g[2] = {7, 8};\n" K("ld.global.u32 %r1, [g];\nld.global.nc.u32 %r2, [g+4];\n"),
		  0, "" },
		{ "a .global variable stored to",
		  HDR ".global .align 4 .u32 cnt;\n" K("ld.global.u32 %r1, [cnt];\nst.global.u32 [cnt], %r1;\n"), 1,
		  "cnt" },
		{ "a .global variable's address taken (may be written through it)",
		  HDR ".global .align 4 .u32 tab[4];\n" K("mov.u64 %rd1, tab;\nld.global.u32 %r1, [%rd1];\n"), 1,
		  "tab" },
		{ "a .global counter updated atomically",
		  HDR ".visible .global .align 8 .u64 hits;\n" K("atom.global.add.u64 %rd1, [hits], 1;\n"), 1, "hits" },
		{ "a variable holding another's address",
		  HDR ".global .align 4 .u32 a;\n.global .align 8 .u64 pa = generic(a);\n"
		      K("ld.global.u32 %r1, [a];\n"),
		  1, "a" },
		{ "a managed variable", HDR ".global .attribute(.managed) .align 4 .u32 mv;\n" K("ld.global.u32 %r1, [mv];\n"),
		  1, "mv" },
		{ "a texture reference", HDR ".global .texref tx;\n" K(""), 1, "tx" },
		{ "a name that only contains the variable's is no use of it",
		  HDR ".global .align 4 .u32 n;\n.global .align 4 .u32 nn;\n"
		      K("ld.global.u32 %r1, [n];\nst.global.u32 [nn], %r1;\n"),
		  1, "nn" },
	};
#undef K
#undef HDR
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct ptx_module *m = parse(t[i].ptx);
		char name[64] = "?";
		unsigned bad = m ? ptx_copy_unsafe(m, name, sizeof(name)) : 99;
		GX_CHECK(bad == t[i].bad && !strcmp(name, t[i].name), "copy state: %s (%u, '%s')", t[i].what, bad, name);
		ptx_module_free(m);
	}
}

int main(void)
{
	test_module_structure();
	test_editing();
	test_call_parts();
	test_errors();
	test_rewrite_api();
	test_types();
	test_ipdom();
	test_copy_unsafe();
	return gx_test_done();
}
