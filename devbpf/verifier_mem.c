/* verifier_mem.c — every load, store and atomic, and helper memory
 * arguments: which base pointers may be dereferenced, bounds against the
 * context size / 512-byte stack / map value size, natural alignment (the
 * JIT maps these to PTX local/global accesses, which fault when misaligned),
 * initialised-stack tracking, read-only maps, and the SIMT rules for
 * writes (no store or atomic through a lane-varying map value pointer). */
#include <string.h>

#include "devbpf/verifier_internal.h"

struct vframe *vcur(struct vstate *st)
{
	return st->frames[st->nframes - 1];
}

static uint8_t ctz_off(int64_t v)
{
	return v ? (uint8_t)__builtin_ctzll((uint64_t)v) : 63;
}

static int log2sz(int size)
{
	return size == 1 ? 0 : size == 2 ? 1 : size == 4 ? 2 : 3;
}

static void scalar_of_size(struct vreg *r, int size, bool sx)
{
	uint8_t v = r->varying;
	if (size == 8 || sx) {
		vreg_mark_unknown(r);
		if (sx && size < 8) {
			int64_t m = (int64_t)1 << (size * 8 - 1);
			r->smin = -m, r->smax = m - 1;
			vreg_sync(r);
		}
	} else {
		vreg_set_urange(r, 0, (1ull << (size * 8)) - 1);
	}
	r->varying = v;
}

static const char *ptr_name(const struct vreg *r)
{
	switch (r->type) {
	case V_NOT_INIT: return "uninitialized";
	case V_SCALAR: return "scalar";
	case V_PTR_CTX: return "ctx";
	case V_CONST_MAP: return "map handle";
	case V_PTR_MAP_VALUE: return "map value";
	case V_PTR_MAP_VALUE_OR_NULL: return "map value or null";
	case V_PTR_STACK: return "stack";
	case V_PTR_FUNC: return "function";
	case V_PTR_ARG: return "argument";
	}
	return "?";
}

static int bad_base(struct venv *env, uint32_t idx, uint8_t regno, const struct vreg *p)
{
	if (p->type == V_NOT_INIT)
		return verr(env, idx, "read of uninitialized register r%d", regno);
	if (p->type == V_PTR_MAP_VALUE_OR_NULL)
		return verr(env, idx, "map value pointer may be null (missing null check)");
	return verr(env, idx, "invalid memory access through %s r%d", ptr_name(p), regno);
}

/* Stack bytes [o, o+size) of frame f (o negative): all initialised? */
static bool stack_init(const struct vframe *f, int64_t o, int size, bool *varying)
{
	for (int64_t b = o; b < o + size; b++) {
		int64_t pos = -b - 1; /* 0 = byte just below the frame top */
		const struct vslot *s = &f->stack[pos / 8];
		int bit = 7 - (int)(pos % 8);
		if (!(s->init & (1u << bit)))
			return false;
		if (varying && s->varying)
			*varying = true;
	}
	return true;
}

/* Is one of the bytes what a partial store left of a pointer? */
static bool stack_poisoned(const struct vframe *f, int64_t o, int size)
{
	for (int64_t b = o; b < o + size; b++) {
		int64_t pos = -b - 1;
		if (f->stack[pos / 8].poison & (1u << (7 - (int)(pos % 8))))
			return true;
	}
	return false;
}

/* The first slot overlapping [o, o+size) that holds an address; its offset
 * in *at. */
static bool stack_has_addr(const struct vframe *f, int64_t o, int size, int64_t *at)
{
	for (int64_t k = (-o - 1) / 8; k >= 0 && k >= (-(o + size)) / 8; k--)
		if (vslot_has_addr(&f->stack[k])) {
			*at = -(k + 1) * 8;
			return true;
		}
	return false;
}

/* Why [o, o+size) cannot be read: part of a pointer, or never written. */
static int stack_unreadable(struct venv *env, uint32_t idx, const struct vframe *f, int64_t o, int size)
{
	const struct vslot *s = &f->stack[(-o - 1) / 8];
	if (stack_poisoned(f, o, size) && s->mixed)
		return verr(env, idx, "stack offset %lld holds different types after different numbers of bpf_loop iterations",
			    (long long)o);
	if (stack_poisoned(f, o, size))
		return verr(env, idx, "read of a partially overwritten spilled pointer (stack offset %lld)", (long long)o);
	return verr(env, idx, "read of uninitialized stack (offset %lld)", (long long)o);
}

