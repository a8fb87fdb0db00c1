/* probe.c — the built-in probe handler (opts->stubs PROBE, PROBE_CALL: what
 * the bench and tests measure a handler reading every context field with).
 *
 * It reads all of struct gdev_ctx with the load shapes LLVM emits (64-bit,
 * vector, 32-bit into a 64-bit register) and stores their hash only if it
 * equals a constant, so ptxas keeps every read:
 *
 *   .global .align 4 .u32 P_probe_sink;
 *   .func (.param .b32 P_probe_r) P_probe(.param .b64 P_probe_c)
 *   {
 *   	.reg .pred %p<2>; .reg .b32 %r<32>; .reg .b64 %rd<8>;
 *   	ld.param.u64 %rd1, [P_probe_c];
 *   	ld.u64 %rd2, [%rd1]; ld.u64 %rd3, [%rd1+8]; ld.u64 %rd4, [%rd1+16];
 *   	ld.v2.u32 {%r1, %r2}, [%rd1+24];
 *   	ld.v4.u32 {%r3, %r4, %r5, %r6}, [%rd1+32];   ... {%r19, ..., %r22}, [%rd1+96];
 *   	ld.u32 %rd5, [%rd1+112];
 *   	xor.b64 %rd2, %rd2, %rd3; xor.b64 %rd2, %rd2, %rd4; xor.b64 %rd2, %rd2, %rd5;
 *   	cvt.u32.u64 %r23, %rd2; shr.u64 %rd2, %rd2, 32; cvt.u32.u64 %r24, %rd2;
 *   	xor.b32 %r23, %r23, %r24; xor.b32 %r23, %r23, %r1; ... %r22;
 *   	setp.ne.u32 %p1, %r23, 1641009;	// never in practice: keeps the reads
 *   	@%p1 bra $P_probe_done;
 *   	st.global.u32 [P_probe_sink], %r23;
 *   $P_probe_done:
 *   	mov.b32 %r25, 0; st.param.b32 [P_probe_r], %r25; ret;
 *   }
 *
 * Built as IR (it is added to every module the bench and tests rewrite with
 * it, and parsing its text cost as much as a tenth of such a rewrite). */
#include "ptx-rewrite/policy_internal.h"
#include "ptx-rewrite/site_parts_internal.h"

static const char *const probe_r[] = {
	"%r0",	"%r1",	"%r2",	"%r3",	"%r4",	"%r5",	"%r6",	"%r7",	"%r8",	"%r9",	"%r10", "%r11", "%r12",
	"%r13", "%r14", "%r15", "%r16", "%r17", "%r18", "%r19", "%r20", "%r21", "%r22", "%r23", "%r24", "%r25",
};
static const char *const probe_rd[] = { "%rd0", "%rd1", "%rd2", "%rd3", "%rd4", "%rd5" };

static struct ptx_item *probe_item(struct ptx_module *m, enum ptx_item_kind kind)
{
	struct ptx_item *it = ptx_alloc(m, sizeof(*it));
	if (it)
		it->kind = kind;
	return it;
}

static void probe_param(struct ptx_decl *d, const char *type, const char *name)
{
	d->space = PTX_SPACE_PARAM;
	d->space_str = ".param";
	d->type = type;
	d->name = name;
}

#define ID(n)	   ptx_opnd_id(m, n)
#define AT(b, off) ptx_opnd_addr(m, ID(b), off)

