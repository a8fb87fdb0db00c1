/* interp.c — the reference eBPF interpreter.
 *
 * The semantics every translation (native ORC, PTX) is compared against in
 * differential tests, so it favours being obviously right over speed:
 * one switch, explicit widths, no undefined C behaviour (shifts masked,
 * signed division done on unsigned values with the overflow case spelled
 * out). Covers the cpu v4 ISA: ALU32/ALU64 (incl. sdiv/smod, movsx), byte
 * swaps, all JMP/JMP32 forms, ld_imm64 (map references resolved by the
 * caller), loads (incl. sign-extending), stores, atomics, helper calls through
 * a caller-supplied table, bpf-to-bpf calls and bpf_loop. Unsafe programs are
 * the verifier's business; the interpreter still never leaves its own stack
 * and reports bad opcodes or jumps instead of running past them. */
#include <stdlib.h>
#include <string.h>

#include "devbpf/verifier_internal.h"
#include "gpuext/gdev_helpers.h"
#include "common/gx_util.h"

#define STACK_SIZE 512
#define MAX_FRAMES 8

struct vm {
	const struct bpf_insn *insns;
	size_t cnt;
	const struct gx_bpf_interp_opts *o;
	uint64_t steps, max_steps;
	int depth;
	/* guards: addresses just outside the stack are ours, so a stray access
	 * next to it is caught instead of reaching a neighbour's memory */
	uint8_t guard_lo[STACK_SIZE];
	uint8_t stack[MAX_FRAMES * STACK_SIZE] __attribute__((aligned(16)));
	uint8_t guard_hi[STACK_SIZE];
};

/* Tag for subprogram addresses (BPF_PSEUDO_FUNC), seen only by bpf_loop. */
#define FUNC_TAG 0xbf0f000000000000ull

static uint64_t sext(uint64_t v, int bits)
{
	if (bits >= 64)
		return v;
	uint64_t m = 1ull << (bits - 1);
	v &= (1ull << bits) - 1;
	return (v ^ m) - m;
}

static uint64_t bswap(uint64_t v, int bits)
{
	switch (bits) {
	case 16: return __builtin_bswap16((uint16_t)v);
	case 32: return __builtin_bswap32((uint32_t)v);
	default: return __builtin_bswap64(v);
	}
}

/* Unsigned and signed division/modulo with BPF's rules for zero and for
 * INT_MIN / -1 (quotient wraps to INT_MIN, remainder 0). */
static uint64_t alu_div(uint64_t a, uint64_t b, bool is64, bool sgn, bool mod)
{
	if (!is64)
		a = (uint32_t)a, b = (uint32_t)b;
	if (b == 0 || (!is64 && (uint32_t)b == 0))
		return mod ? a : 0;
	if (!sgn)
		return mod ? a % b : a / b;
	if (is64) {
		int64_t x = (int64_t)a, y = (int64_t)b;
		if (y == -1)
			return mod ? 0 : (uint64_t)0 - a;
		return mod ? (uint64_t)(x % y) : (uint64_t)(x / y);
	}
	int32_t x = (int32_t)(uint32_t)a, y = (int32_t)(uint32_t)b;
	if (y == -1)
		return mod ? 0 : (uint32_t)(0u - (uint32_t)a);
	return mod ? (uint32_t)(x % y) : (uint32_t)(x / y);
}

