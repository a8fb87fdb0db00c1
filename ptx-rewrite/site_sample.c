/* site_sample.c — the sample gate of a memory site (bind_samples, mem_sample).
 *
 * A sampled tracer (tools/memtrace.bpf.c) wants 1 warp access in N. Made
 * in the handler, the decision cost every access the election, the context
 * words and a call into the policy (2.5-6.2x at N = 1024 on the bench's
 * kernels). Here it comes first, from registers only, before the election,
 * as a countdown (the default):
 *
 *   at the function's start: %cn = a geometric gap of mean N (a hash of
 *     %clock, %smid and %warpid; lg2.approx: floor(log2(u) / log2(1 - 1/N)) + 1)
 *   at each memory site:
 *   sub.u32 %cn, %cn, 1;
 *   setp.eq.u32 %q, %cn, 0;
 *   activemask.b32 %m;
 *   vote.sync.any.pred %q, %q, %m;            // one decision per warp
 *   @!%q bra.uni OUT;
 *   <a new gap from a hash of %clock>         // sampled only
 *
 * A geometric gap is memoryless: every access is sampled with probability
 * 1/N on its own, wherever a warp starts. An unsampled access costs five
 * instructions and a uniform branch: no election, no divergence, no
 * memory. Lanes that drift apart in divergent code vote (any lane at zero
 * samples the group) and take the same new gap (they read the same
 * %clock), so they agree again. The sampled path calls the handler with
 * every lane (site.c): inlined, its registers spilled on the kernel's hot
 * path (GPU run 101, H100, 1 in 1024: vadd 1.05x called, 4.7x inlined).
 *
 * The older forms, for A/Bs: a murmur3-finalised hash of %clock ^ seed ^
 * site constant compared with 2^32/N, voted before the election
 * (GX_PTX_F_SAMPLE_EARLY; ~13 ALU per access) or made by the elected
 * leader after it (GX_PTX_F_SAMPLE_LEADER; the other lanes wait at the
 * site's reconvergence barrier; run 101 with the handler inlined: vadd
 * 4.9x). Runs 90-97's hangs of tool_bench's reduce and the cooperative
 * sample under the gate were the leader's call splitting warps (site.c),
 * not the gate. */
#include <string.h>

#include "ptx-rewrite/policy_internal.h"
#include "ptx-rewrite/site_internal.h"
#include "ptx-rewrite/site_parts_internal.h"
#include "ptx-rewrite/site_sample_internal.h"

bool ptx_can_vote_sync(const struct ptx_module *m)
{
	return ptx_module_target_sm(m) >= 70 && m->version &&
	       m->version->version.major * 10 + m->version->version.minor >= 60;
}

/* sd = %warpid << 26 ^ %smid << 16 (tmp clobbered): ptx_sample_hash()'s
 * per-warp part. */
static void seed_value(struct ptx_module *m, struct ptx_chain *c, struct ptx_opnd *sd, struct ptx_opnd *tmp)
{
	INSN(c, "mov", PTX_MODS(".u32"), sd, ptx_opnd_id(m, "%smid"));
	INSN(c, "mov", PTX_MODS(".u32"), tmp, ptx_opnd_id(m, "%warpid"));
	INSN(c, "shl", PTX_MODS(".b32"), tmp, tmp, ptx_opnd_int(m, PTX_SAMPLE_WARP_SHIFT - PTX_SAMPLE_SM_SHIFT));
	INSN(c, "xor", PTX_MODS(".b32"), sd, sd, tmp);
	INSN(c, "shl", PTX_MODS(".b32"), sd, sd, ptx_opnd_int(m, PTX_SAMPLE_SM_SHIFT));
}

/* The function's seed register, %warpid << 26 ^ %smid << 16, set once at
 * its start: two special-register reads (S2R, a shared unit) per function
 * rather than per memory instruction. Made by the first gated site of fn
 * (the declaration then heads the body). Its operand, or NULL on ENOMEM. */