/* An 8-byte store of a register spills it; anything else writes data bytes.
 * A partial store into a spilled pointer leaves the rest of the pointer
 * poisoned: read back, those bytes would leak its address. */
static void stack_write(struct vframe *f, int64_t o, int size, const struct vreg *val)
{
	if (size == 8 && val) {
		struct vslot *s = &f->stack[(-o - 1) / 8];
		s->kind = SLOT_SPILL;
		s->init = 0xff;
		s->poison = 0;
		s->written = 1;
		s->spill = *val;
		s->varying = val->varying;
		return;
	}
	for (int64_t b = o; b < o + size; b++) {
		int64_t pos = -b - 1;
		struct vslot *s = &f->stack[pos / 8];
		uint8_t bit = (uint8_t)(1u << (7 - (int)(pos % 8)));
		if (s->kind != SLOT_MISC) {
			if (vslot_has_addr(s)) {
				s->poison = s->init;
				s->mixed = 0;
				s->init = 0;
			}
			if (s->kind == SLOT_SPILL)
				s->varying = s->spill.varying;
			s->kind = SLOT_MISC;
		}
		s->written = 1;
		s->init |= bit;
		s->poison &= (uint8_t)~bit;
		if (val && val->varying)
			s->varying = 1;
	}
}

bool vmem_stack_varying(struct vstate *st, const struct vreg *p, int16_t off, int size, bool mark)
{
	if (p->type != V_PTR_STACK || p->frame >= st->nframes || p->omin == INT64_MIN || p->omax == INT64_MAX)
		return false;
	int64_t lo = p->omin + off, hi = p->omax + off + size;
	if (lo < -V_STACK || hi > 0)
		return false;
	struct vframe *f = st->frames[p->frame];
	bool vary = false;
	for (int64_t k = (-lo - 1) / 8; k >= 0 && k >= -hi / 8; k--) {
		struct vslot *s = &f->stack[k];
		vary |= s->varying || (s->kind == SLOT_SPILL && s->spill.varying);
		if (mark && s->kind != SLOT_SPILL)
			s->varying = 1;
	}
	return vary;
}

static void note_depth(struct venv *env, struct vstate *st, int frame, int64_t o)
{
	struct vsubprog *sp = &env->subprogs[st->frames[frame]->subprog];
	if ((uint64_t)-o > sp->stack_depth)
		sp->stack_depth = (uint32_t)-o;
}

/* A stack access at a bounded variable offset (e.g. an array on the stack
 * indexed by a masked value): every byte it may touch is inside the frame;
 * a read needs all of them initialised and gives an unknown scalar; a write
 * (scalars only) leaves initialisation as it was (which byte it wrote is
 * unknown) and turns spilled registers it may hit into plain data. */
static int var_stack(struct venv *env, struct vstate *st, uint32_t idx, const struct vreg *p, int16_t off,
		     int size, bool write, const struct vreg *val, int value_reg, bool sx, bool atomic)
{
	if (p->frame >= st->nframes)
		return verr(env, idx, "invalid stack pointer r%d", value_reg);
	if (p->omin == INT64_MIN || p->omax == INT64_MAX)
		return verr(env, idx, "unbounded offset into the stack");
	int64_t lo = p->omin + off, hi = p->omax + off + size;
	if (lo < -V_STACK || hi > 0)
		return verr(env, idx, "stack access out of bounds (offset %lld..%lld, size %d)", (long long)lo,
			    (long long)(p->omax + off), size);
	uint8_t tz = p->tz < ctz_off(off) ? p->tz : ctz_off(off);
	if (tz < log2sz(size))
		return verr(env, idx, "misaligned stack access (size %d)", size);
	struct vframe *sf = st->frames[p->frame];
	note_depth(env, st, p->frame, lo);
	bool vary = p->varying;
	int64_t at;
	if ((!write || atomic) && stack_has_addr(sf, lo, (int)(hi - lo), &at))
		return verr(env, idx, "variable-offset %s a spilled pointer (stack offset %lld)",
			    atomic ? "atomic operation on" : "read of", (long long)at);
	if ((!write || atomic) && !stack_init(sf, lo, (int)(hi - lo), &vary))
		return verr(env, idx, "read of uninitialized stack (offset %lld..%lld)", (long long)lo,
			    (long long)(hi - 1));
	if (write) {
		if (val->type != V_SCALAR || val->addr)
			return verr(env, idx, "storing a pointer at a variable stack offset is not allowed");
		for (int64_t b = lo; b < hi; b++) {
			struct vslot *s = &sf->stack[(-b - 1) / 8];
			if (vslot_has_addr(s)) {
				/* which bytes of the pointer were hit is unknown */
				s->poison = s->init;
				s->mixed = 0;
				s->init = 0;
			}
			s->written = 1;
			if (s->kind == SLOT_SPILL) {
				s->varying |= s->spill.varying;
				s->kind = SLOT_MISC;
			}
			if (val->varying || p->varying)
				s->varying = 1;
		}
		return 0;
	}
	struct vreg *d = &vcur(st)->regs[value_reg];
	d->varying = vary;
	scalar_of_size(d, size, sx);
	return 0;
}