static int alu(const struct bpf_insn *in, uint64_t *dst, uint64_t src)
{
	bool is64 = BPF_CLASS(in->code) == BPF_ALU64;
	uint64_t a = *dst, r;
	unsigned sh = is64 ? 63 : 31;
	if (!is64)
		a = (uint32_t)a, src = (uint32_t)src;
	switch (BPF_OP(in->code)) {
	case BPF_ADD: r = a + src; break;
	case BPF_SUB: r = a - src; break;
	case BPF_MUL: r = a * src; break;
	case BPF_DIV:
	case BPF_MOD:
		if (in->off != 0 && in->off != 1)
			return -EINVAL;
		r = alu_div(a, src, is64, in->off == 1, BPF_OP(in->code) == BPF_MOD);
		break;
	case BPF_OR: r = a | src; break;
	case BPF_AND: r = a & src; break;
	case BPF_XOR: r = a ^ src; break;
	case BPF_LSH: r = a << (src & sh); break;
	case BPF_RSH: r = a >> (src & sh); break;
	case BPF_ARSH:
		if (is64)
			r = (uint64_t)((int64_t)a >> (src & 63));
		else
			r = (uint32_t)((int32_t)(uint32_t)a >> (src & 31));
		break;
	case BPF_NEG:
		if (BPF_SRC(in->code) != BPF_K)
			return -EINVAL;
		r = 0 - a;
		break;
	case BPF_MOV:
		if (in->off && BPF_SRC(in->code) != BPF_X)
			return -EINVAL;
		if (in->off == 0)
			r = src;
		else if (in->off == 8 || in->off == 16 || (in->off == 32 && is64))
			r = sext(src, in->off);
		else
			return -EINVAL;
		break;
	case BPF_END:
		if (in->imm != 16 && in->imm != 32 && in->imm != 64)
			return -EINVAL;
		a = *dst;
		if (is64) { /* BPF_ALU64 | BPF_END: unconditional bswap */
			if (BPF_SRC(in->code) != BPF_TO_LE)
				return -EINVAL;
			r = bswap(a, in->imm);
		} else if (BPF_SRC(in->code) == BPF_TO_BE) {
			r = bswap(a, in->imm); /* host is little-endian */
		} else {
			r = in->imm == 64 ? a : a & ((1ull << in->imm) - 1);
		}
		*dst = r;
		return 0;
	default:
		return -EINVAL;
	}
	*dst = is64 ? r : (uint32_t)r;
	return 0;
}

static int jmp_taken(const struct bpf_insn *in, uint64_t a, uint64_t b)
{
	if (BPF_CLASS(in->code) == BPF_JMP32) {
		a = (uint32_t)a, b = (uint32_t)b;
		int32_t sa = (int32_t)a, sb = (int32_t)b;
		switch (BPF_OP(in->code)) {
		case BPF_JSGT: return sa > sb;
		case BPF_JSGE: return sa >= sb;
		case BPF_JSLT: return sa < sb;
		case BPF_JSLE: return sa <= sb;
		}
	} else {
		int64_t sa = (int64_t)a, sb = (int64_t)b;
		switch (BPF_OP(in->code)) {
		case BPF_JSGT: return sa > sb;
		case BPF_JSGE: return sa >= sb;
		case BPF_JSLT: return sa < sb;
		case BPF_JSLE: return sa <= sb;
		}
	}
	switch (BPF_OP(in->code)) {
	case BPF_JEQ: return a == b;
	case BPF_JNE: return a != b;
	case BPF_JGT: return a > b;
	case BPF_JGE: return a >= b;
	case BPF_JLT: return a < b;
	case BPF_JLE: return a <= b;
	case BPF_JSET: return (a & b) != 0;
	}
	return -1;
}

static int size_bytes(int sz)
{
	switch (sz) {
	case BPF_B: return 1;
	case BPF_H: return 2;
	case BPF_W: return 4;
	case BPF_DW: return 8;
	}
	return 0;
}

/* Check an access: inside our stack it must be in bounds; elsewhere the
 * caller's mem_ok decides (no callback: trusted, the program was verified). */
static int mem_check(struct vm *vm, uint64_t addr, int size, bool write)
{
	uint64_t lo = (uint64_t)(uintptr_t)vm->stack, hi = lo + sizeof(vm->stack);
	if (addr >= lo - STACK_SIZE && addr < hi + STACK_SIZE) {
		/* the live frames: the current one and its callers' above it */
		uint64_t cur = lo + (uint64_t)(MAX_FRAMES - vm->depth) * STACK_SIZE;
		return addr >= cur && addr + (uint64_t)size <= hi ? 0 : -EFAULT;
	}
	if (vm->o && vm->o->mem_ok && !vm->o->mem_ok(vm->o->user, addr, (uint32_t)size, write))
		return -EFAULT;
	if (!addr)
		return -EFAULT;
	return 0;
}