static struct ptx_opnd *seed(struct ptx_module *m, struct ptx_func *fn)
{
	const char *sd = ptx_sprintf(m, "%%%s_sd", m->fresh_prefix), *st = ptx_sprintf(m, "%%%s_st", m->fresh_prefix);
	if (!sd || !st)
		return NULL;
	struct ptx_opnd *osd = ptx_opnd_id(m, sd), *ost = ptx_opnd_id(m, st);
	if (ptx_head_declares(fn, sd))
		return osd;
	struct ptx_chain c = { 0 };
	ptx_chain_decl(m, &c, PTX_SPACE_REG, ".b32", sd);
	ptx_chain_decl(m, &c, PTX_SPACE_REG, ".b32", st);
	seed_value(m, &c, osd, ost);
	if (c.failed || !osd || !ost)
		return NULL;
	ptx_insert_start_regs(fn, c.head, c.tail);
	return osd;
}

/* x = ptx_sample_hash() of %clock, the seed sd and the salt (< 0: none),
 * instruction for instruction (tmp clobbered). */
static void clock_hash(struct ptx_module *m, struct ptx_chain *c, struct ptx_opnd *x, struct ptx_opnd *tmp,
		       struct ptx_opnd *sd, long long salt)
{
	static const unsigned mul[] = { PTX_SAMPLE_MUL1, PTX_SAMPLE_MUL2 };
	INSN(c, "mov", PTX_MODS(".u32"), x, ptx_opnd_id(m, "%clock"));
	INSN(c, "xor", PTX_MODS(".b32"), x, x, sd);
	if (salt >= 0)
		INSN(c, "xor", PTX_MODS(".b32"), x, x, ptx_opnd_int(m, salt));
	for (unsigned i = 0; i < 3; i++) {
		INSN(c, "shr", PTX_MODS(".u32"), tmp, x, ptx_opnd_int(m, i == 1 ? 13 : 16));
		INSN(c, "xor", PTX_MODS(".b32"), x, x, tmp);
		if (i < 2)
			INSN(c, "mul", PTX_MODS(".lo", ".u32"), x, x, ptx_opnd_int(m, mul[i]));
	}
}

/* log2(1 - 1/n) for n >= 2, by the series of ln(1 - x) (x <= 1/2: 64 terms
 * leave < 2^-64); no libm in the rewriter. */
static double log2_keep(unsigned n)
{
	double x = 1.0 / n, p = x, sum = 0;
	for (unsigned i = 1; i <= 64; i++, p *= x)
		sum -= p / i;
	return sum / 0.69314718055994530942;
}

/* cnt = a geometric gap of mean n drawn from the hash x: floor(log2(u) /
 * log2(1 - 1/n)) + 1, u = (x >> 8) + 1 over 2^24, in (0, 1]. Each access
 * is then sampled on its own with probability 1/n (a memoryless gap: a
 * warp starting anywhere in the count is unbiased), at the cost of one
 * MUFU.LG2 per sample, none per access. f: an .f32 register. */
static void geometric(struct ptx_module *m, struct ptx_chain *c, struct ptx_opnd *cnt, struct ptx_opnd *x,
		      struct ptx_opnd *f, unsigned n)
{
	float k = (float)(1.0 / log2_keep(n));
	unsigned kb;
	memcpy(&kb, &k, sizeof(kb));
	INSN(c, "shr", PTX_MODS(".u32"), x, x, ptx_opnd_int(m, 8));
	INSN(c, "add", PTX_MODS(".u32"), x, x, ptx_opnd_int(m, 1));
	INSN(c, "cvt", PTX_MODS(".rn", ".f32", ".u32"), f, x);
	INSN(c, "lg2", PTX_MODS(".approx", ".f32"), f, f);
	INSN(c, "sub", PTX_MODS(".f32"), f, f, ptx_opnd_id(m, "0f41C00000")); /* 24.0 */
	INSN(c, "mul", PTX_MODS(".f32"), f, f, ptx_opnd_id(m, ptx_sprintf(m, "0f%08X", kb)));
	/* float to integer saturates; keep the + 1 from wrapping */
	INSN(c, "cvt", PTX_MODS(".rzi", ".u32", ".f32"), cnt, f);
	INSN(c, "min", PTX_MODS(".u32"), cnt, cnt, ptx_opnd_int(m, 0xfffffffe));
	INSN(c, "add", PTX_MODS(".u32"), cnt, cnt, ptx_opnd_int(m, 1));
}

