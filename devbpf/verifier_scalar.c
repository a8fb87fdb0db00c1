/* verifier_scalar.c — value ranges of scalar registers.
 *
 * A scalar is an interval in both unsigned and signed 64-bit views plus the
 * number of known-zero low bits (enough to prove alignment of computed map
 * value offsets). Transfer functions are deliberately simple and sound:
 * when an operation could wrap, the result is unknown. Constants are folded
 * with the interpreter's own evaluator, so verifier and reference semantics
 * cannot drift apart. Branches refine the intervals of both operands. */
#include <limits.h>

#include "devbpf/verifier.h"

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
	}
	if (r->umin > r->umax || r->smin > r->smax)
		return false;
	if (r->umin == r->umax)
		r->tz = ctz64(r->umin);
	/* values with tz known-zero bits: nothing more to derive cheaply */
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

static void trunc32(struct vreg *r)
{
	if (r->umax <= U32MAX)
		return;
	if (r->umin == r->umax) {
		vreg_set_const(r, r->umin & U32MAX);
		return;
	}
	uint8_t tz = r->tz > 31 ? 31 : r->tz;
	set_u(r, 0, U32MAX, tz);
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
	if (is64) {
		alu64(op, sgn, dst, &a, &b);
	} else {
		trunc32(&a);
		trunc32(&b);
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