static uint64_t load(uint64_t addr, int size)
{
	const void *p = (const void *)(uintptr_t)addr;
	switch (size) {
	case 1: return *(const uint8_t *)p;
	case 2: { uint16_t v; memcpy(&v, p, 2); return v; }
	case 4: { uint32_t v; memcpy(&v, p, 4); return v; }
	default: { uint64_t v; memcpy(&v, p, 8); return v; }
	}
}

static void store(uint64_t addr, int size, uint64_t v)
{
	void *p = (void *)(uintptr_t)addr;
	switch (size) {
	case 1: *(uint8_t *)p = (uint8_t)v; break;
	case 2: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); break; }
	case 4: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
	default: memcpy(p, &v, 8); break;
	}
}

static int atomic_op(const struct bpf_insn *in, uint64_t addr, uint64_t *regs)
{
	int size = size_bytes(BPF_SIZE(in->code));
	if (size != 4 && size != 8)
		return -EINVAL;
	uint64_t *src = &regs[in->src_reg];
	int op = in->imm;
	bool fetch = op & BPF_FETCH;
	uint64_t old;
	if (size == 4) {
		uint32_t *p = (uint32_t *)(uintptr_t)addr, v = (uint32_t)*src;
		switch (op) {
		case BPF_ADD: case BPF_ADD | BPF_FETCH: old = __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); break;
		case BPF_OR: case BPF_OR | BPF_FETCH: old = __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); break;
		case BPF_AND: case BPF_AND | BPF_FETCH: old = __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST); break;
		case BPF_XOR: case BPF_XOR | BPF_FETCH: old = __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST); break;
		case BPF_XCHG: old = __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); break;
		case BPF_CMPXCHG: {
			uint32_t exp = (uint32_t)regs[0];
			__atomic_compare_exchange_n(p, &exp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
			regs[0] = exp; /* zero-extended old value */
			return 0;
		}
		default: return -EINVAL;
		}
		old = (uint32_t)old;
	} else {
		uint64_t *p = (uint64_t *)(uintptr_t)addr, v = *src;
		switch (op) {
		case BPF_ADD: case BPF_ADD | BPF_FETCH: old = __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); break;
		case BPF_OR: case BPF_OR | BPF_FETCH: old = __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); break;
		case BPF_AND: case BPF_AND | BPF_FETCH: old = __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST); break;
		case BPF_XOR: case BPF_XOR | BPF_FETCH: old = __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST); break;
		case BPF_XCHG: old = __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); break;
		case BPF_CMPXCHG: {
			uint64_t exp = regs[0];
			__atomic_compare_exchange_n(p, &exp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
			regs[0] = exp;
			return 0;
		}
		default: return -EINVAL;
		}
	}
	if (fetch || op == BPF_XCHG)
		*src = old;
	return 0;
}

static gx_bpf_helper_fn find_helper(const struct gx_bpf_interp_opts *o, int32_t id)
{
	if (!o || !o->helpers)
		return NULL;
	for (size_t i = 0; i < o->nr_helpers; i++)
		if (o->helpers[i].id == id)
			return o->helpers[i].fn;
	return NULL;
}

static int run(struct vm *vm, size_t pc, uint64_t *args, uint64_t *ret);

/* bpf_loop(nr, callback, ctx, flags): callback(i, ctx) returns 0 to go on, 1
 * to stop. Returns the number of iterations done. */
static int do_loop(struct vm *vm, uint64_t *regs)
{
	if (regs[4] != 0 || (regs[2] & ~0xffffffffull) != FUNC_TAG || regs[1] > (1u << 23)) {
		regs[0] = (uint64_t)-EINVAL;
		return 0;
	}
	size_t target = (size_t)(uint32_t)regs[2];
	uint64_t n = regs[1], cbctx = regs[3], i;
	for (i = 0; i < n; i++) {
		uint64_t a[5] = { i, cbctx, 0, 0, 0 }, r;
		int err = run(vm, target, a, &r);
		if (err)
			return err;
		if (r) {
			i++;
			break;
		}
	}
	regs[0] = i;
	return 0;
}