/* The function's countdown registers for 1 in n (the default gate),
 * set once at its start: a seed like seed()'s, the count (a first
 * geometric gap from %clock and the seed) and an .f32 scratch. Named by n,
 * so that each n's chain is whole by itself (they are prepended). */
struct countdown {
	struct ptx_opnd *cs, *cn, *cf;
};
static int countdown(struct ptx_module *m, struct ptx_func *fn, unsigned n, struct countdown *cd)
{
	const char *p = m->fresh_prefix;
	const char *cs = ptx_sprintf(m, "%%%s_cs%u", p, n), *cn = ptx_sprintf(m, "%%%s_cn%u", p, n);
	const char *cf = ptx_sprintf(m, "%%%s_cf%u", p, n), *ct = ptx_sprintf(m, "%%%s_ct%u", p, n);
	if (!cs || !cn || !cf || !ct)
		return -ENOMEM;
	*cd = (struct countdown){ ptx_opnd_id(m, cs), ptx_opnd_id(m, cn), ptx_opnd_id(m, cf) };
	struct ptx_opnd *ot = ptx_opnd_id(m, ct);
	if (!cd->cs || !cd->cn || !cd->cf || !ot)
		return -ENOMEM;
	if (ptx_head_declares(fn, cn))
		return 0;
	struct ptx_chain c = { 0 };
	ptx_chain_decl(m, &c, PTX_SPACE_REG, ".b32", cs);
	ptx_chain_decl(m, &c, PTX_SPACE_REG, ".b32", ct);
	ptx_chain_decl(m, &c, PTX_SPACE_REG, ".f32", cf);
	ptx_chain_decl(m, &c, PTX_SPACE_REG, ".b32", cn);
	seed_value(m, &c, cd->cs, ot);
	clock_hash(m, &c, cd->cn, ot, cd->cs, -1);
	geometric(m, &c, cd->cn, cd->cn, cd->cf, n);
	if (c.failed)
		return -ENOMEM;
	ptx_insert_start_regs(fn, c.head, c.tail);
	return 0;
}

/* Count mode: one decrement and a vote per access, the hash and a new gap
 * only when sampled (every arriving lane takes the same new gap: they read
 * the same %clock, so lanes that drifted apart in divergent code agree
 * again at the next sample). */
static int count_gate(struct ptx_module *m, struct ptx_func *fn, struct ptx_chain *c, const struct ptx_site_regs *r,
		      unsigned n, unsigned long long kid, unsigned site, const char *out)
{
	struct countdown cd;
	int err = countdown(m, fn, n, &cd);
	if (err)
		return err;
	INSN(c, "sub", PTX_MODS(".u32"), cd.cn, cd.cn, ptx_opnd_int(m, 1));
	INSN(c, "setp", PTX_MODS(".eq", ".u32"), r->oq, cd.cn, ptx_opnd_int(m, 0));
	INSN(c, "activemask", PTX_MODS(".b32"), r->om);
	INSN(c, "vote", PTX_MODS(".sync", ".any", ".pred"), r->oq, r->oq, r->om);
	ptx_chain_insn(m, c, r->q, 1, "bra", PTX_MODS(".uni"), 1, ptx_opnd_id(m, out));
	clock_hash(m, c, r->ot, r->ol, cd.cs, ptx_sample_salt(kid, site));
	geometric(m, c, cd.cn, r->ot, cd.cf, n);
	return c->failed ? -ENOMEM : 1;
}

/* The predicated form's state (a deferred site in a loop): a linear
 * congruential generator's word per function and n, warp-uniform (the
 * seed and one %clock read at the start), stepped on each sample; its
 * value is the sample's stamp. Made by the first deferred site of fn. */
