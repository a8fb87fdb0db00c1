/* site_words.c — the context words a hook site computes for its handler
 * (in registers %<P>_w0..29, leader only, just those the handler reads),
 * the .local context a called handler reads them from, and an instruction
 * copied with its own operands. Shared by site.c and site_uniform.c. */
#include <string.h>

#include "ptx-rewrite/gx_ptx.h"
#include "ptx-rewrite/site_parts_internal.h"

/* mov.b32 W<i>, v */
static void mov_imm(struct ptx_module *m, struct ptx_chain *c, const struct ptx_site_regs *r, unsigned i,
		    unsigned long long v)
{
	INSN(c, "mov", PTX_MODS(".b32"), r->ow[i], ptx_opnd_int(m, (long long)v));
}

/* `need` with the words its computed words are made from. */
unsigned ptx_words_closure(unsigned need, unsigned layout)
{
	if ((need & 1u << 25) && !(layout & PTX_SITE_WARP_REG)) /* warpid = linear tid / 32 */
		need |= 0x1fu << 18;
	if (need & 1u << 27) /* unit = linear block id */
		need |= 0x1fu << 12;
	return need;
}

/* Whether kernel fn's blocks are one-dimensional by its own declaration
 * (.reqntid or .maxntid with y and z 1 or left out: PTX defaults them to 1),
 * so %tid.y and %tid.z are 0 and %ntid.y and %ntid.z 1. Triton declares
 * every kernel so. The sites then compute the warp index from %tid.x alone:
 * every warp runs that test before the election, and special-register reads
 * are what delays a warp there (docs/devbpf-perf.md). */
int ptx_site_flat_block(const struct ptx_func *fn)
{
	for (unsigned i = 0; fn && i < fn->nperf; i++) {
		const struct ptx_perf *pf = &fn->perf[i];
		if ((!strcmp(pf->name, ".reqntid") || !strcmp(pf->name, ".maxntid")) && pf->nvals >= 1 &&
		    (pf->nvals < 2 || pf->vals[1] == 1) && (pf->nvals < 3 || pf->vals[2] == 1))
			return 1;
	}
	return 0;
}

/* The warp index register of GX_PTX_F_HOIST_WARP, named after the module. */
static const char *warp_reg(struct ptx_module *m)
{
	return ptx_sprintf(m, "%%%s_wi", m->fresh_prefix);
}

int ptx_head_declares(const struct ptx_func *fn, const char *name)
{
	/* Each such block is inserted at the start, a dozen statements at
	 * most, so whichever came first is still near it: a bounded look. */
	unsigned n = 0;
	for (const struct ptx_stmt *s = fn->head; s && n < 64; s = s->next, n++)
		if (s->kind == PTX_STMT_DECL && s->decl.name && !strcmp(s->decl.name, name))
			return 1;
	return 0;
}

int ptx_site_layout(struct ptx_module *m, struct ptx_func *fn, const struct gx_ptx_rewrite_opts *o)
{
	unsigned layout = ptx_site_flat_block(fn) ? PTX_SITE_FLAT : 0;
	if (!(o->flags & GX_PTX_F_HOIST_WARP))
		return (int)layout;
	const char *wi = warp_reg(m);
	if (!wi)
		return gx_err(-ENOMEM);
	if (ptx_head_declares(fn, wi))
		return (int)(layout | PTX_SITE_WARP_REG);
	/* At the start, where the reads overlap the kernel's first loads:
	 * (tid.z * ntid.y + tid.y) * ntid.x + tid.x, over 32. */
	struct ptx_chain c = { 0 };
	struct ptx_opnd *w = ptx_opnd_id(m, wi);
	ptx_chain_decl(m, &c, PTX_SPACE_REG, ".b32", wi);
	if (layout & PTX_SITE_FLAT) {
		INSN(&c, "mov", PTX_MODS(".u32"), w, ptx_opnd_id(m, "%tid.x"));
	} else {
		const char *t = ptx_sprintf(m, "%%%s_wt", m->fresh_prefix);
		struct ptx_opnd *ot = t ? ptx_opnd_id(m, t) : NULL;
		if (!ot)
			return gx_err(-ENOMEM);
		ptx_chain_decl(m, &c, PTX_SPACE_REG, ".b32", t);
		INSN(&c, "mov", PTX_MODS(".u32"), w, ptx_opnd_id(m, "%tid.z"));
		INSN(&c, "mov", PTX_MODS(".u32"), ot, ptx_opnd_id(m, "%ntid.y"));
		INSN(&c, "mul", PTX_MODS(".lo", ".u32"), w, w, ot);
		INSN(&c, "mov", PTX_MODS(".u32"), ot, ptx_opnd_id(m, "%tid.y"));
		INSN(&c, "add", PTX_MODS(".u32"), w, w, ot);
		INSN(&c, "mov", PTX_MODS(".u32"), ot, ptx_opnd_id(m, "%ntid.x"));
		INSN(&c, "mul", PTX_MODS(".lo", ".u32"), w, w, ot);
		INSN(&c, "mov", PTX_MODS(".u32"), ot, ptx_opnd_id(m, "%tid.x"));
		INSN(&c, "add", PTX_MODS(".u32"), w, w, ot);
	}
	INSN(&c, "shr", PTX_MODS(".u32"), w, w, ptx_opnd_int(m, 5));
	if (c.failed || !w)
		return gx_err(-ENOMEM);
	ptx_insert_start_regs(fn, c.head, c.tail);
	return (int)(layout | PTX_SITE_WARP_REG);
}

