/* verifier.c — the SIMT verifier's driver: explores every path of a program
 * with abstract states (verifier_internal.h), one instruction at a time.
 *
 * Why path exploration rather than a fixpoint: loops need no widening — a
 * bounded loop unrolls until its counter's range proves the exit, and an
 * unbounded one runs into the hook's path budget, which is also how the
 * runtime cost of every path is bounded (per-hook budgets). State pruning
 * keeps it tractable: at jump targets, a state covered by one already fully
 * explored from there stops, provided the longest continuation seen from the
 * old state still fits the current path's budget (each stored state keeps the
 * longest remaining path and helper-call count below it). States on the
 * current path that are equal to the current one mean an infinite loop.
 * The one fixpoint is bpf_loop's: its callback runs an unknown number of
 * times up to a bound too large to unroll, so its effect on the caller is
 * joined over rounds until it stops growing (loop_summary).
 *
 * SIMT rules ride on the same walk: every value carries a lane-varying bit
 * (sources: gdev_laneid, gdev_thread_idx; it spreads through ALU, stack and
 * map lookups with varying keys); branches, loop bounds, map update keys and
 * atomics must be uniform. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuext/gdev_helpers.h"
#include "devbpf/verifier_internal.h"
#include "common/gx_log.h"
#include "common/gx_util.h"

#define V_MAX_STORED 4096
#define V_CB_RETURN (-3)  /* step(): a bpf_loop callback returned (its frame still on top) */
#define V_LOOP_EXACT 16   /* bpf_loop rounds before widening */
#define V_LOOP_ROUNDS 128 /* and at most this many in all */