static struct ptx_opnd *lcg_state(struct ptx_module *m, struct ptx_func *fn, unsigned n)
{
	const char *cx = ptx_sprintf(m, "%%%s_cx%u", m->fresh_prefix, n),
		   *ct = ptx_sprintf(m, "%%%s_cy%u", m->fresh_prefix, n);
	if (!cx || !ct)
		return NULL;
	struct ptx_opnd *ox = ptx_opnd_id(m, cx), *ot = ptx_opnd_id(m, ct);
	if (!ox || !ot || ptx_head_declares(fn, cx))
		return ox;
	struct ptx_chain c = { 0 };
	ptx_chain_decl(m, &c, PTX_SPACE_REG, ".b32", cx);
	ptx_chain_decl(m, &c, PTX_SPACE_REG, ".b32", ct);
	seed_value(m, &c, ox, ot);
	INSN(&c, "mov", PTX_MODS(".u32"), ot, ptx_opnd_id(m, "%clock"));
	INSN(&c, "xor", PTX_MODS(".b32"), ox, ox, ot);
	if (c.failed)
		return NULL;
	ptx_insert_start_regs(fn, c.head, c.tail);
	return ox;
}

/* The predicated form's registers: the countdown and the generator. */
static int pred_state(struct ptx_module *m, struct ptx_func *fn, unsigned n, struct countdown *cd, struct ptx_opnd **cx)
{
	int err = countdown(m, fn, n, cd);
	*cx = err ? NULL : lcg_state(m, fn, n);
	return *cx ? 0 : -ENOMEM;
}

int ptx_site_sample_pred(struct ptx_module *m, struct ptx_func *fn, struct ptx_chain *c, const struct ptx_site_regs *r,
			 unsigned n, const char *guard, int guard_neg, struct ptx_opnd **stamp)
{
	struct countdown cd;
	struct ptx_opnd *cx;
	if (pred_state(m, fn, n, &cd, &cx))
		return -ENOMEM;
	/* the lanes that make the access count it: the instruction's own
	 * guard, if any, also guards the count */
	ptx_chain_insn(m, c, guard, guard_neg, "sub", PTX_MODS(".u32"), 3, cd.cn, cd.cn, ptx_opnd_int(m, 1));
	if (guard) {
		const char *g = guard_neg ? ptx_sprintf(m, "!%s", guard) : guard;
		if (!g)
			return -ENOMEM;
		INSN(c, "setp", PTX_MODS(".eq", ".and", ".u32"), r->oq, cd.cn, ptx_opnd_int(m, 0), ptx_opnd_id(m, g));
	} else {
		INSN(c, "setp", PTX_MODS(".eq", ".u32"), r->oq, cd.cn, ptx_opnd_int(m, 0));
	}
	/* (a policy's own sample may exceed what an u32 span holds) */
	long long span = n > 0x7fffffffu ? 0xffffffffll : 2 * (long long)n - 1;
	/* the next gap, uniform in [1, 2n - 1] (mean n): three instructions,
	 * predicated like all the rest (no lg2 on every access) */
	ptx_chain_insn(m, c, r->q, 0, "mad", PTX_MODS(".lo", ".u32"), 4, cx, cx, ptx_opnd_int(m, PTX_LCG_MUL),
		       ptx_opnd_int(m, PTX_LCG_ADD));
	ptx_chain_insn(m, c, r->q, 0, "mul", PTX_MODS(".hi", ".u32"), 3, cd.cn, cx, ptx_opnd_int(m, span));
	ptx_chain_insn(m, c, r->q, 0, "add", PTX_MODS(".u32"), 3, cd.cn, cd.cn, ptx_opnd_int(m, 1));
	*stamp = cx;
	return c->failed ? -ENOMEM : 1;
}