/* A special register read once at fn's start into %<prefix>_<tag> (marked
 * as the sites' start code); the register's name, or NULL on ENOMEM. */
static const char *start_sreg(struct ptx_module *m, struct ptx_func *fn, const char *sreg, const char *tag)
{
	const char *name = ptx_sprintf(m, "%%%s_%s", m->fresh_prefix, tag);
	if (!name || ptx_head_declares(fn, name))
		return name;
	struct ptx_chain c = { 0 };
	ptx_chain_decl(m, &c, PTX_SPACE_REG, ".b32", name);
	INSN(&c, "mov", PTX_MODS(".u32"), ptx_opnd_id(m, name), ptx_opnd_id(m, sreg));
	if (c.failed)
		return NULL;
	ptx_insert_start_regs(fn, c.head, c.tail);
	return name;
}

int ptx_site_hoist_sregs(struct ptx_module *m, struct ptx_func *fn, struct ptx_chain *c, unsigned layout)
{
	if (!(layout & PTX_SITE_WARP_REG))
		return 0;
	for (struct ptx_stmt *s = c->head; s; s = s == c->tail ? NULL : s->next) {
		if (s->kind != PTX_STMT_INSN || strcmp(s->insn.opcode, "mov") || s->insn.nops != 2 || !s->insn.ops[1] ||
		    s->insn.ops[1]->kind != PTX_OPND_ID)
			continue;
		const char *t = s->insn.ops[1]->text, *reg = NULL;
		if (!strcmp(t, "%smid"))
			reg = start_sreg(m, fn, "%smid", "sm");
		else if (!strcmp(t, "%warpid"))
			reg = start_sreg(m, fn, "%warpid", "hw");
		else
			continue;
		/* a fresh operand array: an inlined body may share its
		 * handler's (the inliner copies statements, not operands) */
		struct ptx_opnd *o = reg ? ptx_opnd_id(m, reg) : NULL, **ops = ptx_alloc(m, 2 * sizeof(*ops));
		if (!o || !ops)
			return gx_err(-ENOMEM);
		ops[0] = s->insn.ops[0];
		ops[1] = o;
		s->insn.ops = ops;
	}
	return 0;
}

/* Compute the words of `need` not in `have` (already in their registers).
 * layout: PTX_SITE_* (one-dimensional blocks, the warp index register). */
