/* verifier_scalar.c — value ranges of scalar registers.
 *
 * A scalar is an interval in both unsigned and signed 64-bit views, the
 * number of known-zero low bits (enough to prove alignment of computed map
 * value offsets) and its known bits (kmask/kval). Intervals alone lose what
 * masks say: clang turns `bm[bit >> 6]` after `bit < 512` into
 * `(bit >> 3) & 0x1ffffff8`, an interval 0..63 but in truth 0..56 in steps
 * of 8; the known bits keep that, and vreg_sync lets each view tighten the
 * other. Transfer functions are deliberately simple and sound: when an
 * operation could wrap, the result is unknown. Constants are folded with
 * the interpreter's own evaluator, so verifier and reference semantics
 * cannot drift apart. Branches refine the intervals of both operands. */
#include <limits.h>

#include "devbpf/verifier_internal.h"

#define U32MAX 0xffffffffull

static uint8_t ctz64(uint64_t v)
{
	return v ? (uint8_t)__builtin_ctzll(v) : 63;
}

static uint64_t umin2(uint64_t a, uint64_t b) { return a < b ? a : b; }
static uint64_t umax2(uint64_t a, uint64_t b) { return a > b ? a : b; }
static int64_t smin2(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t smax2(int64_t a, int64_t b) { return a > b ? a : b; }

void vreg_mark_unknown(struct vreg *r)
{
	uint8_t v = r->varying;
	memset(r, 0, sizeof(*r));
	r->type = V_SCALAR;
	r->varying = v;
	r->umax = UINT64_MAX;
	r->smin = INT64_MIN;
	r->smax = INT64_MAX;
}

void vreg_set_const(struct vreg *r, uint64_t v)
{
	vreg_mark_unknown(r);
	r->umin = r->umax = v;
	r->smin = r->smax = (int64_t)v;
	r->tz = ctz64(v);
	r->kmask = UINT64_MAX;
	r->kval = v;
}

void vreg_set_urange(struct vreg *r, uint64_t lo, uint64_t hi)
{
	vreg_mark_unknown(r);
	r->umin = lo, r->umax = hi;
	vreg_sync(r);
}

bool vreg_is_const(const struct vreg *r)
{
	return r->type == V_SCALAR && r->umin == r->umax;
}

/* ---- known bits: (v, m) pairs, m = the unknown bits, v the known values */
struct tn {
	uint64_t v, m;
};

static struct tn tn_of(const struct vreg *r)
{
	return (struct tn){ r->kval & r->kmask, ~r->kmask };
}

static void tn_set(struct vreg *r, struct tn t)
{
	r->kmask = ~t.m;
	r->kval = t.v & ~t.m;
}

/* Every value in [lo, hi] shares the bits above the highest one where lo
 * and hi differ. */
static struct tn tn_range(uint64_t lo, uint64_t hi)
{
	uint64_t diff = lo ^ hi;
	if (!diff)
		return (struct tn){ lo, 0 };
	int bits = 64 - __builtin_clzll(diff);
	uint64_t m = bits >= 64 ? UINT64_MAX : (1ull << bits) - 1;
	return (struct tn){ lo & ~m, m };
}

/* Both hold: false when they contradict (no value has both). */
static bool tn_meet(struct tn a, struct tn b, struct tn *out)
{
	if ((a.v ^ b.v) & ~a.m & ~b.m)
		return false;
	out->m = a.m & b.m;
	out->v = (a.v | b.v) & ~out->m;
	return true;
}

/* Sum: the carries of the smallest (unknown bits 0) and the largest
 * (unknown bits 1) choice differ exactly where a result bit is unsure. */
static struct tn tn_add(struct tn a, struct tn b)
{
	uint64_t lo = a.v + b.v, hi = lo + a.m + b.m;
	uint64_t m = (lo ^ hi) | a.m | b.m;
	return (struct tn){ lo & ~m, m };
}

/* Difference: the same with the borrows of the two extreme choices. */
static struct tn tn_sub(struct tn a, struct tn b)
{
	uint64_t d = a.v - b.v;
	uint64_t m = ((d + a.m) ^ (d - b.m)) | a.m | b.m;
	return (struct tn){ d & ~m, m };
}

/* The known bits of `a OP b` (b.m == 0 for shifts: constant amounts only);
 * false when they are not tracked for OP. */
static bool tn_alu(uint8_t op, bool is64, struct tn a, struct tn b, struct tn *out)
{
	unsigned k = (unsigned)(b.v & (is64 ? 63 : 31));
	switch (op) {
	case BPF_ADD: *out = tn_add(a, b); return true;
	case BPF_SUB: *out = tn_sub(a, b); return true;
	case BPF_NEG: *out = tn_sub((struct tn){ 0, 0 }, a); return true;
	case BPF_AND: {
		uint64_t v = a.v & b.v;
		*out = (struct tn){ v, (a.v | a.m) & (b.v | b.m) & ~v };
		return true;
	}
	case BPF_OR: {
		uint64_t v = a.v | b.v;
		*out = (struct tn){ v, (a.m | b.m) & ~v };
		return true;
	}
	case BPF_XOR: {
		uint64_t m = a.m | b.m;
		*out = (struct tn){ (a.v ^ b.v) & ~m, m };
		return true;
	}
	case BPF_LSH:
		if (b.m)
			return false;
		*out = (struct tn){ a.v << k, a.m << k };
		return true;
	case BPF_RSH:
		if (b.m)
			return false;
		*out = (struct tn){ a.v >> k, a.m >> k };
		return true;
	case BPF_ARSH:
		if (b.m || !is64)
			return false;
		*out = (struct tn){ (uint64_t)((int64_t)a.v >> k), (uint64_t)((int64_t)a.m >> k) };
		return true;
	}
	return false;
}

bool vreg_bits_cover(const struct vreg *o, const struct vreg *c)
{
	return !(o->kmask & ~c->kmask) && !((o->kval ^ c->kval) & o->kmask);
}

void vreg_bits_join(struct vreg *c, const struct vreg *o)
{
	c->kmask &= o->kmask & ~(c->kval ^ o->kval);
	c->kval &= c->kmask;
}

/* Intervals, known bits and known trailing zeros tighten each other. */
bool vreg_sync(struct vreg *r)
{
	for (int pass = 0; pass < 2; pass++) {
		if (r->smin >= 0 || r->smax < 0) {
			r->umin = umax2(r->umin, (uint64_t)r->smin);
			r->umax = umin2(r->umax, (uint64_t)r->smax);
		}
		if (r->umax <= (uint64_t)INT64_MAX || r->umin > (uint64_t)INT64_MAX) {
			r->smin = smax2(r->smin, (int64_t)r->umin);
			r->smax = smin2(r->smax, (int64_t)r->umax);
		}
		if (r->umin > r->umax || r->smin > r->smax)
			return false;
		uint64_t low = r->tz >= 63 ? INT64_MAX : (1ull << r->tz) - 1;
		struct tn t;
		if (!tn_meet(tn_of(r), tn_range(r->umin, r->umax), &t) ||
		    !tn_meet(t, (struct tn){ 0, ~low }, &t))
			return false;
		tn_set(r, t);
		r->umin = umax2(r->umin, t.v);
		r->umax = umin2(r->umax, t.v | t.m);
	}
	if (r->umin > r->umax || r->smin > r->smax)
		return false;
	uint64_t zeros = r->kmask & ~r->kval;
	uint8_t tz = ~zeros ? (uint8_t)__builtin_ctzll(~zeros) : 63;
	if (tz > r->tz)
		r->tz = tz > 63 ? 63 : tz;
	if (r->umin == r->umax)
		r->tz = ctz64(r->umin);
	return true;
}

static void set_u(struct vreg *r, uint64_t lo, uint64_t hi, uint8_t tz)
{
	uint8_t v = r->varying;
	vreg_mark_unknown(r);
	r->varying = v;
	r->umin = lo, r->umax = hi;
	r->tz = tz;
	vreg_sync(r);
}

static uint64_t mask_upto(uint64_t v)
{
	if (!v)
		return 0;
	int b = 64 - __builtin_clzll(v);
	return b >= 64 ? UINT64_MAX : (1ull << b) - 1;
}

/* 64-bit transfer for non-constant operands; a/b are copies. */
static void alu64(uint8_t op, bool sgn, struct vreg *d, const struct vreg *a, const struct vreg *b)
{
	uint64_t lo, hi;
	switch (op) {
	case BPF_ADD: {
		int64_t slo, shi;
		bool uo = __builtin_add_overflow(a->umin, b->umin, &lo) | __builtin_add_overflow(a->umax, b->umax, &hi);
		bool so = __builtin_add_overflow(a->smin, b->smin, &slo) | __builtin_add_overflow(a->smax, b->smax, &shi);
		vreg_mark_unknown(d);
		if (!uo)
			d->umin = lo, d->umax = hi;
		if (!so)
			d->smin = slo, d->smax = shi;
		d->tz = a->tz < b->tz ? a->tz : b->tz;
		vreg_sync(d);
		return;
	}
	case BPF_SUB: {
		int64_t slo, shi;
		bool so = __builtin_sub_overflow(a->smin, b->smax, &slo) | __builtin_sub_overflow(a->smax, b->smin, &shi);
		vreg_mark_unknown(d);
		if (a->umin >= b->umax)
			d->umin = a->umin - b->umax, d->umax = a->umax - b->umin;
		if (!so)
			d->smin = slo, d->smax = shi;
		d->tz = a->tz < b->tz ? a->tz : b->tz;
		vreg_sync(d);
		return;
	}
	case BPF_MUL:
		if (a->umax <= U32MAX && b->umax <= U32MAX) {
			uint8_t tz = a->tz + b->tz > 63 ? 63 : a->tz + b->tz;
			set_u(d, a->umin * b->umin, a->umax * b->umax, tz);
			return;
		}
		break;
	case BPF_DIV:
		if (sgn)
			break;
		if (b->umin > 0)
			set_u(d, a->umin / b->umax, a->umax / b->umin, 0);
		else
			set_u(d, 0, a->umax, 0);
		return;
	case BPF_MOD:
		if (sgn)
			break;
		if (b->umin > 0)
			set_u(d, 0, umin2(a->umax, b->umax - 1), 0);
		else
			set_u(d, 0, a->umax, 0);
		return;
	case BPF_AND: {
		uint8_t tz = a->tz > b->tz ? a->tz : b->tz;
		set_u(d, 0, umin2(a->umax, b->umax), tz);
		return;
	}
	case BPF_OR:
		set_u(d, umax2(a->umin, b->umin), mask_upto(umax2(a->umax, b->umax)),
		      a->tz < b->tz ? a->tz : b->tz);
		return;
	case BPF_XOR:
		set_u(d, 0, mask_upto(umax2(a->umax, b->umax)), a->tz < b->tz ? a->tz : b->tz);
		return;
	case BPF_LSH:
		if (b->umin == b->umax && b->umin < 64) {
			unsigned k = (unsigned)b->umin;
			if (a->umax <= (UINT64_MAX >> k)) {
				set_u(d, a->umin << k, a->umax << k, (uint8_t)(a->tz + k > 63 ? 63 : a->tz + k));
				return;
			}
		}
		break;
	case BPF_RSH:
		if (b->umin == b->umax && b->umin < 64) {
			unsigned k = (unsigned)b->umin;
			set_u(d, a->umin >> k, a->umax >> k, 0);
		} else {
			set_u(d, 0, a->umax, 0);
		}
		return;
	case BPF_ARSH:
		if (b->umin == b->umax && b->umin < 64) {
			unsigned k = (unsigned)b->umin;
			int64_t lo2 = a->smin >> k, hi2 = a->smax >> k;
			vreg_mark_unknown(d);
			d->smin = lo2, d->smax = hi2;
			vreg_sync(d);
			return;
		}
		break;
	case BPF_NEG:
		if (a->smin != INT64_MIN) {
			vreg_mark_unknown(d);
			d->smin = -a->smax, d->smax = -a->smin;
			vreg_sync(d);
			return;
		}
		break;
	}
	vreg_mark_unknown(d);
}

/* Keep the known bits of r where they hold after an operation: used for
 * results whose interval was computed without them. */
static void meet_bits(struct vreg *r, struct tn t)
{
	struct tn cur;
	if (tn_meet(tn_of(r), t, &cur)) {
		tn_set(r, cur);
		vreg_sync(r);
	}
}

/* The low 32 bits (ALU32 operands and results): the upper half is known 0,
 * the lower half keeps its known bits. */
static void trunc32(struct vreg *r)
{
	struct tn t = tn_of(r);
	t.v &= U32MAX;
	t.m &= U32MAX;
	if (r->umax <= U32MAX) {
		meet_bits(r, t);
		return;
	}
	if (r->umin == r->umax) {
		vreg_set_const(r, r->umin & U32MAX);
		return;
	}
	uint8_t tz = r->tz > 31 ? 31 : r->tz;
	set_u(r, 0, U32MAX, tz);
	meet_bits(r, t);
}

int vscalar_alu(struct venv *env, uint32_t idx, const struct bpf_insn *in, struct vreg *dst,
		const struct vreg *srcp)
{
	(void)env, (void)idx;
	bool is64 = BPF_CLASS(in->code) == BPF_ALU64;
	uint8_t op = BPF_OP(in->code);
	struct vreg a = *dst, b = *srcp;
	uint8_t varying = (op == BPF_MOV ? 0 : a.varying) | (op == BPF_NEG || op == BPF_END ? 0 : b.varying);
	if (op == BPF_NEG || op == BPF_END)
		b = a; /* unary: only dst matters */
	bool konst = vreg_is_const(&a) && vreg_is_const(&b);
	if (op == BPF_MOV)
		konst = vreg_is_const(&b);
	if (konst) {
		uint64_t v = gx_bpf_alu_eval(in->code, in->off, in->imm, a.umin, b.umin);
		vreg_set_const(dst, v);
		dst->varying = varying;
		return 0;
	}
	if (op == BPF_MOV) {
		if (in->off == 0) {
			*dst = b;
			if (!is64) {
				dst->type = V_SCALAR;
				trunc32(dst);
			}
		} else {
			int bits = in->off;
			uint64_t pmax = (1ull << (bits - 1)) - 1;
			if (b.umax <= pmax) {
				*dst = b;
			} else {
				vreg_mark_unknown(dst);
				dst->smin = -(int64_t)pmax - 1, dst->smax = (int64_t)pmax;
				vreg_sync(dst);
				if (!is64)
					trunc32(dst);
			}
		}
		dst->varying = varying;
		return 0;
	}
	if (op == BPF_END) {
		if (BPF_SRC(in->code) == BPF_TO_LE && !is64 && in->imm == 64) {
			*dst = a;
		} else if (BPF_SRC(in->code) == BPF_TO_LE && !is64) {
			uint64_t m = in->imm == 16 ? 0xffff : U32MAX;
			set_u(dst, 0, a.umax <= m ? a.umax : m, 0);
		} else {
			uint64_t m = in->imm == 16 ? 0xffff : in->imm == 32 ? U32MAX : UINT64_MAX;
			set_u(dst, 0, m, 0);
		}
		dst->varying = varying;
		return 0;
	}
	bool sgn = (op == BPF_DIV || op == BPF_MOD) && in->off == 1;
	struct tn bits;
	bool have_bits;
	if (is64) {
		have_bits = tn_alu(op, true, tn_of(&a), tn_of(&b), &bits);
		alu64(op, sgn, dst, &a, &b);
	} else {
		trunc32(&a);
		trunc32(&b);
		have_bits = tn_alu(op, false, tn_of(&a), tn_of(&b), &bits);
		bits.v &= U32MAX;
		bits.m &= U32MAX;
		bool ok = op == BPF_ADD || op == BPF_SUB || op == BPF_MUL || op == BPF_AND || op == BPF_OR ||
			  op == BPF_XOR || ((op == BPF_DIV || op == BPF_MOD) && !sgn) ||
			  ((op == BPF_LSH || op == BPF_RSH) && b.umin == b.umax && b.umin < 32);
		if (ok) {
			alu64(op, false, dst, &a, &b);
			if (dst->umax > U32MAX)
				set_u(dst, 0, U32MAX, dst->tz > 31 ? 31 : dst->tz);
		} else {
			set_u(dst, 0, U32MAX, 0);
		}
	}
	dst->type = V_SCALAR;
	if (have_bits)
		meet_bits(dst, bits);
	dst->varying = varying;
	return 0;
}

/* --------------------------------------------------------------- branches */

static bool fits(const struct vreg *r, bool sgn)
{
	return sgn ? (r->umax <= 0x7fffffffull) : (r->umax <= U32MAX);
}

static bool rel_gt(struct vreg *a, struct vreg *b, bool sgn, bool eq)
{
	/* a > b (or a >= b when eq) */
	if (!sgn) {
		uint64_t need = b->umin;
		if (!eq) {
			if (need == UINT64_MAX)
				return false;
			need++;
		}
		a->umin = umax2(a->umin, need);
		uint64_t cap = a->umax;
		if (!eq) {
			if (cap == 0)
				return false;
			cap--;
		}
		b->umax = umin2(b->umax, cap);
	} else {
		int64_t need = b->smin;
		if (!eq) {
			if (need == INT64_MAX)
				return false;
			need++;
		}
		a->smin = smax2(a->smin, need);
		int64_t cap = a->smax;
		if (!eq) {
			if (cap == INT64_MIN)
				return false;
			cap--;
		}
		b->smax = smin2(b->smax, cap);
	}
	return vreg_sync(a) && vreg_sync(b);
}

int vscalar_branch(uint8_t op, bool is32, struct vreg *a, struct vreg *b, bool taken)
{
	bool sgn = op == BPF_JSGT || op == BPF_JSGE || op == BPF_JSLT || op == BPF_JSLE;
	if (is32) {
		if (vreg_is_const(a) && vreg_is_const(b)) {
			/* exact on the low halves; ranges not refined */
			uint64_t x = a->umin & U32MAX, y = b->umin & U32MAX;
			int32_t sx = (int32_t)x, sy = (int32_t)y;
			int r;
			switch (op) {
			case BPF_JEQ: r = x == y; break;
			case BPF_JNE: r = x != y; break;
			case BPF_JGT: r = x > y; break;
			case BPF_JGE: r = x >= y; break;
			case BPF_JLT: r = x < y; break;
			case BPF_JLE: r = x <= y; break;
			case BPF_JSET: r = (x & y) != 0; break;
			case BPF_JSGT: r = sx > sy; break;
			case BPF_JSGE: r = sx >= sy; break;
			case BPF_JSLT: r = sx < sy; break;
			default: r = sx <= sy; break;
			}
			return r == (int)taken;
		}
		if (!fits(a, sgn) || !fits(b, sgn))
			return 1; /* no refinement possible */
	}
	if (!taken) {
		switch (op) {
		case BPF_JEQ: op = BPF_JNE; break;
		case BPF_JNE: op = BPF_JEQ; break;
		case BPF_JGT: op = BPF_JLE; break;
		case BPF_JGE: op = BPF_JLT; break;
		case BPF_JLT: op = BPF_JGE; break;
		case BPF_JLE: op = BPF_JGT; break;
		case BPF_JSGT: op = BPF_JSLE; break;
		case BPF_JSGE: op = BPF_JSLT; break;
		case BPF_JSLT: op = BPF_JSGE; break;
		case BPF_JSLE: op = BPF_JSGT; break;
		case BPF_JSET:
			/* a & b == 0 */
			if (vreg_is_const(a) && vreg_is_const(b))
				return (a->umin & b->umin) == 0;
			if (vreg_is_const(b) && b->umin == UINT64_MAX) {
				a->umin = a->umax = 0; /* a must be 0 */
				return vreg_sync(a);
			}
			return 1;
		}
	}
	switch (op) {
	case BPF_JEQ: {
		uint64_t lo = umax2(a->umin, b->umin), hi = umin2(a->umax, b->umax);
		int64_t slo = smax2(a->smin, b->smin), shi = smin2(a->smax, b->smax);
		a->umin = b->umin = lo, a->umax = b->umax = hi;
		a->smin = b->smin = slo, a->smax = b->smax = shi;
		return vreg_sync(a) && vreg_sync(b);
	}
	case BPF_JNE:
		if (vreg_is_const(a) && vreg_is_const(b))
			return a->umin != b->umin;
		for (int k = 0; k < 2; k++) {
			struct vreg *x = k ? b : a, *c = k ? a : b;
			if (!vreg_is_const(c) || vreg_is_const(x))
				continue;
			if (x->umin == c->umin)
				x->umin++;
			else if (x->umax == c->umin)
				x->umax--;
			if (!vreg_sync(x))
				return 0;
		}
		return 1;
	case BPF_JSET:
		if (vreg_is_const(a) && vreg_is_const(b))
			return (a->umin & b->umin) != 0;
		if (a->umin == 0)
			a->umin = 1;
		return vreg_sync(a);
	case BPF_JGT: return rel_gt(a, b, false, false);
	case BPF_JGE: return rel_gt(a, b, false, true);
	case BPF_JLT: return rel_gt(b, a, false, false);
	case BPF_JLE: return rel_gt(b, a, false, true);
	case BPF_JSGT: return rel_gt(a, b, true, false);
	case BPF_JSGE: return rel_gt(a, b, true, true);
	case BPF_JSLT: return rel_gt(b, a, true, false);
	case BPF_JSLE: return rel_gt(b, a, true, true);
	}
	return 1;
}

int vscalar_cmp_known(uint8_t op, bool is32, const struct vreg *a, const struct vreg *b)
{
	struct vreg a1 = *a, b1 = *b, a2 = *a, b2 = *b;
	int t = vscalar_branch(op, is32, &a1, &b1, true);
	int f = vscalar_branch(op, is32, &a2, &b2, false);
	if (t && !f)
		return 1;
	if (!t && f)
		return 0;
	return -1;
}