int verr(struct venv *env, uint32_t insn, const char *fmt, ...)
{
	if (env->msg[0])
		return -EINVAL; /* keep the first reason */
	char reason[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	snprintf(env->msg, sizeof(env->msg), "prog %s insn %u: %s", env->prog->name, insn, reason);
	env->err_insn = (int)insn;
	return -EINVAL;
}

/* ------------------------------------------------------------ states */

/* Frames are recycled through a free list: exploring copies states at
 * every fork and prune point, and malloc/free of 4-5 KiB blocks dominated
 * the run time. */
static struct vframe *frame_get(struct venv *env)
{
	struct vframe *f = env->free_frames;
	if (f) {
		env->free_frames = *(struct vframe **)f;
		return f;
	}
	return malloc(sizeof(struct vframe));
}

static void frame_put(struct venv *env, struct vframe *f)
{
	*(struct vframe **)f = env->free_frames;
	env->free_frames = f;
}

static void state_free(struct venv *env, struct vstate *st)
{
	for (int i = 0; i < st->nframes; i++)
		frame_put(env, st->frames[i]);
	st->nframes = 0;
}

static int state_copy(struct venv *env, struct vstate *dst, const struct vstate *src)
{
	*dst = *src;
	for (int i = 0; i < src->nframes; i++) {
		dst->frames[i] = frame_get(env);
		if (!dst->frames[i]) {
			dst->nframes = i;
			state_free(env, dst);
			return -ENOMEM;
		}
		memcpy(dst->frames[i], src->frames[i], sizeof(struct vframe));
	}
	return 0;
}

struct idmap {
	uint32_t o[64], c[64];
	int n;
};

static bool id_match(struct idmap *m, uint32_t o, uint32_t c)
{
	for (int i = 0; i < m->n; i++) {
		if (m->o[i] == o)
			return m->c[i] == c;
		if (m->c[i] == c)
			return false;
	}
	if (m->n >= 64)
		return false;
	m->o[m->n] = o, m->c[m->n++] = c;
	return true;
}

static bool reg_covers(const struct vreg *o, const struct vreg *c, struct idmap *m)
{
	if (o->type == V_NOT_INIT)
		return true;
	if (o->type != c->type || (c->varying && !o->varying) || (c->addr & ~o->addr))
		return false;
	switch (o->type) {
	case V_SCALAR:
		return c->umin >= o->umin && c->umax <= o->umax && c->smin >= o->smin && c->smax <= o->smax &&
		       c->tz >= o->tz && vreg_bits_cover(o, c);
	case V_CONST_MAP:
	case V_PTR_FUNC:
		return o->map_idx == c->map_idx;
	case V_PTR_MAP_VALUE_OR_NULL:
		if (!id_match(m, o->id, c->id))
			return false;
		/* fall through */
	case V_PTR_CTX:
	case V_PTR_STACK:
	case V_PTR_MAP_VALUE:
	case V_PTR_ARG:
		return o->map_idx == c->map_idx && o->frame == c->frame && c->omin >= o->omin &&
		       c->omax <= o->omax && c->tz >= o->tz;
	}
	return false;
}

static bool frame_covers(const struct vframe *o, const struct vframe *c, struct idmap *m, uint16_t live)
{
	if (o->callsite != c->callsite || o->subprog != c->subprog || o->is_callback != c->is_callback ||
	    o->cb_iters != c->cb_iters)
		return false;
	for (int r = 0; r < 11; r++)
		if (((live >> r) & 1) && !reg_covers(&o->regs[r], &c->regs[r], m))
			return false;
	for (int s = 0; s < V_SLOTS; s++) {
		const struct vslot *os = &o->stack[s], *cs = &c->stack[s];
		if (!os->init)
			continue;
		if (os->init & ~cs->init)
			return false;
		if (cs->varying && !os->varying)
			return false;
		if (os->kind == SLOT_SPILL) {
			if (cs->kind != SLOT_SPILL || !reg_covers(&os->spill, &cs->spill, m))
				return false;
		} else if (vslot_has_addr(cs)) {
			return false;
		}
	}
	return true;
}

/* Does old state o cover current state c at insn idx? Only registers live
 * there count (for callers: those live after their call returns). */
static bool state_covers(const struct venv *env, uint32_t idx, const struct vstate *o, const struct vstate *c)
{
	if (o->nframes != c->nframes)
		return false;
	struct idmap m = { .n = 0 };
	for (int i = 0; i < o->nframes; i++) {
		uint16_t live = 0x7ff;
		if (env) {
			if (i == o->nframes - 1) {
				live = env->live[idx] | 0x400;
			} else {
				uint32_t ret = (uint32_t)o->frames[i + 1]->callsite + 1;
				live = ret < env->cnt ? (uint16_t)((env->live[ret] & 0x3c0) | 0x400) : 0x7ff;
			}
		}
		if (!frame_covers(o->frames[i], c->frames[i], &m, live))
			return false;
	}
	return true;
}

static void stored_release(struct vstored *s)
{
	while (s && --s->refs == 0)
		s = s->parent;
}

/* A path ended (exit or pruned) with `insns` and `calls` in total: tell the
 * stored states above it how long their continuations can be. */
static void path_end(struct venv *env, struct vstate *st, uint32_t insns, uint32_t calls)
{
	if (insns > env->max_path)
		env->max_path = insns;
	if (calls > env->max_calls)
		env->max_calls = calls;
	for (struct vstored *s = st->parent; s; s = s->parent) {
		uint32_t ri = insns - s->st.path_insns, rc = calls - s->st.path_calls;
		bool up = false;
		if (ri > s->rem_insns)
			s->rem_insns = ri, up = true;
		if (rc > s->rem_calls)
			s->rem_calls = rc, up = true;
		if (!up)
			break;
	}
	stored_release(st->parent);
	st->parent = NULL;
}

/* GX_BPF_SEC_JOIN: same shape (types, pointers, stack layout) as an
 * explored state, scalars aside? Registers dead at idx do not count. */
static bool same_shape_reg(const struct vreg *a, const struct vreg *b)
{
	if (a->type != b->type)
		return false;
	if (a->type == V_SCALAR || a->type == V_NOT_INIT)
		return true;
	return a->map_idx == b->map_idx && a->frame == b->frame && a->omin == b->omin && a->omax == b->omax &&
	       a->tz == b->tz && a->id == b->id && a->varying == b->varying;
}

static void join_reg(struct vreg *c, const struct vreg *o)
{
	if (c->type != V_SCALAR)
		return;
	c->umin = c->umin < o->umin ? c->umin : o->umin;
	c->umax = c->umax > o->umax ? c->umax : o->umax;
	c->smin = c->smin < o->smin ? c->smin : o->smin;
	c->smax = c->smax > o->smax ? c->smax : o->smax;
	c->tz = c->tz < o->tz ? c->tz : o->tz;
	vreg_bits_join(c, o);
	c->varying |= o->varying;
	c->addr |= o->addr;
}

static void join_sibling(struct venv *env, struct vstate *st, uint32_t idx)
{
	if (st->nframes != 1)
		return;
	uint16_t live = env->live[idx] | 0x400;
	struct vframe *c = st->frames[0];
	/* Only siblings of the same loop iteration (as many back edges taken)
	 * and fully explored: a loop is bounded by unrolling it with exact
	 * counters; widening a counter would make it look endless. */
	for (struct vstored *s = env->stored[idx]; s; s = s->next) {
		if (s->refs || s->st.nframes != 1 || s->st.back_edges != st->back_edges)
			continue;
		const struct vframe *o = s->st.frames[0];
		if (o->callsite != c->callsite || o->subprog != c->subprog || o->is_callback != c->is_callback)
			continue;
		bool same = true;
		for (int r = 0; r < 11 && same; r++)
			same = !((live >> r) & 1) || same_shape_reg(&o->regs[r], &c->regs[r]);
		for (int k = 0; k < V_SLOTS && same; k++) {
			const struct vslot *os = &o->stack[k], *cs = &c->stack[k];
			same = os->kind == cs->kind && os->init == cs->init &&
			       (os->kind != SLOT_SPILL || same_shape_reg(&os->spill, &cs->spill));
		}
		if (!same)
			continue;
		for (int r = 0; r < 11; r++) {
			if (!((live >> r) & 1))
				memset(&c->regs[r], 0, sizeof(c->regs[r])); /* dead: not read before written */
			else
				join_reg(&c->regs[r], &o->regs[r]);
		}
		for (int k = 0; k < V_SLOTS; k++) {
			c->stack[k].varying |= o->stack[k].varying;
			c->stack[k].poison |= o->stack[k].poison;
			if (c->stack[k].kind == SLOT_SPILL)
				join_reg(&c->stack[k].spill, &o->stack[k].spill);
		}
		/* and on: the widest join makes later arrivals covered */
	}
}

/* 1: pruned (path done), 0: go on, <0: error */
static int prune_or_store(struct venv *env, struct vstate *st, uint32_t idx)
{
	for (struct vstored *s = env->stored[idx]; s; s = s->next) {
		if (s->refs == 0) {
			if ((uint64_t)st->path_insns + s->rem_insns <= env->budget.max_path_insns &&
			    (uint64_t)st->path_calls + s->rem_calls <= env->budget.max_helper_calls &&
			    state_covers(env, idx, &s->st, st)) {
				path_end(env, st, st->path_insns + s->rem_insns, st->path_calls + s->rem_calls);
				return 1;
			}
		} else if (state_covers(NULL, idx, &s->st, st) && state_covers(NULL, idx, st, &s->st)) {
			return verr(env, idx, "infinite loop detected");
		}
	}
	if (env->sec->flags & GX_BPF_SEC_JOIN)
		join_sibling(env, st, idx);
	if (env->nstored[idx] >= V_MAX_STATES_PER_INSN || env->nstates >= V_MAX_STORED)
		return 0;
	struct vstored *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	if (state_copy(env, &s->st, st)) {
		free(s);
		return -ENOMEM;
	}
	s->st.parent = NULL;
	s->parent = st->parent; /* the path's reference moves to s */
	s->refs = 1;
	s->next = env->stored[idx];
	env->stored[idx] = s;
	env->nstored[idx]++;
	env->nstates++;
	st->parent = s;
	return 0;
}

/* Queue a state for later exploration; takes ownership of its frames. */
static int push_pending(struct venv *env, struct vstate *st, uint32_t insn)
{
	if (env->npending == env->cap_pending) {
		uint32_t nc = env->cap_pending ? env->cap_pending * 2 : 64;
		if (nc > 65536)
			return verr(env, insn, "program too complex: too many pending branches");
		struct vpending *np = realloc(env->pending, nc * sizeof(*np));
		if (!np)
			return -ENOMEM;
		env->pending = np, env->cap_pending = nc;
	}
	struct vpending *p = &env->pending[env->npending];
	p->st = *st;
	st->nframes = 0; /* moved */
	p->insn = insn;
	if (st->parent)
		st->parent->refs++;
	env->npending++;
	return 0;
}

/* -------------------------------------------------------------- insns */

/* A register used as a memory base: any initialised one (what it may be
 * dereferenced as is vmem_access's decision; a dangling frame pointer is a
 * scalar there), but not a pointer a subprogram returned. */
static int check_base(struct venv *env, uint32_t idx, const struct vreg *r, int regno)
{
	if (r->type == V_NOT_INIT)
		return verr(env, idx, "read of uninitialized register r%d", regno);
	if (r->type == V_SCALAR && (r->addr & V_ADDR_RET))
		return verr(env, idx, "r%d holds a pointer returned by a subprogram", regno);
	return 0;
}

int vcheck_value(struct venv *env, uint32_t idx, const struct vreg *r, int regno)
{
	if (r->type == V_NOT_INIT)
		return verr(env, idx, "read of uninitialized register r%d", regno);
	if (r->type == V_SCALAR && (r->addr & V_ADDR_RET))
		return verr(env, idx, "r%d holds a pointer returned by a subprogram", regno);
	if (r->type == V_SCALAR && r->addr)
		return verr(env, idx, "r%d holds the address of a returned frame", regno);
	return 0;
}

static const char *type_name(uint8_t t)
{
	switch (t) {
	case V_SCALAR: return "scalar";
	case V_PTR_CTX: return "ctx";
	case V_CONST_MAP: return "map handle";
	case V_PTR_MAP_VALUE: return "map value";
	case V_PTR_MAP_VALUE_OR_NULL: return "map value or null";
	case V_PTR_STACK: return "stack";
	case V_PTR_FUNC: return "function";
	case V_PTR_ARG: return "argument";
	}
	return "uninitialized";
}

static bool is_ptr(const struct vreg *r)
{
	return r->type != V_SCALAR && r->type != V_NOT_INIT;
}

static int ptr_add(struct venv *env, uint32_t idx, struct vreg *d, const struct vreg *ptr,
		   const struct vreg *sc, bool sub)
{
	if (ptr->type != V_PTR_CTX && ptr->type != V_PTR_STACK && ptr->type != V_PTR_MAP_VALUE &&
	    ptr->type != V_PTR_ARG) {
		if (ptr->type == V_PTR_MAP_VALUE_OR_NULL)
			return verr(env, idx, "pointer arithmetic on map value or null (missing null check)");
		return verr(env, idx, "invalid pointer arithmetic on %s", type_name(ptr->type));
	}
	struct vreg r = *ptr;
	int64_t lo, hi;
	bool of;
	if (r.omin == INT64_MIN || r.omax == INT64_MAX) {
		of = true;
	} else if (!sub) {
		of = __builtin_add_overflow(r.omin, sc->smin, &lo) | __builtin_add_overflow(r.omax, sc->smax, &hi);
	} else {
		of = __builtin_sub_overflow(r.omin, sc->smax, &lo) | __builtin_sub_overflow(r.omax, sc->smin, &hi);
	}
	if (of || lo < -(1ll << 40) || hi > (1ll << 40)) {
		r.omin = INT64_MIN, r.omax = INT64_MAX; /* unbounded: any access fails */
	} else {
		r.omin = lo, r.omax = hi;
	}
	if (vreg_is_const(sc)) {
		uint8_t ct = sc->umin ? (uint8_t)__builtin_ctzll(sc->umin) : 63;
		r.tz = r.tz < ct ? r.tz : ct;
	} else {
		r.tz = r.tz < sc->tz ? r.tz : sc->tz;
	}
	if (r.omin == r.omax && r.omin != INT64_MIN)
		r.tz = r.omin ? (uint8_t)__builtin_ctzll((uint64_t)r.omin) : 63;
	r.varying = ptr->varying | sc->varying;
	*d = r;
	return 0;
}

static int do_alu(struct venv *env, struct vstate *st, uint32_t idx, const struct bpf_insn *in)
{
	struct vframe *f = vcur(st);
	struct vreg *d = &f->regs[in->dst_reg];
	bool is64 = BPF_CLASS(in->code) == BPF_ALU64;
	uint8_t op = BPF_OP(in->code);
	struct vreg src;
	if (BPF_SRC(in->code) == BPF_X && op != BPF_END && op != BPF_NEG) {
		src = f->regs[in->src_reg];
		int err = vcheck_value(env, idx, &src, in->src_reg);
		if (err)
			return err;
	} else {
		vreg_set_const(&src, is64 ? (uint64_t)(int64_t)in->imm : (uint64_t)(uint32_t)in->imm);
		src.varying = 0;
	}
	if (op != BPF_MOV) {
		int err = vcheck_value(env, idx, d, in->dst_reg);
		if (err)
			return err;
	}
	if (op == BPF_MOV) {
		if (is_ptr(&src)) {
			/* the low half of an address is a number that leaks it */
			if (!is64 || in->off)
				return verr(env, idx, "partial copy of pointer r%d", in->src_reg);
			*d = src;
			return 0;
		}
		return vscalar_alu(env, idx, in, d, &src);
	}
	if (!is_ptr(d) && !is_ptr(&src))
		return vscalar_alu(env, idx, in, d, &src);
	/* pointer arithmetic */
	if (!is64)
		return verr(env, idx, "invalid pointer arithmetic: 32-bit operation on a pointer");
	if (op == BPF_ADD && is_ptr(d) && !is_ptr(&src))
		return ptr_add(env, idx, d, d, &src, false);
	if (op == BPF_ADD && !is_ptr(d) && is_ptr(&src)) {
		struct vreg sc = *d;
		return ptr_add(env, idx, d, &src, &sc, false);
	}
	if (op == BPF_SUB && is_ptr(d) && !is_ptr(&src))
		return ptr_add(env, idx, d, d, &src, true);
	if (op == BPF_SUB && is_ptr(d) && is_ptr(&src) && d->type == src.type &&
	    (d->type == V_PTR_STACK || d->type == V_PTR_MAP_VALUE || d->type == V_PTR_ARG) &&
	    d->map_idx == src.map_idx) {
		uint8_t v = d->varying | src.varying;
		vreg_mark_unknown(d);
		d->varying = v;
		return 0;
	}
	return verr(env, idx, "invalid pointer arithmetic on %s", type_name(is_ptr(d) ? d->type : src.type));
}

static void mark_null_result(struct vstate *st, uint32_t id, bool is_null)
{
	for (int fi = 0; fi < st->nframes; fi++) {
		struct vframe *f = st->frames[fi];
		for (int r = 0; r < 11; r++) {
			struct vreg *x = &f->regs[r];
			if (x->type == V_PTR_MAP_VALUE_OR_NULL && x->id == id) {
				if (is_null) {
					uint8_t v = x->varying;
					vreg_set_const(x, 0);
					x->varying = v;
				} else {
					x->type = V_PTR_MAP_VALUE;
					x->id = 0;
				}
			}
		}
		for (int s = 0; s < V_SLOTS; s++) {
			struct vreg *x = &f->stack[s].spill;
			if (f->stack[s].kind == SLOT_SPILL && x->type == V_PTR_MAP_VALUE_OR_NULL && x->id == id) {
				if (is_null) {
					uint8_t v = x->varying;
					vreg_set_const(x, 0);
					x->varying = v;
				} else {
					x->type = V_PTR_MAP_VALUE;
					x->id = 0;
				}
			}
		}
	}
}

static int64_t jmp_target(const struct bpf_insn *in, uint32_t idx)
{
	if (BPF_OP(in->code) == BPF_JA && BPF_CLASS(in->code) == BPF_JMP32)
		return (int64_t)idx + in->imm + 1;
	return (int64_t)idx + in->off + 1;
}

/* Conditional jump. *next: where the current state goes (-1: path ends). */
static int do_branch(struct venv *env, struct vstate *st, uint32_t idx, const struct bpf_insn *in,
		     int64_t *next)
{
	struct vframe *f = vcur(st);
	bool is32 = BPF_CLASS(in->code) == BPF_JMP32;
	uint8_t op = BPF_OP(in->code);
	uint32_t target = (uint32_t)jmp_target(in, idx);
	struct vreg *d = &f->regs[in->dst_reg];
	struct vreg imm, *s;
	int err = vcheck_value(env, idx, d, in->dst_reg);
	if (err)
		return err;
	if (BPF_SRC(in->code) == BPF_X) {
		s = &f->regs[in->src_reg];
		if ((err = vcheck_value(env, idx, s, in->src_reg)))
			return err;
	} else {
		vreg_set_const(&imm, (uint64_t)(int64_t)in->imm);
		imm.varying = 0;
		s = &imm;
	}
	if (env->simt && (d->varying || s->varying))
		return verr(env, idx, "branch on lane-varying value");
	if (target <= idx)
		st->back_edges++; /* counted on both outcomes: the loop was entered */
	bool zero = s->type == V_SCALAR && vreg_is_const(s) && s->umin == 0;
	if (is_ptr(d) || is_ptr(s)) {
		if (!is_ptr(s) && zero && (op == BPF_JEQ || op == BPF_JNE) && !is32) {
			if (d->type == V_PTR_MAP_VALUE_OR_NULL) {
				/* null check: fork */
				struct vstate other;
				if ((err = state_copy(env, &other, st)))
					return err;
				uint32_t id = d->id;
				/* taken branch: JEQ → null, JNE → non-null */
				mark_null_result(&other, id, op == BPF_JEQ);
				mark_null_result(st, id, op != BPF_JEQ);
				other.parent = st->parent;
				err = push_pending(env, &other, target);
				other.parent = NULL;
				state_free(env, &other);
				*next = idx + 1;
				return err;
			}
			/* a pointer that cannot be null */
			*next = op == BPF_JEQ ? idx + 1 : target;
			return 0;
		}
		return verr(env, idx, "comparison of pointer r%d is not allowed",
			    is_ptr(d) ? in->dst_reg : in->src_reg);
	}
	int known = vscalar_cmp_known(op, is32, d, s);
	if (known == 1) {
		*next = target;
		return 0;
	}
	if (known == 0) {
		*next = idx + 1;
		return 0;
	}
	/* both outcomes possible: push the taken one, refine both */
	struct vstate other;
	if ((err = state_copy(env, &other, st)))
		return err;
	struct vframe *of = vcur(&other);
	struct vreg *od = &of->regs[in->dst_reg];
	struct vreg *os = BPF_SRC(in->code) == BPF_X ? &of->regs[in->src_reg] : &imm;
	struct vreg tmp_imm = imm;
	if (BPF_SRC(in->code) == BPF_K)
		os = &tmp_imm;
	int ok_taken = 1, ok_fall = 1;
	if (in->dst_reg == in->src_reg && BPF_SRC(in->code) == BPF_X) {
		struct vreg c1 = *od, c2 = *d;
		ok_taken = vscalar_branch(op, is32, od, &c1, true);
		ok_fall = vscalar_branch(op, is32, d, &c2, false);
	} else {
		struct vreg fimm = imm;
		ok_taken = vscalar_branch(op, is32, od, os, true);
		ok_fall = vscalar_branch(op, is32, d, BPF_SRC(in->code) == BPF_X ? s : &fimm, false);
	}
	if (ok_taken) {
		other.parent = st->parent;
		err = push_pending(env, &other, target);
		other.parent = NULL;
	}
	state_free(env, &other);
	if (err)
		return err;
	*next = ok_fall ? (int64_t)idx + 1 : -1;
	return 0;
}

static bool on_call_stack(const struct vstate *st, int32_t subprog)
{
	for (int i = 0; i < st->nframes; i++)
		if (st->frames[i]->subprog == subprog)
			return true;
	return false;
}

static int enter_frame(struct venv *env, struct vstate *st, uint32_t idx, uint32_t target, bool callback,
		       uint64_t iters, const struct vreg *cbctx)
{
	if (st->nframes >= V_MAX_FRAMES)
		return verr(env, idx, "call stack too deep (more than %d frames)", V_MAX_FRAMES);
	int32_t sp = env->subprog_of[target];
	if (on_call_stack(st, sp))
		return verr(env, idx, "recursive call");
	struct vframe *caller = vcur(st);
	struct vframe *nf = frame_get(env);
	if (!nf)
		return -ENOMEM;
	memset(nf, 0, sizeof(*nf));
	env->subprogs[caller->subprog].calls[sp] = 1;
	if (callback) {
		/* callback(index, ctx) */
		vreg_set_urange(&nf->regs[1], 0, iters ? iters - 1 : 0);
		nf->regs[1].varying = 0;
		nf->regs[2] = *cbctx;
		nf->is_callback = 1;
		nf->cb_iters = iters;
	} else {
		for (int r = 1; r <= 5; r++)
			nf->regs[r] = caller->regs[r];
	}
	nf->regs[10].type = V_PTR_STACK;
	nf->regs[10].frame = (uint8_t)st->nframes;
	nf->regs[10].tz = 63;
	nf->callsite = (int32_t)idx;
	nf->subprog = sp;
	st->frames[st->nframes++] = nf;
	return 0;
}

/* Pointers into a frame that just returned are dangling: they become
 * unknown scalars marked as addresses (a later dereference is rejected, and
 * so is any use of the number, which would leak where the stack is). */
static void forget_ptr(struct vreg *r, int nframes)
{
	if (r->type == V_PTR_STACK && r->frame >= nframes) {
		uint8_t v = r->varying;
		vreg_mark_unknown(r);
		r->varying = v;
		r->addr |= V_ADDR_FRAME;
	}
}

static void forget_dead_frame_ptrs(struct vstate *st)
{
	for (int fi = 0; fi < st->nframes; fi++) {
		struct vframe *f = st->frames[fi];
		for (int r = 0; r < 11; r++)
			forget_ptr(&f->regs[r], st->nframes);
		for (int s = 0; s < V_SLOTS; s++)
			if (f->stack[s].kind == SLOT_SPILL)
				forget_ptr(&f->stack[s].spill, st->nframes);
	}
}

static int do_exit(struct venv *env, struct vstate *st, uint32_t idx, int64_t *next)
{
	struct vframe *f = vcur(st);
	struct vreg *r0 = &f->regs[0];
	/* A subprogram that sets no r0 is a void function: fine as long as the
	 * caller never reads r0 after the call (it stays uninitialised there).
	 * One that returns a map value pointer (or null) hands it to its
	 * caller; any other pointer becomes an unusable number there. The
	 * program and a bpf_loop callback must return a value, a scalar. */
	bool sub = st->nframes > 1 && !f->is_callback;
	if (r0->type == V_NOT_INIT && !sub)
		return verr(env, idx, "R0 not set before exit");
	if (r0->type != V_SCALAR && r0->type != V_NOT_INIT && !sub)
		return verr(env, idx, "returning a pointer is not allowed");
	if (r0->type == V_SCALAR && r0->addr && !sub)
		return vcheck_value(env, idx, r0, 0);
	if (st->nframes == 1) {
		const struct gx_bpf_sec_def *sec = env->sec;
		if (r0->smin < sec->ret_min || r0->smax > sec->ret_max)
			return verr(env, idx, "return value out of range [%lld, %lld] for hook %s",
				    (long long)sec->ret_min, (long long)sec->ret_max, sec->prefix);
		*next = -1;
		return 0;
	}
	struct vreg ret = *r0;
	struct vframe *caller = st->frames[st->nframes - 2];
	/* A map value pointer (or null) lives as long as its map: the caller
	 * gets it as it is on this path, with its map, offset range and null
	 * id (each exit path of the callee returns on its own path, so the
	 * caller sees every kind, map and bound a return may have). Any other
	 * pointer (the callee's or a caller's stack, the context, a handler
	 * argument) becomes a number the caller may not use. */
	if (ret.type != V_SCALAR && ret.type != V_NOT_INIT && ret.type != V_PTR_MAP_VALUE &&
	    ret.type != V_PTR_MAP_VALUE_OR_NULL) {
		uint8_t v = ret.varying;
		vreg_mark_unknown(&ret);
		ret.varying = v;
		ret.addr = V_ADDR_RET;
	}
	if (f->is_callback) {
		/* the loop summary (loop_summary) takes the state from here */
		if (ret.smin < 0 || ret.smax > 1)
			return verr(env, idx, "bpf_loop callback must return 0 or 1");
		*next = V_CB_RETURN;
		return 0;
	}
	*next = f->callsite + 1;
	frame_put(env, f);
	st->nframes--;
	forget_dead_frame_ptrs(st);
	for (int r = 1; r <= 5; r++)
		memset(&caller->regs[r], 0, sizeof(caller->regs[r]));
	caller->regs[0] = ret;
	return 0;
}

static int do_atomic(struct venv *env, struct vstate *st, uint32_t idx, const struct bpf_insn *in)
{
	struct vframe *f = vcur(st);
	struct vreg *src = &f->regs[in->src_reg];
	struct vreg *p = &f->regs[in->dst_reg];
	int size = BPF_SIZE(in->code) == BPF_DW ? 8 : 4;
	int err = vcheck_value(env, idx, src, in->src_reg);
	if (err)
		return err;
	if (src->type != V_SCALAR)
		return verr(env, idx, "atomic operand must be a scalar");
	if (p->type != V_PTR_STACK && p->type != V_PTR_MAP_VALUE && p->type != V_PTR_CTX) {
		if (p->type == V_PTR_MAP_VALUE_OR_NULL)
			return verr(env, idx, "map value pointer may be null (missing null check)");
		return verr(env, idx, "atomic operation on %s r%d", type_name(p->type), in->dst_reg);
	}
	if (in->imm == BPF_CMPXCHG) {
		if ((err = vcheck_value(env, idx, &f->regs[0], 0)))
			return err;
		if (f->regs[0].type != V_SCALAR)
			return verr(env, idx, "atomic operand must be a scalar");
	}
	/* The old value comes back: lane-varying if the memory was (an
	 * exchange must not launder a varying stack slot into a uniform
	 * register); a compare-exchange's outcome also follows r0. */
	struct vreg ptr = *p;
	uint8_t vary = p->varying | src->varying;
	if (in->imm == BPF_CMPXCHG)
		vary |= f->regs[0].varying;
	vary |= vmem_stack_varying(st, &ptr, in->off, size, false);
	if ((err = vmem_access(env, st, idx, in->dst_reg, in->off, size, true, in->src_reg, false, true)))
		return err;
	if (vary)
		vmem_stack_varying(st, &ptr, in->off, size, true);
	struct vreg *out = NULL;
	if (in->imm == BPF_CMPXCHG)
		out = &f->regs[0];
	else if ((in->imm & BPF_FETCH) || in->imm == BPF_XCHG)
		out = &f->regs[in->src_reg];
	if (out) {
		if (size == 4)
			vreg_set_urange(out, 0, 0xffffffffull);
		else
			vreg_mark_unknown(out);
		out->varying = vary;
	}
	return 0;
}

static int size_of(uint8_t sz)
{
	return sz == BPF_B ? 1 : sz == BPF_H ? 2 : sz == BPF_W ? 4 : 8;
}

/* Does the insn read or write a lane-varying register? (for the JIT and
 * `bpf dump`). Called before and after the insn runs. */
static void mark_varying(struct venv *env, struct vstate *st, uint32_t idx, const struct bpf_insn *in)
{
	struct vframe *f = vcur(st);
	uint8_t cls = BPF_CLASS(in->code), op = BPF_OP(in->code);
	bool v = false;
	switch (cls) {
	case BPF_ALU:
	case BPF_ALU64:
		v = f->regs[in->dst_reg].varying || (BPF_SRC(in->code) == BPF_X && f->regs[in->src_reg].varying);
		break;
	case BPF_LDX:
		v = f->regs[in->dst_reg].varying || f->regs[in->src_reg].varying;
		break;
	case BPF_ST:
		v = f->regs[in->dst_reg].varying;
		break;
	case BPF_STX:
		v = f->regs[in->dst_reg].varying || f->regs[in->src_reg].varying;
		break;
	case BPF_LD:
		v = f->regs[in->dst_reg].varying;
		break;
	case BPF_JMP:
	case BPF_JMP32:
		if (op == BPF_CALL || op == BPF_EXIT)
			v = f->regs[0].varying && f->regs[0].type != V_NOT_INIT;
		else if (op != BPF_JA)
			v = f->regs[in->dst_reg].varying ||
			    (BPF_SRC(in->code) == BPF_X && f->regs[in->src_reg].varying);
		break;
	}
	if (v)
		env->varying[idx] = 1;
}

/* ------------------------------------------------------------ bpf_loop
 *
 * bpf_loop(n, cb, ctx, 0) runs cb any number of times from 0 to n: the
 * state after it must hold after every one of them, and each call of cb
 * must be safe in the state every earlier call left. So the callback is
 * not walked once but to a fixpoint: round k explores every path of cb
 * from the loop head J(k-1), the join of the caller's state before the
 * loop (no iteration: nothing cb wrote can be trusted) and of what every
 * path of every earlier round returned with; J(k) adds this round's
 * returns. It stops when J(k) = J(k-1), or after round n (no more calls
 * can happen). Rounds beyond V_LOOP_EXACT widen whatever still moves (a
 * bound to its extreme, a pointer offset to unbounded), so offsets a
 * callback advances in the caller's stack are refused unless checked,
 * and the rounds end. A slot that holds a pointer after some numbers of
 * iterations and something else after others becomes unreadable.
 *
 * Uniformity: the loop's return (its iteration count) is lane-varying when
 * a return of cb is; then so is every stack slot cb wrote, since how often
 * it was written depends on the lane. */


struct vcollect {
	struct vstate *join;             /* the loop head joined with every return */
	uint32_t base_insns, base_calls; /* path cost before the loop */
	uint32_t body_insns, body_calls; /* the costliest iteration */
	bool ret_varying;                /* some return of cb is lane-varying */
};

static int run_paths(struct venv *env, struct vstate *cur, int64_t idx, struct vcollect *col);

/* Join of the values one place holds after different iterations: wider
 * ranges and offsets; false if they are of different types (or different
 * maps, frames or null-check ids). */
static bool join_value(struct vreg *c, const struct vreg *o)
{
	if (c->type != o->type)
		return false;
	c->varying |= o->varying;
	switch (c->type) {
	case V_NOT_INIT:
		return true;
	case V_SCALAR:
		join_reg(c, o);
		return true;
	case V_CONST_MAP:
	case V_PTR_FUNC:
		return c->map_idx == o->map_idx;
	case V_PTR_MAP_VALUE_OR_NULL:
		if (c->id != o->id)
			return false;
		/* fall through */
	default:
		if (c->map_idx != o->map_idx || c->frame != o->frame)
			return false;
		c->omin = c->omin < o->omin ? c->omin : o->omin;
		c->omax = c->omax > o->omax ? c->omax : o->omax;
		c->tz = c->tz < o->tz ? c->tz : o->tz;
		return true;
	}
}

static void join_slot(struct vslot *c, const struct vslot *o)
{
	uint8_t init = c->init & o->init, poison = c->poison | o->poison, mixed = c->mixed | o->mixed;
	bool addr = vslot_has_addr(c) || vslot_has_addr(o);
	c->varying |= o->varying | (c->kind == SLOT_SPILL ? c->spill.varying : 0) |
		      (o->kind == SLOT_SPILL ? o->spill.varying : 0);
	c->written |= o->written;
	if (c->kind == SLOT_SPILL && o->kind == SLOT_SPILL && join_value(&c->spill, &o->spill)) {
		c->spill.varying = c->varying;
		return;
	}
	if (addr) {
		/* a pointer after some iterations, other bytes after others */
		poison |= 0xff;
		init = 0;
		mixed = 1;
	}
	c->kind = init ? SLOT_MISC : SLOT_INVALID;
	c->init = init;
	c->poison = poison & (uint8_t)~init;
	c->mixed = c->poison ? mixed : 0;
}

static void join_state(struct vstate *c, const struct vstate *o)
{
	for (int i = 0; i < c->nframes; i++) {
		struct vframe *cf = c->frames[i];
		const struct vframe *of = o->frames[i];
		for (int r = 0; r < 11; r++)
			if (!join_value(&cf->regs[r], &of->regs[r]))
				memset(&cf->regs[r], 0, sizeof(cf->regs[r]));
		for (int k = 0; k < V_SLOTS; k++)
			join_slot(&cf->stack[k], &of->stack[k]);
	}
}

/* Whatever still moves between rounds goes to its extreme; of the known
 * bits only the low run stays (alignment), so rounds must end. */
static void widen_value(struct vreg *c, const struct vreg *prev)
{
	if (c->type != prev->type)
		return;
	if (c->type == V_SCALAR) {
		if (c->umin < prev->umin)
			c->umin = 0;
		if (c->umax > prev->umax)
			c->umax = UINT64_MAX;
		if (c->smin < prev->smin)
			c->smin = INT64_MIN;
		if (c->smax > prev->smax)
			c->smax = INT64_MAX;
		if (c->kmask != prev->kmask || c->kval != prev->kval) {
			int low = ~c->kmask ? __builtin_ctzll(~c->kmask) : 64;
			c->kmask = low >= 64 ? UINT64_MAX : (1ull << low) - 1;
			c->kval &= c->kmask;
		}
		vreg_sync(c);
	} else if (is_ptr(c) && (c->omin != prev->omin || c->omax != prev->omax)) {
		c->omin = INT64_MIN;
		c->omax = INT64_MAX;
	}
}

static void widen_state(struct vstate *c, const struct vstate *prev)
{
	for (int i = 0; i < c->nframes; i++) {
		struct vframe *cf = c->frames[i];
		const struct vframe *pf = prev->frames[i];
		for (int r = 0; r < 11; r++)
			widen_value(&cf->regs[r], &pf->regs[r]);
		for (int k = 0; k < V_SLOTS; k++)
			if (cf->stack[k].kind == SLOT_SPILL && pf->stack[k].kind == SLOT_SPILL)
				widen_value(&cf->stack[k].spill, &pf->stack[k].spill);
	}
}

/* A path returned from the callback (do_exit left its frame on top). */
static void collect_return(struct venv *env, struct vcollect *col, struct vstate *st)
{
	struct vframe *f = vcur(st);
	uint32_t bi = st->path_insns - col->base_insns, bc = st->path_calls - col->base_calls;
	col->ret_varying |= f->regs[0].varying;
	if (bi > col->body_insns)
		col->body_insns = bi;
	if (bc > col->body_calls)
		col->body_calls = bc;
	frame_put(env, f);
	st->nframes--;
	forget_dead_frame_ptrs(st);
	join_state(col->join, st);
}

static uint32_t sat_u32(uint64_t v)
{
	return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* One round: every path of cb from the loop head `head`, their returns
 * joined into `next` (a copy of head). */
static int loop_round(struct venv *env, const struct vstate *head, struct vstate *next, uint32_t idx, uint32_t cb,
		      uint64_t n, const struct vreg *cbctx, struct vcollect *col)
{
	struct vstate start;
	int err = state_copy(env, &start, head);
	if (err)
		return err;
	if ((err = state_copy(env, next, head))) {
		state_free(env, &start);
		return err;
	}
	col->join = next;
	err = enter_frame(env, &start, idx, cb, true, n, cbctx);
	if (err) {
		state_free(env, &start);
		return err;
	}
	return run_paths(env, &start, cb, col);
}

/* st: the caller at bpf_loop (r1-r5 clobbered); becomes the state after
 * any number of iterations from 0 to n. */
static int loop_summary(struct venv *env, struct vstate *st, uint32_t idx, uint32_t cb, uint64_t n,
			const struct vreg *cbctx)
{
	static const struct vcollect zero;
	struct vcollect col = zero;
	struct vstate head, next;
	uint8_t written[V_MAX_FRAMES][V_SLOTS];
	int err = state_copy(env, &head, st);
	if (err)
		return err;
	head.parent = NULL;
	for (int i = 0; i < head.nframes; i++)
		for (int k = 0; k < V_SLOTS; k++) {
			written[i][k] = head.frames[i]->stack[k].written;
			head.frames[i]->stack[k].written = 0;
		}
	col.base_insns = st->path_insns;
	col.base_calls = st->path_calls;
	for (uint32_t k = 1;; k++) {
		if (k > V_LOOP_ROUNDS) {
			err = verr(env, idx, "bpf_loop callback: no fixpoint after %d rounds", V_LOOP_ROUNDS);
			break;
		}
		if ((err = loop_round(env, &head, &next, idx, cb, n, cbctx, &col))) {
			state_free(env, &next);
			break;
		}
		bool done = k >= n || state_covers(NULL, idx, &head, &next);
		if (!done && k >= V_LOOP_EXACT)
			widen_state(&next, &head);
		state_free(env, &head);
		head = next;
		if (done)
			break;
	}
	if (err) {
		state_free(env, &head);
		return err;
	}
	struct vreg *r0 = &vcur(&head)->regs[0];
	vreg_set_urange(r0, 0, n);
	r0->varying = col.ret_varying;
	for (int i = 0; i < head.nframes; i++)
		for (int k = 0; k < V_SLOTS; k++) {
			struct vslot *s = &head.frames[i]->stack[k];
			if (col.ret_varying && s->written) {
				s->varying = 1;
				s->spill.varying = 1;
			}
			s->written |= written[i][k];
		}
	/* the path pays for n of the costliest iteration */
	head.path_insns = sat_u32(col.base_insns + n * col.body_insns);
	head.path_calls = sat_u32(col.base_calls + n * col.body_calls);
	head.back_edges = st->back_edges;
	head.parent = st->parent;
	st->parent = NULL;
	state_free(env, st);
	*st = head;
	return 0;
}

/* One instruction. *next: the next insn of this state, -1 when the path ended. */
static int step(struct venv *env, struct vstate *st, uint32_t idx, int64_t *next)
{
	const struct bpf_insn *in = &env->insns[idx];
	struct vframe *f = vcur(st);
	uint8_t cls = BPF_CLASS(in->code);
	int err = 0;
	*next = (int64_t)idx + 1;
	if (env->collect)
		vfacts_record(env, idx, st);
	bool is_call = (cls == BPF_JMP) && BPF_OP(in->code) == BPF_CALL;
	if (cls != BPF_LD && !is_call)
		mark_varying(env, st, idx, in);
	switch (cls) {
	case BPF_ALU:
	case BPF_ALU64:
		err = do_alu(env, st, idx, in);
		break;
	case BPF_LD: {
		struct vreg *d = &f->regs[in->dst_reg];
		const struct bpf_insn *in2 = in + 1;
		memset(d, 0, sizeof(*d));
		switch (in->src_reg) {
		case 0:
			vreg_set_const(d, (uint32_t)in->imm | ((uint64_t)(uint32_t)in2->imm << 32));
			break;
		case BPF_PSEUDO_MAP_IDX:
			d->type = V_CONST_MAP;
			d->map_idx = in->imm;
			break;
		case BPF_PSEUDO_MAP_IDX_VALUE:
			d->type = V_PTR_MAP_VALUE;
			d->map_idx = in->imm;
			d->omin = d->omax = in2->imm;
			d->tz = in2->imm ? (uint8_t)__builtin_ctz((uint32_t)in2->imm) : 63;
			break;
		case BPF_PSEUDO_FUNC:
			d->type = V_PTR_FUNC;
			d->map_idx = (int32_t)((int64_t)idx + in->imm + 1);
			break;
		}
		*next = (int64_t)idx + 2;
		break;
	}
	case BPF_LDX:
		if ((err = check_base(env, idx, &f->regs[in->src_reg], in->src_reg)))
			break;
		err = vmem_access(env, st, idx, in->src_reg, in->off, size_of(BPF_SIZE(in->code)), false,
				  in->dst_reg, BPF_MODE(in->code) == BPF_MEMSX, false);
		break;
	case BPF_ST:
	case BPF_STX:
		if ((err = check_base(env, idx, &f->regs[in->dst_reg], in->dst_reg)))
			break;
		if (BPF_MODE(in->code) == BPF_ATOMIC) {
			err = do_atomic(env, st, idx, in);
			break;
		}
		err = vmem_access(env, st, idx, in->dst_reg, in->off, size_of(BPF_SIZE(in->code)), true,
				  cls == BPF_STX ? in->src_reg : -1, false, false);
		break;
	case BPF_JMP:
	case BPF_JMP32: {
		uint8_t op = BPF_OP(in->code);
		if (op == BPF_JA) {
			*next = jmp_target(in, idx);
			if (*next <= idx)
				st->back_edges++;
		} else if (op == BPF_EXIT) {
			err = do_exit(env, st, idx, next);
		} else if (op == BPF_CALL && in->src_reg == BPF_PSEUDO_CALL) {
			uint32_t t = (uint32_t)((int64_t)idx + in->imm + 1);
			err = enter_frame(env, st, idx, t, false, 0, NULL);
			*next = t;
		} else if (op == BPF_CALL) {
			uint32_t cb = UINT32_MAX;
			uint64_t iters = 0;
			struct vreg cbctx = f->regs[3]; /* bpf_loop's ctx, before the call clobbers r1-r5 */
			st->path_calls++;
			err = vhelper_call(env, st, idx, in->imm, &cb, &iters);
			if (!err && cb != UINT32_MAX) {
				if (!env->subprogs[env->subprog_of[cb]].is_callback || cb !=
				    env->subprogs[env->subprog_of[cb]].start) {
					err = verr(env, idx, "bpf_loop callback is not a function");
				} else if (iters == 0) {
					vreg_set_const(&vcur(st)->regs[0], 0);
				} else {
					err = loop_summary(env, st, idx, cb, iters, &cbctx);
				}
			}
		} else {
			err = do_branch(env, st, idx, in, next);
		}
		break;
	}
	default:
		err = verr(env, idx, "invalid opcode 0x%02x", in->code);
	}
	if (err)
		return err;
	if ((cls != BPF_JMP && cls != BPF_JMP32) || (is_call && st->nframes && vcur(st)->callsite != (int32_t)idx))
		mark_varying(env, st, idx, in);
	st->path_insns++;
	if (st->path_insns > env->budget.max_path_insns) {
		if (st->back_edges)
			return verr(env, idx, "loop not provably bounded within %u insns (hook budget)",
				    env->budget.max_path_insns);
		return verr(env, idx, "path longer than %u insns (hook budget)", env->budget.max_path_insns);
	}
	if (st->path_calls > env->budget.max_helper_calls)
		return verr(env, idx, "more than %u helper calls on one path (hook budget)",
			    env->budget.max_helper_calls);
	return 0;
}

/* The largest combined stack along any call chain. */
static uint32_t chain_depth(struct venv *env, uint32_t sp, int depth)
{
	if (depth > V_MAX_FRAMES)
		return 0;
	uint32_t best = 0;
	for (uint32_t c = 0; c < env->nsubprogs; c++)
		if (env->subprogs[sp].calls[c]) {
			uint32_t d = chain_depth(env, c, depth + 1);
			if (d > best)
				best = d;
		}
	return ((env->subprogs[sp].stack_depth + 7) & ~7u) + best;
}

/* A bpf_loop callback's paths are rounds of a loop summary (their cost is
 * multiplied, their states joined): no pruning there. */
static bool in_callback(const struct vstate *st)
{
	for (int i = 0; i < st->nframes; i++)
		if (st->frames[i]->is_callback)
			return true;
	return false;
}

/* Walk every path from cur at idx, depth first (pending branches above the
 * current watermark). With col: the paths are a bpf_loop callback's, each
 * ends where the callback returns and goes to col. Frees cur. */
static int run_paths(struct venv *env, struct vstate *cur, int64_t idx, struct vcollect *col)
{
	uint32_t base = env->npending;
	int err = 0;
	for (;;) {
		if (idx >= 0) {
			if (++env->processed > env->budget.max_processed) {
				err = verr(env, (uint32_t)idx, "program too complex: more than %u insns processed",
					   env->budget.max_processed);
				break;
			}
			if (env->prune_point[idx] && !in_callback(cur)) {
				int r = prune_or_store(env, cur, (uint32_t)idx);
				if (r < 0) {
					err = r;
					break;
				}
				if (r == 1)
					idx = -2; /* pruned: path_end already done */
			}
		}
		if (idx >= 0) {
			int64_t next;
			err = step(env, cur, (uint32_t)idx, &next);
			if (err)
				break;
			if (next == V_CB_RETURN) {
				if (!col) {
					err = -EFAULT;
					break;
				}
				collect_return(env, col, cur);
				next = -1;
			} else if (next == -1) {
				path_end(env, cur, cur->path_insns, cur->path_calls);
			}
			idx = next == -1 ? -2 : next;
			continue;
		}
		/* path over: next pending branch */
		state_free(env, cur);
		if (env->npending == base)
			break;
		struct vpending *p = &env->pending[--env->npending];
		*cur = p->st;
		idx = p->insn;
	}
	state_free(env, cur);
	while (env->npending > base)
		state_free(env, &env->pending[--env->npending].st);
	return err;
}

static int explore(struct venv *env)
{
	struct vstate cur = { 0 };
	cur.frames[0] = frame_get(env);
	if (!cur.frames[0])
		return -ENOMEM;
	memset(cur.frames[0], 0, sizeof(struct vframe));
	cur.nframes = 1;
	struct vframe *f0 = cur.frames[0];
	f0->callsite = -1;
	f0->regs[1].type = V_PTR_CTX;
	f0->regs[1].tz = 63;
	f0->regs[10].type = V_PTR_STACK;
	f0->regs[10].tz = 63;
	return run_paths(env, &cur, 0, NULL);
}

static void env_free(struct venv *env)
{
	free(env->prune_point);
	free(env->live);
	free(env->is_jmp_target);
	free(env->subprog_of);
	for (uint32_t s = 0; s < env->nsubprogs; s++)
		free(env->subprogs[s].calls);
	free(env->subprogs);
	if (env->stored) {
		for (uint32_t i = 0; i < env->cnt; i++) {
			struct vstored *s = env->stored[i];
			while (s) {
				struct vstored *n = s->next;
				state_free(env, &s->st);
				free(s);
				s = n;
			}
		}
	}
	free(env->stored);
	free(env->nstored);
	while (env->free_frames) {
		struct vframe *f = env->free_frames;
		env->free_frames = *(struct vframe **)f;
		free(f);
	}
	free(env->pending);
	free(env->varying);
	gx_vfacts_free(env->facts, env->cnt);
}

void gx_vfacts_free(struct gx_vfacts *f, size_t cnt)
{
	(void)cnt;
	free(f);
}

/* Here rather than in object.c: the verifier alone (gx_bpf_verify_insns,
 * linked into the shim) must not pull in the libbpf-based loader. */
void gx_bpf_prog_clear_verdict(struct gx_bpf_prog *p)
{
	free(p->vmsg);
	p->vmsg = NULL;
	free(p->varying);
	p->varying = NULL;
	gx_vfacts_free(p->facts, p->insn_cnt);
	p->facts = NULL;
	p->verified = false;
	p->stack_depth = 0;
	memset(&p->stats, 0, sizeof(p->stats));
}

GX_EXPORT int gx_bpf_prog__verify(struct gx_bpf_prog *prog, const struct gx_bpf_verify_opts *opts)
{
	struct venv env = { 0 };
	if (!prog)
		return gx_err(-EINVAL);
	if (gx_opts_copy(&env.opts, sizeof(env.opts), opts, opts ? opts->sz : 0))
		return gx_err(-EINVAL);
	gx_bpf_prog_clear_verdict(prog);
	env.prog = prog;
	env.insns = prog->insns;
	env.cnt = (uint32_t)prog->insn_cnt;
	env.sec = prog->sec;
	if (!env.sec)
		return gx_err(-EINVAL);
	env.budget = env.sec->budget;
	if (env.opts.budget.max_path_insns)
		env.budget.max_path_insns = env.opts.budget.max_path_insns;
	if (env.opts.budget.max_helper_calls)
		env.budget.max_helper_calls = env.opts.budget.max_helper_calls;
	if (env.opts.budget.max_processed)
		env.budget.max_processed = env.opts.budget.max_processed;
	env.simt = (env.sec->flags & GX_BPF_SEC_DEVICE) && !(env.opts.flags & GX_BPF_VERIFY_NO_SIMT);
	env.collect = env.opts.collect_facts;
	int err = 0;
	if (prog->insn_cnt > (1u << 20)) {
		err = verr(&env, 0, "program too large (%zu insns)", prog->insn_cnt);
		goto out;
	}
	err = vcfg_check(&env);
	err = err ?: vcfg_liveness(&env);
	if (err)
		goto out;
	env.stored = calloc(env.cnt, sizeof(*env.stored));
	env.nstored = calloc(env.cnt, sizeof(*env.nstored));
	env.varying = calloc(env.cnt, 1);
	if (env.collect)
		env.facts = calloc(env.cnt, sizeof(*env.facts));
	if (!env.stored || !env.nstored || !env.varying || (env.collect && !env.facts)) {
		err = -ENOMEM;
		goto out;
	}
	err = explore(&env);
	if (!err) {
		uint32_t depth = chain_depth(&env, 0, 0);
		if (depth > V_STACK)
			err = verr(&env, 0, "combined stack of %u bytes exceeds %d", depth, V_STACK);
		prog->stack_depth = depth;
	}
out:
	prog->stats.processed = env.processed;
	prog->stats.max_path_insns = env.max_path;
	prog->stats.max_helper_calls = env.max_calls;
	prog->stats.states = env.nstates;
	if (env.collect) {
		prog->facts = env.facts;
		env.facts = NULL;
	}
	if (!err) {
		prog->verified = true;
		prog->varying = env.varying;
		env.varying = NULL;
	} else if (err == -EINVAL && env.msg[0]) {
		prog->vmsg = strdup(env.msg);
		if (env.opts.log)
			env.opts.log(env.opts.log_user, env.msg);
		if (!env.opts.quiet)
			pr_warn("bpf: %s\n", env.msg);
	}
	env_free(&env);
	return gx_err(err);
}

GX_EXPORT int gx_bpf_object__verify(struct gx_bpf_object *obj, const struct gx_bpf_verify_opts *opts)
{
	if (!obj)
		return gx_err(-EINVAL);
	for (size_t i = 0; i < obj->prog_cnt; i++) {
		int err = gx_bpf_prog__verify(&obj->progs[i], opts);
		if (err)
			return err;
	}
	return 0;
}

GX_EXPORT int gx_bpf_verify_insns(const char *name, const struct bpf_insn *insns, size_t cnt,
				  const struct gx_bpf_sec_def *sec, const struct gx_bpf_map_desc *maps, size_t nr_maps,
				  const struct gx_bpf_verify_opts *opts, char *msg, size_t msg_len)
{
	if (msg && msg_len)
		msg[0] = 0;
	if (!name || !insns || !sec || (nr_maps && !maps) || (sec->nr_args && !sec->args) ||
	    (sec->nr_helpers && !sec->helpers) || (sec->nr_args && sec->ctx_size != 8 * sec->nr_args))
		return gx_err(-EINVAL);
	for (uint32_t i = 0; i < sec->nr_args; i++)
		if (sec->args[i].size && (!sec->args[i].type || sec->args[i].type > 15))
			return gx_err(-EINVAL);
	struct gx_bpf_verify_opts o = { .sz = sizeof(o) };
	if (gx_opts_copy(&o, sizeof(o), opts, opts ? opts->sz : 0))
		return gx_err(-EINVAL);
	o.sz = sizeof(o);
	o.quiet = true;
	o.collect_facts = false;
	struct gx_bpf_object obj = { .name = (char *)name, .map_cnt = nr_maps };
	obj.maps = calloc(nr_maps ? nr_maps : 1, sizeof(*obj.maps));
	if (!obj.maps)
		return gx_err(-ENOMEM);
	for (size_t i = 0; i < nr_maps; i++) {
		struct gx_bpf_map *m = &obj.maps[i];
		m->obj = &obj;
		m->name = (char *)(maps[i].name ? maps[i].name : "?");
		m->idx = i;
		m->type = maps[i].type;
		m->key_size = maps[i].key_size;
		m->value_size = maps[i].value_size;
		m->max_entries = maps[i].max_entries;
		m->gx_flags = maps[i].gx_flags;
		m->init = (void *)maps[i].init;
	}
	struct gx_bpf_prog prog = { .obj = &obj, .name = (char *)name, .sec_name = (char *)sec->prefix, .sec = sec,
				    .insns = (struct bpf_insn *)insns, .insn_cnt = cnt };
	obj.progs = &prog;
	obj.prog_cnt = 1;
	int err = gx_bpf_prog__verify(&prog, &o);
	if (err && msg && msg_len)
		snprintf(msg, msg_len, "%s", prog.vmsg ? prog.vmsg : strerror(-err));
	gx_bpf_prog_clear_verdict(&prog);
	free(obj.maps);
	return err;
}