int ptx_site_words(struct ptx_module *m, struct ptx_chain *c, const struct ptx_site_regs *r, unsigned need,
		   unsigned have, unsigned long long kid, unsigned info, unsigned hook, const struct ptx_chain *addr,
		   unsigned layout)
{
	int flat = layout & PTX_SITE_FLAT;
	static const char *const sreg[12] = { "%ctaid.x", "%ctaid.y", "%ctaid.z", "%nctaid.x", "%nctaid.y", "%nctaid.z",
					      "%tid.x",	  "%tid.y",   "%tid.z",	  "%ntid.x",   "%ntid.y",   "%ntid.z" };
	struct ptx_opnd *const *W = r->ow;
	need = ptx_words_closure(need, layout) & ~have;
	for (unsigned i = 0; i < PTX_CTX_WORDS; i++) {
		if (!(need & 1u << i))
			continue;
		switch (i) {
		case 0:
		case 1:
			mov_imm(m, c, r, i, i ? kid >> 32 : kid & 0xffffffffu);
			break;
		case 4:
		case 5:
			if (i == 5 && (need & 1u << 4))
				break;
			if (addr && addr->head) {
				struct ptx_opnd *e[2] = { W[4], W[5] };
				if (ptx_chain_copy(m, c, addr))
					return -ENOMEM;
				INSN(c, "mov", PTX_MODS(".b64"), ptx_opnd_vec(m, 2, e), r->oa);
			} else {
				mov_imm(m, c, r, 4, 0);
				mov_imm(m, c, r, 5, 0);
			}
			break;
		case 6:
			mov_imm(m, c, r, 6, info & 0xffff);
			break;
		case 7:
			mov_imm(m, c, r, 7, info >> 16 & 0xff);
			break;
		case 8:
			mov_imm(m, c, r, 8, info >> 24 & 0xff);
			break;
		case 9:
			INSN(c, "mov", PTX_MODS(".b32"), W[9], r->om);
			break;
		case 10:
			INSN(c, "popc", PTX_MODS(".b32"), W[10], r->om);
			break;
		case 11:
			mov_imm(m, c, r, 11, hook);
			break;
		case 24:
			INSN(c, "mov", PTX_MODS(".u32"), W[24], ptx_opnd_id(m, "%smid"));
			break;
		case 25:
			if (layout & PTX_SITE_WARP_REG) {
				const char *wi = warp_reg(m);
				if (!wi)
					return -ENOMEM;
				INSN(c, "mov", PTX_MODS(".b32"), W[25], ptx_opnd_id(m, wi));
				break;
			}
			INSN(c, "mad", PTX_MODS(".lo", ".u32"), r->ot, W[20], W[22], W[19]);
			INSN(c, "mad", PTX_MODS(".lo", ".u32"), r->ot, r->ot, W[21], W[18]);
			INSN(c, "shr", PTX_MODS(".u32"), W[25], r->ot, ptx_opnd_int(m, 5));
			break;
		case 26:
			INSN(c, "mov", PTX_MODS(".b32"), W[26], r->ol);
			break;
		case 27:
			INSN(c, "mad", PTX_MODS(".lo", ".u32"), r->ot, W[14], W[16], W[13]);
			INSN(c, "mad", PTX_MODS(".lo", ".u32"), W[27], r->ot, W[15], W[12]);
			break;
		default:
			/* special registers: fresh operands (the persistent
			 * pass rewrites %ctaid/%nctaid reads in place) */
			if (flat && (i == 19 || i == 20)) /* %tid.y, %tid.z */
				mov_imm(m, c, r, i, 0);
			else if (flat && (i == 22 || i == 23)) /* %ntid.y, %ntid.z */
				mov_imm(m, c, r, i, 1);
			else if (i >= 12 && i < 24)
				INSN(c, "mov", PTX_MODS(".u32"), W[i], ptx_opnd_id(m, sreg[i - 12]));
			else /* launch_id (0 until the shim numbers launches), pad */
				mov_imm(m, c, r, i, 0);
		}
	}
	return c->failed ? -ENOMEM : 0;
}

/* The words in `need` stored to the .local context at `ctx`. */
void ptx_site_store_words(struct ptx_module *m, struct ptx_chain *c, const struct ptx_site_regs *r, unsigned need,
			  const char *ctx, unsigned layout)
{
	struct ptx_opnd *const *W = r->ow;
	struct ptx_opnd *base = ptx_opnd_id(m, ctx);
	need = ptx_words_closure(need, layout);
	for (unsigned i = 0; i < PTX_CTX_WORDS; i++) {
		if (!(need & 1u << i))
			continue;
		struct ptx_opnd *at = ptx_opnd_addr(m, base, 4 * i);
		if (!(i & 3) && (need >> i & 0xfu) == 0xfu) {
			INSN(c, "st", PTX_MODS(".local", ".v4", ".u32"), at, ptx_opnd_vec(m, 4, &W[i]));
			i += 3;
		} else if (!(i & 1) && (need & 1u << (i + 1))) {
			INSN(c, "st", PTX_MODS(".local", ".v2", ".u32"), at, ptx_opnd_vec(m, 2, &W[i]));
			i++;
		} else {
			INSN(c, "st", PTX_MODS(".local", ".u32"), at, W[i]);
		}
	}
}

/* Append a copy of `in` to c; NULL (c->failed set) when out of memory. */
struct ptx_stmt *ptx_insn_dup(struct ptx_module *m, struct ptx_chain *c, const struct ptx_insn *in)
{
	struct ptx_stmt *d = ptx_alloc(m, sizeof(*d));
	struct ptx_opnd **ops = ptx_alloc(m, in->nops * sizeof(*ops));
	if (!d || (in->nops && !ops)) {
		c->failed = 1;
		return NULL;
	}
	d->kind = PTX_STMT_INSN;
	d->insn = *in;
	for (unsigned i = 0; i < in->nops; i++) {
		ops[i] = in->ops[i];
		/* own operand objects: %ctaid/%nctaid reads are rewritten in
		 * place by the persistent transform */
		if (ops[i] && ops[i]->kind == PTX_OPND_ID && !(ops[i] = ptx_opnd_id(m, in->ops[i]->text))) {
			c->failed = 1;
			return NULL;
		}
	}
	d->insn.ops = ops;
	ptx_chain_link(c, d);
	return d;
}