int vmem_access(struct venv *env, struct vstate *st, uint32_t idx, uint8_t ptr_reg, int16_t off,
		int size, bool write, int value_reg, bool sx, bool atomic)
{
	struct vframe *f = vcur(st);
	struct vreg *p = &f->regs[ptr_reg];
	struct vreg immv, *val = NULL;
	if (write) {
		if (value_reg >= 0) {
			val = &f->regs[value_reg];
			int err = vcheck_value(env, idx, val, value_reg);
			if (err)
				return err;
		} else {
			vreg_set_const(&immv, 0);
			immv.varying = 0;
			val = &immv;
		}
	}
	switch (p->type) {
	case V_PTR_CTX: {
		if (write)
			return verr(env, idx, "write to context is not allowed");
		if (p->omin != p->omax)
			return verr(env, idx, "variable offset on context pointer");
		int64_t o = p->omin + off;
		if (o < 0 || o + size > (int64_t)env->sec->ctx_size)
			return verr(env, idx, "context access out of bounds (offset %lld, size %d)",
				    (long long)o, size);
		if (o % size)
			return verr(env, idx, "misaligned context access (offset %lld, size %d)", (long long)o,
				    size);
		struct vreg *d = &f->regs[value_reg];
		if (env->sec->nr_args && env->sec->args[o / 8].size) {
			/* a struct_ops pointer argument: whole, or not at all
			 * (a part of a pointer would leak its address) */
			const struct gx_bpf_ctx_arg *a = &env->sec->args[o / 8];
			if (size != 8 || o % 8 || sx)
				return verr(env, idx, "partial read of pointer argument %lld (%s *)",
					    (long long)(o / 8), a->name ? a->name : "?");
			memset(d, 0, sizeof(*d));
			d->type = V_PTR_ARG;
			d->map_idx = (int32_t)(o / 8);
			d->tz = 63;
			return 0;
		}
		d->varying = 0; /* every context field is warp-uniform */
		scalar_of_size(d, size, sx);
		return 0;
	}
	case V_PTR_ARG: {
		/* read-only struct behind a handler argument (the kernel's
		 * trusted pointer to the member's struct type) */
		const struct gx_bpf_ctx_arg *a = varg_of(env, p);
		const char *an = a->name ? a->name : "argument";
		if (write)
			return verr(env, idx, "write into %s (handler arguments are read-only)", an);
		if (p->omin == INT64_MIN || p->omax == INT64_MAX)
			return verr(env, idx, "unbounded offset into %s", an);
		int64_t lo = p->omin + off, hi = p->omax + off + size;
		if (lo < 0 || hi > (int64_t)a->size)
			return verr(env, idx, "%s access out of bounds (offset %lld..%lld, size %d, struct size %u)", an,
				    (long long)lo, (long long)(p->omax + off), size, a->size);
		uint8_t tz = p->tz < ctz_off(off) ? p->tz : ctz_off(off);
		if (p->omin == p->omax)
			tz = ctz_off(p->omin + off);
		if (tz < log2sz(size))
			return verr(env, idx, "misaligned %s access (size %d)", an, size);
		struct vreg *d = &f->regs[value_reg];
		d->varying = 0;
		scalar_of_size(d, size, sx);
		return 0;
	}
	case V_PTR_STACK: {
		if (p->omin != p->omax && (env->sec->flags & GX_BPF_SEC_VAR_STACK))
			return var_stack(env, st, idx, p, off, size, write, val, value_reg, sx, atomic);
		if (p->omin != p->omax)
			return verr(env, idx, "variable offset stack access");
		if (p->frame >= st->nframes)
			return verr(env, idx, "invalid stack pointer r%d", ptr_reg);
		int64_t o = p->omin + off;
		if (o < -V_STACK || o + size > 0)
			return verr(env, idx, "stack access out of bounds (offset %lld, size %d)", (long long)o,
				    size);
		if (o % size)
			return verr(env, idx, "misaligned stack access (offset %lld, size %d)", (long long)o,
				    size);
		struct vframe *sf = st->frames[p->frame];
		note_depth(env, st, p->frame, o);
		if (write && !atomic) {
			if (val->type != V_SCALAR && size != 8)
				return verr(env, idx, "partial store of a pointer");
			stack_write(sf, o, size, val); /* 8 bytes: a spill; else MISC bytes */
			return 0;
		}
		const struct vslot *s = &sf->stack[(-o - 1) / 8];
		/* a spilled pointer comes back whole into a register, or not at
		 * all: a part of it, or the old value an atomic returns, would
		 * be its address as a number */
		if (vslot_has_addr(s) && atomic)
			return verr(env, idx, "atomic operation on a spilled pointer (stack offset %lld)", (long long)o);
		if (vslot_has_addr(s) && (size != 8 || sx))
			return verr(env, idx, "partial read of a spilled pointer (stack offset %lld, size %d)",
				    (long long)o, size);
		bool vary = p->varying;
		if (!stack_init(sf, o, size, &vary))
			return stack_unreadable(env, idx, sf, o, size);
		if (atomic) {
			struct vreg u;
			vreg_mark_unknown(&u);
			u.varying = vary || val->varying;
			stack_write(sf, o, size, NULL);
			sf->stack[(-o - 1) / 8].varying |= u.varying;
			return 0;
		}
		struct vreg *d = &f->regs[value_reg];
		if (size == 8 && s->kind == SLOT_SPILL && !sx) {
			*d = s->spill;
		} else if (s->kind == SLOT_SPILL && s->spill.type == V_SCALAR && vreg_is_const(&s->spill) &&
			   size < 8 && !sx) {
			/* little-endian slice of a spilled constant */
			int shift = (int)((o - (-((-o - 1) / 8 + 1) * 8)) * 8);
			uint64_t v = s->spill.umin >> shift;
			vreg_set_const(d, size == 8 ? v : v & ((1ull << (size * 8)) - 1));
			d->varying = vary;
		} else {
			d->varying = vary;
			scalar_of_size(d, size, sx);
		}
		return 0;
	}
	case V_PTR_MAP_VALUE: {
		struct gx_bpf_map *m = &env->prog->obj->maps[p->map_idx];
		if (p->omin == INT64_MIN || p->omax == INT64_MAX)
			return verr(env, idx, "unbounded offset into map value");
		int64_t lo = p->omin + off, hi = p->omax + off + size;
		if (lo < 0 || hi > (int64_t)m->value_size)
			return verr(env, idx,
				    "map value access out of bounds (offset %lld..%lld, size %d, value_size %u)",
				    (long long)lo, (long long)(p->omax + off), size, m->value_size);
		uint8_t tz = p->tz < ctz_off(off) ? p->tz : ctz_off(off);
		if (p->omin == p->omax)
			tz = ctz_off(p->omin + off);
		if (tz < log2sz(size))
			return verr(env, idx, "misaligned map value access (size %d)", size);
		if (write) {
			if (m->gx_flags & GX_BPF_MAP_F_RDONLY)
				return verr(env, idx, "write into read-only map '%s'", m->name);
			if (env->simt && p->varying)
				return verr(env, idx, atomic ? "atomic operation on lane-varying address"
							     : "map value write through lane-varying pointer");
			if (val->type != V_SCALAR)
				return verr(env, idx, "storing a pointer into a map is not allowed");
			return 0;
		}
		struct vreg *d = &f->regs[value_reg];
		if ((m->gx_flags & GX_BPF_MAP_F_RDONLY) && m->init && p->omin == p->omax) {
			/* .rodata knobs are constants the loader knows */
			uint64_t v = 0;
			memcpy(&v, (const uint8_t *)m->init + lo, (size_t)size);
			if (sx)
				v = gx_bpf_alu_eval(BPF_ALU64 | BPF_MOV | BPF_X, (int16_t)(size * 8), 0, 0, v);
			vreg_set_const(d, v);
			d->varying = p->varying;
			return 0;
		}
		d->varying = p->varying;
		scalar_of_size(d, size, sx);
		return 0;
	}
	default:
		return bad_base(env, idx, ptr_reg, p);
	}
}