int ptx_site_sample_resync(struct ptx_module *m, struct ptx_func *fn, struct ptx_chain *c,
			   const struct ptx_site_regs *r, unsigned n)
{
	struct countdown cd;
	struct ptx_opnd *cx;
	if (pred_state(m, fn, n, &cd, &cx))
		return -ENOMEM;
	INSN(c, "activemask", PTX_MODS(".b32"), r->om);
	INSN(c, "brev", PTX_MODS(".b32"), r->ol, r->om);
	INSN(c, "bfind", PTX_MODS(".shiftamt", ".u32"), r->ol, r->ol);
	INSN(c, "shfl", PTX_MODS(".sync", ".idx", ".b32"), cd.cn, cd.cn, r->ol, ptx_opnd_int(m, 31), r->om);
	INSN(c, "shfl", PTX_MODS(".sync", ".idx", ".b32"), cx, cx, r->ol, ptx_opnd_int(m, 31), r->om);
	return c->failed ? -ENOMEM : 0;
}

int ptx_site_sample_gate(struct ptx_module *m, struct ptx_func *fn, struct ptx_chain *c, const struct ptx_site_regs *r,
			 unsigned n, unsigned long long kid, unsigned site, const char *out, enum ptx_gate how)
{
	if (n <= 1)
		return 0;
	if (how == PTX_GATE_COUNT && ptx_can_vote_sync(m))
		return count_gate(m, fn, c, r, n, kid, site, out);
	struct ptx_opnd *sd = seed(m, fn);
	if (!sd)
		return -ENOMEM;
	clock_hash(m, c, r->ot, r->ol, sd, ptx_sample_salt(kid, site));
	/* sampled iff hash < 2^32 / n: probability 1/n within 2^-32 */
	if (how == PTX_GATE_FLAG) {
		/* every lane here, the leader's hash decides (the others'
		 * flags are clear); the lane register back as for the leader */
		INSN(c, "setp", PTX_MODS(".lo", ".and", ".u32"), r->oq, r->ot, ptx_opnd_int(m, ptx_sample_limit(n)),
		     r->oq);
		INSN(c, "mov", PTX_MODS(".u32"), r->ol, ptx_opnd_id(m, "%laneid"));
		return c->failed ? -ENOMEM : 1;
	}
	INSN(c, "setp", PTX_MODS(".lo", ".u32"), r->oq, r->ot, ptx_opnd_int(m, ptx_sample_limit(n)));
	if (how == PTX_GATE_LEADER) {
		/* one lane here: no vote. The hash used the election's lane
		 * register; the leader's lane is its own %laneid. */
		ptx_chain_insn(m, c, r->q, 1, "bra", 0, NULL, 1, ptx_opnd_id(m, out));
		INSN(c, "mov", PTX_MODS(".u32"), r->ol, ptx_opnd_id(m, "%laneid"));
	} else if (ptx_can_vote_sync(m)) {
		INSN(c, "activemask", PTX_MODS(".b32"), r->om);
		INSN(c, "vote", PTX_MODS(".sync", ".any", ".pred"), r->oq, r->oq, r->om);
		ptx_chain_insn(m, c, r->q, 1, "bra", PTX_MODS(".uni"), 1, ptx_opnd_id(m, out));
	} else {
		/* no vote.sync: lanes that disagree split, each group elects */
		ptx_chain_insn(m, c, r->q, 1, "bra", 0, NULL, 1, ptx_opnd_id(m, out));
	}
	return c->failed ? -ENOMEM : 1;
}

unsigned ptx_site_sample_every(const struct ptx_sites *s, const char *func)
{
	const struct gx_ptx_rewrite_opts *o = s->ctx->opts;
	for (size_t i = 0; func && s->pol && i < o->nr_bindings; i++) {
		const struct gx_hook_binding *b = &o->bindings[i];
		unsigned n = o->bind_samples ? o->bind_samples[i] : 0;
		if ((b->hook & GDEV_HOOK_MEM) && n && !strcmp(ptx_policy_name(s->pol, b->func), func))
			return o->mem_sample ? o->mem_sample : n;
	}
	return 0;
}