static int run(struct vm *vm, size_t pc, uint64_t *args, uint64_t *ret)
{
	if (vm->depth >= MAX_FRAMES)
		return -EOVERFLOW;
	uint64_t regs[11] = { 0 };
	memcpy(&regs[1], args, 5 * sizeof(uint64_t));
	regs[10] = (uint64_t)(uintptr_t)(vm->stack + (size_t)(MAX_FRAMES - vm->depth) * STACK_SIZE);
	vm->depth++;
	int err = 0;
	for (;;) {
		if (pc >= vm->cnt) {
			err = -EINVAL; /* fell off the end or jumped out */
			break;
		}
		if (++vm->steps > vm->max_steps) {
			err = -E2BIG;
			break;
		}
		const struct bpf_insn *in = &vm->insns[pc];
		if (in->dst_reg > 10 || in->src_reg > 10) {
			/* ld_imm64 uses src_reg for pseudo kinds, all <= 6 */
			err = -EINVAL;
			break;
		}
		uint64_t *dst = &regs[in->dst_reg];
		uint64_t src = BPF_SRC(in->code) == BPF_X ? regs[in->src_reg] : (uint64_t)(int64_t)in->imm;
		uint8_t cls = BPF_CLASS(in->code);
		switch (cls) {
		case BPF_ALU:
		case BPF_ALU64:
			if (in->dst_reg == 10) {
				err = -EINVAL;
				break;
			}
			if (BPF_OP(in->code) == BPF_END)
				src = 0;
			err = alu(in, dst, src);
			pc++;
			break;
		case BPF_LD: {
			if (in->code != (BPF_LD | BPF_IMM | BPF_DW) || pc + 1 >= vm->cnt || in->dst_reg == 10) {
				err = -EINVAL;
				break;
			}
			const struct bpf_insn *in2 = in + 1;
			uint64_t v = (uint32_t)in->imm | ((uint64_t)(uint32_t)in2->imm << 32);
			switch (in->src_reg) {
			case 0: break;
			case BPF_PSEUDO_MAP_IDX:
			case BPF_PSEUDO_MAP_IDX_VALUE: {
				bool value = in->src_reg == BPF_PSEUDO_MAP_IDX_VALUE;
				v = vm->o && vm->o->map_addr
					    ? vm->o->map_addr(vm->o->user, (uint32_t)in->imm,
							      value ? (uint32_t)in2->imm : 0, value)
					    : 0;
				break;
			}
			case BPF_PSEUDO_FUNC: {
				int64_t t = (int64_t)pc + in->imm + 1;
				if (t < 0 || (uint64_t)t >= vm->cnt) {
					err = -EINVAL;
					break;
				}
				v = FUNC_TAG | (uint64_t)t;
				break;
			}
			default:
				err = -EINVAL;
			}
			*dst = v;
			pc += 2;
			break;
		}
		case BPF_LDX: {
			int size = size_bytes(BPF_SIZE(in->code));
			bool sx = BPF_MODE(in->code) == BPF_MEMSX;
			if ((BPF_MODE(in->code) != BPF_MEM && !sx) || (sx && size == 8) || in->dst_reg == 10) {
				err = -EINVAL;
				break;
			}
			uint64_t addr = regs[in->src_reg] + (uint64_t)(int64_t)in->off;
			err = mem_check(vm, addr, size, false);
			if (err)
				break;
			uint64_t v = load(addr, size);
			*dst = sx ? sext(v, size * 8) : v;
			pc++;
			break;
		}
		case BPF_ST:
		case BPF_STX: {
			int size = size_bytes(BPF_SIZE(in->code));
			uint64_t addr = *dst + (uint64_t)(int64_t)in->off;
			if (BPF_MODE(in->code) == BPF_ATOMIC && cls == BPF_STX) {
				err = mem_check(vm, addr, size, true);
				if (!err && addr % (uint64_t)size)
					err = -EFAULT;
				err = err ?: atomic_op(in, addr, regs);
			} else if (BPF_MODE(in->code) == BPF_MEM) {
				err = mem_check(vm, addr, size, true);
				if (!err)
					store(addr, size, cls == BPF_STX ? regs[in->src_reg] : (uint64_t)(int64_t)in->imm);
			} else {
				err = -EINVAL;
			}
			pc++;
			break;
		}
		case BPF_JMP:
		case BPF_JMP32: {
			uint8_t op = BPF_OP(in->code);
			if (op == BPF_EXIT) {
				if (cls != BPF_JMP) {
					err = -EINVAL;
					break;
				}
				*ret = regs[0];
				vm->depth--;
				return 0;
			}
			if (op == BPF_CALL) {
				if (cls != BPF_JMP) {
					err = -EINVAL;
					break;
				}
				if (in->src_reg == BPF_PSEUDO_CALL) {
					int64_t t = (int64_t)pc + in->imm + 1;
					if (t < 0 || (uint64_t)t >= vm->cnt) {
						err = -EINVAL;
						break;
					}
					err = run(vm, (size_t)t, &regs[1], &regs[0]);
				} else if (in->src_reg == 0) {
					gx_bpf_helper_fn fn = find_helper(vm->o, in->imm);
					if (fn)
						regs[0] = fn(vm->o->user, regs[1], regs[2], regs[3], regs[4], regs[5]);
					else if (in->imm == GDEV_HELPER_LOOP)
						err = do_loop(vm, regs);
					else
						err = -EINVAL;
				} else {
					err = -EINVAL;
				}
				/* r1-r5 are clobbered by calls: make that visible */
				for (int r = 1; r <= 5; r++)
					regs[r] = 0xdeadbeefdeadbeefull;
				pc++;
				break;
			}
			if (op == BPF_JA) {
				int64_t off = cls == BPF_JMP32 ? in->imm : in->off;
				int64_t t = (int64_t)pc + off + 1;
				if (t < 0 || (uint64_t)t >= vm->cnt) {
					err = -EINVAL;
					break;
				}
				pc = (size_t)t;
				break;
			}
			int taken = jmp_taken(in, *dst, src);
			if (taken < 0) {
				err = -EINVAL;
				break;
			}
			int64_t t = (int64_t)pc + (taken ? in->off : 0) + 1;
			if (t < 0 || (uint64_t)t > vm->cnt) {
				err = -EINVAL;
				break;
			}
			pc = (size_t)t;
			break;
		}
		default:
			err = -EINVAL;
		}
		if (err)
			break;
	}
	vm->depth--;
	return err;
}