int vmem_helper_mem(struct venv *env, struct vstate *st, uint32_t idx, uint8_t regno, uint64_t size,
		    bool write, bool *varying, const char *helper, const char *sink)
{
	struct vframe *f = vcur(st);
	struct vreg *p = &f->regs[regno];
	if (p->varying)
		*varying = true;
	switch (p->type) {
	case V_PTR_STACK: {
		if (p->omin != p->omax)
			return verr(env, idx, "variable offset stack access");
		if (p->frame >= st->nframes)
			return verr(env, idx, "invalid stack pointer r%d", regno);
		int64_t o = p->omin;
		if (o < -V_STACK || o + (int64_t)size > 0)
			return verr(env, idx, "stack access out of bounds (offset %lld, size %llu)", (long long)o,
				    (unsigned long long)size);
		struct vframe *sf = st->frames[p->frame];
		note_depth(env, st, p->frame, o);
		if (write) {
			stack_write(sf, o, (int)size, NULL);
			return 0;
		}
		int64_t at;
		if (stack_has_addr(sf, o, (int)size, &at))
			return verr(env, idx, "%s: r%d leaks addr into %s (pointer at stack offset %lld)", helper, regno,
				    sink, (long long)at);
		if (!stack_init(sf, o, (int)size, varying))
			return stack_unreadable(env, idx, sf, o, (int)size);
		return 0;
	}
	case V_PTR_MAP_VALUE: {
		struct gx_bpf_map *m = &env->prog->obj->maps[p->map_idx];
		if (p->omin == INT64_MIN || p->omax == INT64_MAX || p->omin < 0 ||
		    p->omax + (int64_t)size > (int64_t)m->value_size)
			return verr(env, idx, "map value access out of bounds (helper argument r%d)", regno);
		if (write && (m->gx_flags & GX_BPF_MAP_F_RDONLY))
			return verr(env, idx, "write into read-only map '%s'", m->name);
		return 0;
	}
	case V_PTR_CTX:
		if (write)
			return verr(env, idx, "write to context is not allowed");
		if (p->omin != p->omax || p->omin < 0 || p->omin + (int64_t)size > (int64_t)env->sec->ctx_size)
			return verr(env, idx, "context access out of bounds (helper argument r%d)", regno);
		if (env->sec->nr_args)
			return verr(env, idx, "helper argument r%d points to the argument array (pointer leak)", regno);
		return 0;
	case V_PTR_ARG: {
		const struct gx_bpf_ctx_arg *a = varg_of(env, p);
		if (write)
			return verr(env, idx, "write into %s (handler arguments are read-only)",
				    a->name ? a->name : "argument");
		if (p->omin == INT64_MIN || p->omax == INT64_MAX || p->omin < 0 ||
		    p->omax + (int64_t)size > (int64_t)a->size)
			return verr(env, idx, "%s access out of bounds (helper argument r%d)",
				    a->name ? a->name : "argument", regno);
		return 0;
	}
	case V_PTR_MAP_VALUE_OR_NULL:
		return verr(env, idx, "map value pointer may be null (missing null check)");
	case V_NOT_INIT:
		return verr(env, idx, "read of uninitialized register r%d", regno);
	default:
		return verr(env, idx, "helper argument r%d is not a pointer to memory", regno);
	}
}