const char *ptx_probe_add(struct ptx_module *m, struct ptx_policy *pol)
{
	const char *P = m->fresh_prefix;
	const char *name = ptx_sprintf(m, "%s_probe", P);
	const char *sink = ptx_sprintf(m, "%s_probe_sink", P);
	const char *pr = ptx_sprintf(m, "%s_probe_r", P);
	const char *pc = ptx_sprintf(m, "%s_probe_c", P);
	const char *done = ptx_sprintf(m, "$%s_probe_done", P);
	struct ptx_item *g = probe_item(m, PTX_ITEM_DECL), *f = probe_item(m, PTX_ITEM_FUNC);
	struct ptx_decl *pp = ptx_alloc(m, 2 * sizeof(*pp));
	if (!name || !sink || !pr || !pc || !done || !g || !f || !pp)
		return NULL;
	g->decl.space = PTX_SPACE_GLOBAL;
	g->decl.space_str = ".global";
	g->decl.align = 4;
	g->decl.type = ".u32";
	g->decl.name = sink;
	probe_param(&pp[0], ".b32", pr);
	probe_param(&pp[1], ".b64", pc);
	struct ptx_func *fn = &f->func;
	fn->has_rets = fn->has_params = fn->has_body = 1;
	fn->name = name;
	fn->nrets = fn->nparams = 1;
	fn->rets = &pp[0];
	fn->params = &pp[1];

	struct ptx_chain c = { 0 };
	struct ptx_stmt *d;
	if ((d = ptx_chain_decl(m, &c, PTX_SPACE_REG, ".pred", "%p")))
		d->decl.range = 2;
	if ((d = ptx_chain_decl(m, &c, PTX_SPACE_REG, ".b32", "%r")))
		d->decl.range = 32;
	if ((d = ptx_chain_decl(m, &c, PTX_SPACE_REG, ".b64", "%rd")))
		d->decl.range = 8;
	const char *const *R = probe_r, *const *RD = probe_rd;
	INSN(&c, "ld", PTX_MODS(".param", ".u64"), ID(RD[1]), AT(pc, 0));
	for (int i = 0; i < 3; i++)
		INSN(&c, "ld", PTX_MODS(".u64"), ID(RD[2 + i]), AT(RD[1], 8 * i));
	struct ptx_opnd *v2[2] = { ID(R[1]), ID(R[2]) };
	INSN(&c, "ld", PTX_MODS(".v2", ".u32"), ptx_opnd_vec(m, 2, v2), AT(RD[1], 24));
	for (int k = 0; k < 5; k++) {
		struct ptx_opnd *v4[4];
		for (int i = 0; i < 4; i++)
			v4[i] = ID(R[3 + 4 * k + i]);
		INSN(&c, "ld", PTX_MODS(".v4", ".u32"), ptx_opnd_vec(m, 4, v4), AT(RD[1], 32 + 16 * k));
	}
	INSN(&c, "ld", PTX_MODS(".u32"), ID(RD[5]), AT(RD[1], 112));
	for (int i = 3; i <= 5; i++)
		INSN(&c, "xor", PTX_MODS(".b64"), ID(RD[2]), ID(RD[2]), ID(RD[i]));
	INSN(&c, "cvt", PTX_MODS(".u32", ".u64"), ID(R[23]), ID(RD[2]));
	INSN(&c, "shr", PTX_MODS(".u64"), ID(RD[2]), ID(RD[2]), ptx_opnd_int(m, 32));
	INSN(&c, "cvt", PTX_MODS(".u32", ".u64"), ID(R[24]), ID(RD[2]));
	INSN(&c, "xor", PTX_MODS(".b32"), ID(R[23]), ID(R[23]), ID(R[24]));
	for (int i = 1; i <= 22; i++)
		INSN(&c, "xor", PTX_MODS(".b32"), ID(R[23]), ID(R[23]), ID(R[i]));
	INSN(&c, "setp", PTX_MODS(".ne", ".u32"), ID("%p1"), ID(R[23]), ptx_opnd_int(m, 1641009));
	ptx_chain_insn(m, &c, "%p1", 0, "bra", 0, NULL, 1, ID(done));
	INSN(&c, "st", PTX_MODS(".global", ".u32"), AT(sink, 0), ID(R[23]));
	ptx_chain_label(m, &c, done);
	INSN(&c, "mov", PTX_MODS(".b32"), ID(R[25]), ptx_opnd_int(m, 0));
	INSN(&c, "st", PTX_MODS(".param", ".b32"), AT(pr, 0), ID(R[25]));
	ptx_chain_insn(m, &c, NULL, 0, "ret", 0, NULL, 0);
	if (c.failed)
		return NULL;
	fn->head = c.head;
	fn->tail = c.tail;
	g->next = f;
	f->prev = g;
	ptx_policy_append(pol, m, g, f);
	return name;
}