GX_EXPORT int gx_bpf_interp_run(const struct bpf_insn *insns, size_t cnt, uint64_t ctx,
				const struct gx_bpf_interp_opts *opts, uint64_t *ret)
{
	struct gx_bpf_interp_opts o = { 0 };
	if (!insns || !cnt || !ret || gx_opts_copy(&o, sizeof(o), opts, opts ? opts->sz : 0))
		return gx_err(-EINVAL);
	struct vm *vm = calloc(1, sizeof(*vm));
	if (!vm)
		return gx_err(-ENOMEM);
	vm->insns = insns;
	vm->cnt = cnt;
	vm->o = &o;
	vm->max_steps = o.max_steps ? o.max_steps : 1u << 24;
	uint64_t args[5] = { ctx, 0, 0, 0, 0 };
	int err = run(vm, 0, args, ret);
	free(vm);
	return gx_err(err);
}

/* The interpreter's ALU, for the verifier's constant folding. */
uint64_t gx_bpf_alu_eval(uint8_t code, int16_t off, int32_t imm, uint64_t dst, uint64_t src)
{
	struct bpf_insn in = { .code = code, .off = off, .imm = imm };
	uint64_t d = dst;
	if (BPF_OP(code) == BPF_END || BPF_OP(code) == BPF_NEG)
		src = 0;
	if (alu(&in, &d, src))
		return 0;
	return d;
}
