/* jit_llvm.c — eBPF instructions to LLVM IR (LLVM-C, LLVM 19).
 *
 * Why this shape: registers become i64 allocas and the 512-byte stack one
 * alloca per function, every eBPF basic block one LLVM block; the optimizer
 * (mem2reg/SROA in default<O2>) turns that into SSA, so the translator stays
 * a direct, auditable one-instruction-at-a-time mapping of the ISA semantics:
 *  - ALU32 results are zero-extended, shift amounts masked (& 31 / & 63),
 *  - division by zero gives 0, modulo by zero leaves dst (as BPF defines);
 *    signed INT_MIN / -1 gives INT_MIN (-dst), % -1 gives 0 (no LLVM UB),
 *  - MOVSX / LDSX sign-extend, BPF_END/bswap, JMP32 compares low halves,
 *  - bpf-to-bpf calls are calls of internal functions (r1..r5 in, r0 out;
 *    r6..r9 and the stack are the callee's own), bpf_loop is expanded inline.
 * Registers start at 0 (never undef: helper parameters are noundef). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuext/gx_devrt.h"
#include "devbpf/hosthelpers_internal.h"
#include "devbpf/jit_internal.h"
#include "common/gx_util.h"

#ifndef BPF_PSEUDO_MAP_IDX
#define BPF_PSEUDO_MAP_IDX 5
#endif
#ifndef BPF_PSEUDO_MAP_IDX_VALUE
#define BPF_PSEUDO_MAP_IDX_VALUE 6
#endif

#define GX_STACK_SIZE 512
#define GX_LOOP_MAX (1u << 23) /* bpf_loop's bound, as in the kernel */

struct fn {
	size_t start, end; /* [start, end) in insns */
	LLVMValueRef fn;
};

struct tx {
	LLVMContextRef ctx;
	LLVMModuleRef mod;
	LLVMBuilderRef b;
	LLVMTypeRef i1, i8, i16, i32, i64, ptr, helper_ty;
	const struct gx_jit_opts *o;
	const struct gx_jit_prog *p;
	const struct bpf_insn *insn;
	size_t n;
	struct fn *fns;
	size_t nr_fns;
	/* current function */
	LLVMValueRef fn, regs[11], stack;
	int mapreg[11];         /* map index a register holds (this block), or -1 */
	LLVMBasicBlockRef *bbs; /* per pc, leaders only */
	unsigned char *half;    /* per pc: second slot of an ld_imm64 */
	char *err;
	size_t err_sz;
};

#define TXERR(t, pc, ...)                                                                  \
	txerr(t, pc, __VA_ARGS__)

__attribute__((format(printf, 3, 4))) static int txerr(struct tx *t, size_t pc, const char *fmt,
							 ...)
{
	char msg[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return gx_jit_errf(t->err, t->err_sz, -EINVAL, "prog %s insn %zu: %s", t->p->name, pc, msg);
}

static LLVMValueRef c64(struct tx *t, unsigned long long v)
{
	return LLVMConstInt(t->i64, v, 0);
}

static LLVMValueRef rd(struct tx *t, int r)
{
	return LLVMBuildLoad2(t->b, t->i64, t->regs[r], "");
}
static void wr(struct tx *t, int r, LLVMValueRef v)
{
	LLVMBuildStore(t->b, v, t->regs[r]);
	t->mapreg[r] = -1;
}

static void forget_maps(struct tx *t)
{
	for (int r = 0; r <= 10; r++)
		t->mapreg[r] = -1;
}

static int is_ldimm64(const struct bpf_insn *in)
{
	return in->code == (BPF_LD | BPF_IMM | BPF_DW);
}

static int fn_index_at(struct tx *t, size_t pc)
{
	for (size_t i = 0; i < t->nr_fns; i++)
		if (t->fns[i].start == pc)
			return (int)i;
	return -1;
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	return x < y ? -1 : x > y;
}

/* Functions: pc 0 and every bpf-to-bpf call / ld_imm64 func target. */
static int find_functions(struct tx *t)
{
	size_t *starts = calloc(t->n + 1, sizeof(*starts)), nr = 0;
	if (!starts)
		return -ENOMEM;
	starts[nr++] = 0;
	for (size_t pc = 0; pc < t->n; pc++) {
		const struct bpf_insn *in = &t->insn[pc];
		long long tgt = -1;
		if (in->code == (BPF_JMP | BPF_CALL) && in->src_reg == BPF_PSEUDO_CALL)
			tgt = (long long)pc + in->imm + 1;
		else if (is_ldimm64(in) && in->src_reg == BPF_PSEUDO_FUNC)
			tgt = (long long)pc + in->imm + 1;
		if (is_ldimm64(in))
			pc++;
		if (tgt == -1)
			continue;
		if (tgt < 0 || (size_t)tgt >= t->n) {
			free(starts);
			return TXERR(t, pc, "call target %lld out of range", tgt);
		}
		starts[nr++] = (size_t)tgt;
	}
	qsort(starts, nr, sizeof(*starts), cmp_size);
	t->fns = calloc(nr, sizeof(*t->fns));
	if (!t->fns) {
		free(starts);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nr; i++) {
		if (t->nr_fns && t->fns[t->nr_fns - 1].start == starts[i])
			continue;
		t->fns[t->nr_fns++].start = starts[i];
	}
	for (size_t i = 0; i < t->nr_fns; i++)
		t->fns[i].end = i + 1 < t->nr_fns ? t->fns[i + 1].start : t->n;
	free(starts);
	return 0;
}

static LLVMValueRef helper_fn(struct tx *t, const char *sym)
{
	LLVMValueRef f = LLVMGetNamedFunction(t->mod, sym);
	if (!f)
		f = LLVMAddFunction(t->mod, sym, t->helper_ty);
	return f;
}

static LLVMValueRef call_helper(struct tx *t, const char *sym, LLVMValueRef a[5])
{
	return LLVMBuildCall2(t->b, t->helper_ty, helper_fn(t, sym), a, 5, "");
}

/* Address for a memory access: r10-relative accesses index the stack alloca
 * directly (keeps the stack analyzable); others are integer -> pointer. */
static LLVMValueRef addr_of(struct tx *t, int reg, short off)
{
	if (reg == BPF_REG_10) {
		LLVMValueRef idx = c64(t, (unsigned long long)(GX_STACK_SIZE + off));
		return LLVMBuildGEP2(t->b, t->i8, t->stack, &idx, 1, "");
	}
	LLVMValueRef a = LLVMBuildAdd(t->b, rd(t, reg), c64(t, (unsigned long long)(long long)off), "");
	return LLVMBuildIntToPtr(t->b, a, t->ptr, "");
}

static LLVMTypeRef size_ty(struct tx *t, int sz)
{
	switch (sz) {
	case BPF_B:
		return t->i8;
	case BPF_H:
		return t->i16;
	case BPF_W:
		return t->i32;
	default:
		return t->i64;
	}
}
static unsigned size_bytes(int sz)
{
	return sz == BPF_B ? 1 : sz == BPF_H ? 2 : sz == BPF_W ? 4 : 8;
}

static LLVMBasicBlockRef bb_at(struct tx *t, size_t pc)
{
	return t->bbs[pc];
}

/* ---- ALU ---- */
static int emit_alu(struct tx *t, size_t pc, const struct bpf_insn *in)
{
	int is64 = BPF_CLASS(in->code) == BPF_ALU64;
	LLVMTypeRef ty = is64 ? t->i64 : t->i32;
	int op = BPF_OP(in->code);
	LLVMValueRef dst = rd(t, in->dst_reg), src, res;
	if (in->dst_reg > BPF_REG_9)
		return TXERR(t, pc, "cannot write r%d", in->dst_reg);
	if (!is64)
		dst = LLVMBuildTrunc(t->b, dst, t->i32, "");

	if (op == BPF_END) {
		/* ALU|END: BPF_TO_LE (src bit 0) or BPF_TO_BE; ALU64|END: bswap. */
		int bswap = is64 || BPF_SRC(in->code) == BPF_TO_BE;
		unsigned bits = (unsigned)in->imm;
		if (bits != 16 && bits != 32 && bits != 64)
			return TXERR(t, pc, "invalid endian immediate %d", in->imm);
		LLVMTypeRef bt = LLVMIntTypeInContext(t->ctx, bits);
		LLVMValueRef v = LLVMBuildTrunc(t->b, rd(t, in->dst_reg), bt, "");
		if (bits == 64)
			v = rd(t, in->dst_reg);
		if (bswap && bits > 8) {
			char name[32];
			snprintf(name, sizeof(name), "llvm.bswap.i%u", bits);
			unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
			LLVMValueRef f = LLVMGetIntrinsicDeclaration(t->mod, id, &bt, 1);
			v = LLVMBuildCall2(t->b, LLVMIntrinsicGetType(t->ctx, id, &bt, 1), f, &v, 1, "");
		}
		wr(t, in->dst_reg, bits == 64 ? v : LLVMBuildZExt(t->b, v, t->i64, ""));
		return 0;
	}

	if (BPF_SRC(in->code) == BPF_X) {
		if (in->src_reg > BPF_REG_10)
			return TXERR(t, pc, "invalid source register r%d", in->src_reg);
		src = rd(t, in->src_reg);
		if (!is64)
			src = LLVMBuildTrunc(t->b, src, t->i32, "");
	} else {
		src = LLVMConstInt(ty, (unsigned long long)(long long)in->imm, 1);
	}
	unsigned bits = is64 ? 64 : 32;
	LLVMValueRef zero = LLVMConstInt(ty, 0, 0), one = LLVMConstInt(ty, 1, 0);
	LLVMValueRef mask = LLVMConstInt(ty, bits - 1, 0);
	int sdiv = in->off == 1;

	switch (op) {
	case BPF_ADD:
		res = LLVMBuildAdd(t->b, dst, src, "");
		break;
	case BPF_SUB:
		res = LLVMBuildSub(t->b, dst, src, "");
		break;
	case BPF_MUL:
		res = LLVMBuildMul(t->b, dst, src, "");
		break;
	case BPF_OR:
		res = LLVMBuildOr(t->b, dst, src, "");
		break;
	case BPF_AND:
		res = LLVMBuildAnd(t->b, dst, src, "");
		break;
	case BPF_XOR:
		res = LLVMBuildXor(t->b, dst, src, "");
		break;
	case BPF_LSH:
		res = LLVMBuildShl(t->b, dst, LLVMBuildAnd(t->b, src, mask, ""), "");
		break;
	case BPF_RSH:
		res = LLVMBuildLShr(t->b, dst, LLVMBuildAnd(t->b, src, mask, ""), "");
		break;
	case BPF_ARSH:
		res = LLVMBuildAShr(t->b, dst, LLVMBuildAnd(t->b, src, mask, ""), "");
		break;
	case BPF_NEG:
		res = LLVMBuildNeg(t->b, dst, "");
		break;
	case BPF_MOV:
		if (in->off == 0) {
			res = src;
		} else if (BPF_SRC(in->code) == BPF_X &&
			   (in->off == 8 || in->off == 16 || (is64 && in->off == 32))) {
			LLVMTypeRef nt = LLVMIntTypeInContext(t->ctx, (unsigned)in->off);
			res = LLVMBuildSExt(t->b, LLVMBuildTrunc(t->b, src, nt, ""), ty, "");
		} else {
			return TXERR(t, pc, "invalid movsx offset %d", in->off);
		}
		break;
	case BPF_DIV:
	case BPF_MOD: {
		if (in->off != 0 && in->off != 1)
			return TXERR(t, pc, "invalid div/mod offset %d", in->off);
		LLVMValueRef is0 = LLVMBuildICmp(t->b, LLVMIntEQ, src, zero, "");
		LLVMValueRef bad = is0, ism1 = NULL;
		if (sdiv) {
			ism1 = LLVMBuildICmp(t->b, LLVMIntEQ, src, LLVMConstAllOnes(ty), "");
			bad = LLVMBuildOr(t->b, is0, ism1, "");
		}
		LLVMValueRef safe = LLVMBuildSelect(t->b, bad, one, src, "");
		if (op == BPF_DIV) {
			LLVMValueRef q = sdiv ? LLVMBuildSDiv(t->b, dst, safe, "")
					      : LLVMBuildUDiv(t->b, dst, safe, "");
			if (sdiv)
				q = LLVMBuildSelect(t->b, ism1, LLVMBuildNeg(t->b, dst, ""), q, "");
			res = LLVMBuildSelect(t->b, is0, zero, q, "");
		} else {
			LLVMValueRef r = sdiv ? LLVMBuildSRem(t->b, dst, safe, "")
					      : LLVMBuildURem(t->b, dst, safe, "");
			if (sdiv)
				r = LLVMBuildSelect(t->b, ism1, zero, r, "");
			res = LLVMBuildSelect(t->b, is0, dst, r, "");
		}
		break;
	}
	default:
		return TXERR(t, pc, "unknown ALU opcode 0x%02x", in->code);
	}
	if (op != BPF_DIV && op != BPF_MOD && op != BPF_MOV && in->off != 0)
		return TXERR(t, pc, "invalid ALU offset %d", in->off);
	wr(t, in->dst_reg, is64 ? res : LLVMBuildZExt(t->b, res, t->i64, ""));
	return 0;
}

/* ---- memory ---- */
static int emit_ldx(struct tx *t, size_t pc, const struct bpf_insn *in)
{
	int mode = BPF_MODE(in->code), sz = BPF_SIZE(in->code);
	if (mode != BPF_MEM && mode != BPF_MEMSX)
		return TXERR(t, pc, "unsupported load mode 0x%02x", in->code);
	if (mode == BPF_MEMSX && sz == BPF_DW)
		return TXERR(t, pc, "invalid sign-extending load size");
	if (in->dst_reg > BPF_REG_9 || in->src_reg > BPF_REG_10)
		return TXERR(t, pc, "invalid register");
	LLVMTypeRef ty = size_ty(t, sz);
	LLVMValueRef v = LLVMBuildLoad2(t->b, ty, addr_of(t, in->src_reg, in->off), "");
	LLVMSetAlignment(v, size_bytes(sz));
	if (sz != BPF_DW)
		v = mode == BPF_MEMSX ? LLVMBuildSExt(t->b, v, t->i64, "")
				      : LLVMBuildZExt(t->b, v, t->i64, "");
	wr(t, in->dst_reg, v);
	return 0;
}

/* PTX atomics. The stack is thread-private local memory, where NVPTX has no
 * atomics (instruction selection would abort): r10-based atomics become a
 * plain read-modify-write, which is atomic for a private location. Others go
 * through `atom`/`red` in inline asm, so address-space inference can never
 * turn them into local atomics; the verifier keeps stack pointers out of
 * atomics other than r10-based ones, so what is left is map storage and
 * global data: device memory. They are issued in the .global space
 * (cvta.to.global, free in SASS): a generic atom compiles to an ATOM whose
 * "was it global" predicate the warp must wait for, plus a shared-memory
 * fallback loop. Without BPF_FETCH nothing reads the old value, so it is a
 * `red`: fire-and-forget, the warp does not wait for the L2 round trip (a
 * counter update per warp at a hook costs an issue slot, not a latency). */
static LLVMValueRef ptx_atom_asm(struct tx *t, const char *op, int sz, LLVMValueRef addr,
				 LLVMValueRef a, LLVMValueRef b, int red)
{
	int w = sz == BPF_DW;
	LLVMTypeRef vt = w ? t->i64 : t->i32;
	char text[160], cons[64];
	char ty = !strcmp(op, "add") ? 'u' : 'b';
	char rc = w ? 'l' : 'r';
	if (red) {
		snprintf(text, sizeof(text),
			 "{ .reg .b64 %%g; cvta.to.global.u64 %%g, $0; red.global.%s.%c%d [%%g], $1; }",
			 op, ty, w ? 64 : 32);
		snprintf(cons, sizeof(cons), "l,%c,~{memory}", rc);
	} else if (b) {
		snprintf(text, sizeof(text),
			 "{ .reg .b64 %%g; cvta.to.global.u64 %%g, $1; atom.global.%s.b%d $0, [%%g], $2, $3; }",
			 op, w ? 64 : 32);
		snprintf(cons, sizeof(cons), "=%c,l,%c,%c,~{memory}", rc, rc, rc);
	} else {
		snprintf(text, sizeof(text),
			 "{ .reg .b64 %%g; cvta.to.global.u64 %%g, $1; atom.global.%s.%c%d $0, [%%g], $2; }",
			 op, ty, w ? 64 : 32);
		snprintf(cons, sizeof(cons), "=%c,l,%c,~{memory}", rc, rc);
	}
	LLVMTypeRef params[3] = { t->i64, vt, vt };
	LLVMTypeRef fty = LLVMFunctionType(red ? LLVMVoidTypeInContext(t->ctx) : vt, params,
					   b ? 3 : 2, 0);
	LLVMValueRef fn = LLVMGetInlineAsm(fty, text, strlen(text), cons, strlen(cons), 1, 0,
					   LLVMInlineAsmDialectATT, 0);
	LLVMValueRef args[3] = { addr, a, b };
	LLVMValueRef v = LLVMBuildCall2(t->b, fty, fn, args, b ? 3 : 2, "");
	return red ? LLVMGetUndef(vt) : v;
}

static int emit_atomic(struct tx *t, size_t pc, const struct bpf_insn *in)
{
	int sz = BPF_SIZE(in->code);
	if (sz != BPF_W && sz != BPF_DW)
		return TXERR(t, pc, "invalid atomic size");
	LLVMTypeRef ty = size_ty(t, sz);
	int fetch = in->imm & BPF_FETCH, code = in->imm & ~BPF_FETCH;
	LLVMAtomicRMWBinOp op;
	const char *ptxop;
	switch (code) {
	case BPF_ADD:
		op = LLVMAtomicRMWBinOpAdd, ptxop = "add";
		break;
	case BPF_OR:
		op = LLVMAtomicRMWBinOpOr, ptxop = "or";
		break;
	case BPF_AND:
		op = LLVMAtomicRMWBinOpAnd, ptxop = "and";
		break;
	case BPF_XOR:
		op = LLVMAtomicRMWBinOpXor, ptxop = "xor";
		break;
	case BPF_XCHG & ~BPF_FETCH:
		op = LLVMAtomicRMWBinOpXchg, ptxop = "exch";
		if (!fetch)
			return TXERR(t, pc, "invalid atomic operation 0x%x", in->imm);
		break;
	case BPF_CMPXCHG & ~BPF_FETCH:
		op = LLVMAtomicRMWBinOpXchg, ptxop = "cas";
		if (!fetch)
			return TXERR(t, pc, "invalid atomic operation 0x%x", in->imm);
		break;
	default:
		return TXERR(t, pc, "invalid atomic operation 0x%x", in->imm);
	}
	if (in->src_reg > BPF_REG_9 && code != BPF_ADD)
		return TXERR(t, pc, "invalid register");
	int cas = code == (BPF_CMPXCHG & ~BPF_FETCH);
	LLVMValueRef src = rd(t, in->src_reg), cmp = NULL, old;
	if (sz == BPF_W)
		src = LLVMBuildTrunc(t->b, src, t->i32, "");
	if (cas) {
		cmp = rd(t, BPF_REG_0);
		if (sz == BPF_W)
			cmp = LLVMBuildTrunc(t->b, cmp, t->i32, "");
	}
	int ptx = t->o->target == GX_JIT_PTX;
	if (ptx && in->dst_reg == BPF_REG_10) {
		LLVMValueRef p = addr_of(t, in->dst_reg, in->off);
		old = LLVMBuildLoad2(t->b, ty, p, "");
		LLVMSetAlignment(old, size_bytes(sz));
		LLVMValueRef nv;
		switch (code) {
		case BPF_ADD:
			nv = LLVMBuildAdd(t->b, old, src, "");
			break;
		case BPF_OR:
			nv = LLVMBuildOr(t->b, old, src, "");
			break;
		case BPF_AND:
			nv = LLVMBuildAnd(t->b, old, src, "");
			break;
		case BPF_XOR:
			nv = LLVMBuildXor(t->b, old, src, "");
			break;
		default:
			nv = cas ? LLVMBuildSelect(t->b, LLVMBuildICmp(t->b, LLVMIntEQ, old, cmp, ""),
						   src, old, "")
				 : src;
		}
		LLVMSetAlignment(LLVMBuildStore(t->b, nv, p), size_bytes(sz));
	} else if (ptx) {
		LLVMValueRef a = LLVMBuildAdd(t->b, rd(t, in->dst_reg),
					      c64(t, (unsigned long long)(long long)in->off), "");
		old = cas ? ptx_atom_asm(t, ptxop, sz, a, cmp, src, 0)
			  : ptx_atom_asm(t, ptxop, sz, a, src, NULL, !fetch);
	} else {
		LLVMValueRef p = addr_of(t, in->dst_reg, in->off);
		if (cas) {
			LLVMValueRef x = LLVMBuildAtomicCmpXchg(t->b, p, cmp, src,
								 LLVMAtomicOrderingSequentiallyConsistent,
								 LLVMAtomicOrderingSequentiallyConsistent, 0);
			LLVMSetAlignment(x, size_bytes(sz));
			old = LLVMBuildExtractValue(t->b, x, 0, "");
		} else {
			old = LLVMBuildAtomicRMW(t->b, op, p, src,
						 LLVMAtomicOrderingSequentiallyConsistent, 0);
			LLVMSetAlignment(old, size_bytes(sz));
		}
	}
	LLVMValueRef ext = sz == BPF_W ? LLVMBuildZExt(t->b, old, t->i64, "") : old;
	if (cas)
		wr(t, BPF_REG_0, ext);
	else if (fetch)
		wr(t, in->src_reg, ext);
	return 0;
}

static int emit_st(struct tx *t, size_t pc, const struct bpf_insn *in)
{
	int cls = BPF_CLASS(in->code), mode = BPF_MODE(in->code), sz = BPF_SIZE(in->code);
	if (in->dst_reg > BPF_REG_10 || in->src_reg > BPF_REG_10)
		return TXERR(t, pc, "invalid register");
	if (cls == BPF_STX && mode == BPF_ATOMIC)
		return emit_atomic(t, pc, in);
	if (mode != BPF_MEM)
		return TXERR(t, pc, "unsupported store mode 0x%02x", in->code);
	LLVMTypeRef ty = size_ty(t, sz);
	LLVMValueRef v = cls == BPF_STX ? rd(t, in->src_reg)
					: c64(t, (unsigned long long)(long long)in->imm);
	if (sz != BPF_DW)
		v = LLVMBuildTrunc(t->b, v, ty, "");
	LLVMValueRef s = LLVMBuildStore(t->b, v, addr_of(t, in->dst_reg, in->off));
	LLVMSetAlignment(s, size_bytes(sz));
	return 0;
}

static int emit_ldimm64(struct tx *t, size_t pc, const struct bpf_insn *in)
{
	if (pc + 1 >= t->n)
		return TXERR(t, pc, "incomplete ld_imm64");
	if (in->dst_reg > BPF_REG_9)
		return TXERR(t, pc, "invalid register");
	const struct bpf_insn *hi = in + 1;
	unsigned long long imm = (unsigned)in->imm | ((unsigned long long)(unsigned)hi->imm << 32);
	LLVMValueRef v;
	switch (in->src_reg) {
	case 0:
		v = c64(t, imm);
		break;
	case BPF_PSEUDO_MAP_FD:
	case BPF_PSEUDO_MAP_IDX:
	case BPF_PSEUDO_MAP_VALUE:
	case BPF_PSEUDO_MAP_IDX_VALUE: {
		int value = in->src_reg == BPF_PSEUDO_MAP_VALUE ||
			    in->src_reg == BPF_PSEUDO_MAP_IDX_VALUE;
		unsigned idx = (unsigned)in->imm;
		unsigned off = value ? (unsigned)hi->imm : 0;
		if (idx >= t->o->nr_maps)
			return TXERR(t, pc, "map index %u out of range (%zu maps)", idx,
				     t->o->nr_maps);
		const struct gx_jit_map *m = &t->o->maps[idx];
		if (value && m->type != GX_MAP_ARRAY)
			return TXERR(t, pc, "direct value access to map '%s' that is not an array",
				     m->name ? m->name : "?");
		if (value && m->value_size && off >= (unsigned long long)m->value_size * m->max_entries)
			return TXERR(t, pc, "map value offset %u out of range", off);
		if (t->o->target == GX_JIT_NATIVE) {
			if (!m->host)
				return TXERR(t, pc, "map '%s' has no host storage",
					     m->name ? m->name : "?");
			const struct gx_devrt_map *dm = (const struct gx_devrt_map *)m->host;
			v = c64(t, value ? dm->data + off : (unsigned long long)(unsigned long)m->host);
		} else {
			LLVMValueRef a[5] = { c64(t, idx), c64(t, off), c64(t, 0), c64(t, 0),
					      c64(t, 0) };
			v = call_helper(t, value ? "gx_h__map_value" : "gx_h__map", a);
		}
		break;
	}
	case BPF_PSEUDO_FUNC: {
		int fi = fn_index_at(t, pc + (size_t)in->imm + 1);
		if (fi < 0)
			return TXERR(t, pc, "function reference to a non-function");
		v = LLVMBuildPtrToInt(t->b, t->fns[fi].fn, t->i64, "");
		break;
	}
	default:
		return TXERR(t, pc, "unsupported ld_imm64 source %d", in->src_reg);
	}
	wr(t, in->dst_reg, v);
	if (in->src_reg == BPF_PSEUDO_MAP_FD || in->src_reg == BPF_PSEUDO_MAP_IDX)
		t->mapreg[in->dst_reg] = in->imm;
	return 0;
}

/* bpf_loop(nr, cb, ctx, flags): calls cb(i, ctx) until it returns non-zero;
 * returns the number of calls made; -E2BIG / -EINVAL like the kernel. */
static void emit_bpf_loop(struct tx *t)
{
	LLVMValueRef nr = LLVMBuildAnd(t->b, rd(t, BPF_REG_1), c64(t, 0xffffffffu), "");
	LLVMValueRef cb = LLVMBuildIntToPtr(t->b, rd(t, BPF_REG_2), t->ptr, "");
	LLVMValueRef cctx = rd(t, BPF_REG_3), flags = rd(t, BPF_REG_4);
	LLVMBasicBlockRef pre = LLVMGetInsertBlock(t->b);
	LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(t->ctx, t->fn, "loop.head");
	LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(t->ctx, t->fn, "loop.body");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(t->ctx, t->fn, "loop.done");
	LLVMValueRef bad = LLVMBuildOr(t->b, LLVMBuildICmp(t->b, LLVMIntNE, flags, c64(t, 0), ""),
				       LLVMBuildICmp(t->b, LLVMIntUGT, nr, c64(t, GX_LOOP_MAX), ""),
				       "");
	LLVMValueRef errv = LLVMBuildSelect(t->b,
					    LLVMBuildICmp(t->b, LLVMIntNE, flags, c64(t, 0), ""),
					    c64(t, (unsigned long long)-EINVAL),
					    c64(t, (unsigned long long)-E2BIG), "");
	LLVMBuildCondBr(t->b, bad, done, head);

	LLVMPositionBuilderAtEnd(t->b, head);
	LLVMValueRef i = LLVMBuildPhi(t->b, t->i64, "i");
	LLVMValueRef more = LLVMBuildICmp(t->b, LLVMIntULT, i, nr, "");
	LLVMBuildCondBr(t->b, more, body, done);

	LLVMPositionBuilderAtEnd(t->b, body);
	LLVMValueRef args[5] = { i, cctx, c64(t, 0), c64(t, 0), c64(t, 0) };
	LLVMValueRef r = LLVMBuildCall2(t->b, t->helper_ty, cb, args, 5, "");
	LLVMValueRef next = LLVMBuildAdd(t->b, i, c64(t, 1), "");
	LLVMValueRef stop = LLVMBuildICmp(t->b, LLVMIntNE, r, c64(t, 0), "");
	LLVMBuildCondBr(t->b, stop, done, head);

	LLVMValueRef zero = c64(t, 0);
	LLVMBasicBlockRef in_bbs[2] = { pre, body };
	LLVMValueRef in_vals[2] = { zero, next };
	LLVMAddIncoming(i, in_vals, in_bbs, 2);

	LLVMPositionBuilderAtEnd(t->b, done);
	LLVMValueRef res = LLVMBuildPhi(t->b, t->i64, "loop.ret");
	LLVMBasicBlockRef rb[3] = { pre, head, body };
	LLVMValueRef rv[3] = { errv, i, next };
	LLVMAddIncoming(res, rv, rb, 3);
	wr(t, BPF_REG_0, res);
}

static int emit_call(struct tx *t, size_t pc, const struct bpf_insn *in)
{
	LLVMValueRef a[5];
	for (int r = 0; r < 5; r++)
		a[r] = rd(t, BPF_REG_1 + r);
	if (in->src_reg == BPF_PSEUDO_CALL) {
		int fi = fn_index_at(t, pc + (size_t)in->imm + 1);
		if (fi < 0)
			return TXERR(t, pc, "call to a non-function");
		LLVMValueRef r = LLVMBuildCall2(t->b, t->helper_ty, t->fns[fi].fn, a, 5, "");
		wr(t, BPF_REG_0, r);
		forget_maps(t);
		return 0;
	}
	if (in->src_reg != 0 && in->src_reg != BPF_PSEUDO_KFUNC_CALL)
		return TXERR(t, pc, "unsupported call kind %d", in->src_reg);
	for (size_t i = 0; i < t->o->nr_externs; i++) {
		const struct gx_jit_extern *x = &t->o->externs[i];
		if (x->id == in->imm && !!x->kfunc == (in->src_reg == BPF_PSEUDO_KFUNC_CALL)) {
			wr(t, BPF_REG_0, call_helper(t, x->symbol, a));
			forget_maps(t);
			return 0;
		}
	}
	if (in->src_reg == BPF_PSEUDO_KFUNC_CALL)
		return TXERR(t, pc, "kfunc %d is not provided", in->imm);
	const struct gx_helper_desc *h = gx_helper_find((unsigned)in->imm);
	if (!h)
		return TXERR(t, pc, "unknown helper %d", in->imm);
	if (h->id == GX_HID_LOOP) {
		emit_bpf_loop(t);
		forget_maps(t);
		return 0;
	}
	const char *sym = h->symbol;
	char typed[64];
	int mi = t->mapreg[BPF_REG_1];
	if (mi >= 0 && (h->id == GX_HID_MAP_LOOKUP_ELEM || h->id == GX_HID_MAP_UPDATE_ELEM)) {
		const char *suffix = NULL;
		switch (t->o->maps[mi].type) {
		case GX_MAP_ARRAY: suffix = "array"; break;
		case GX_MAP_HASH: suffix = "hash"; break;
		case GX_MAP_PERSM_ARRAY: suffix = "persm"; break;
		case GX_MAP_PERWARP_ARRAY: suffix = "perwarp"; break;
		}
		if (suffix) {
			/* what the JIT knows of an array's geometry as immediates
			 * (r3, r4: unused by a lookup): the address arithmetic
			 * folds, only the storage address and shard count are
			 * read from __gx_devrt */
			const struct gx_jit_map *m = &t->o->maps[mi];
			bool fold = t->o->target == GX_JIT_PTX && t->o->sz > offsetof(struct gx_jit_opts, fold_geometry) &&
				    t->o->fold_geometry && h->id == GX_HID_MAP_LOOKUP_ELEM && m->type != GX_MAP_HASH &&
				    m->value_size && m->max_entries;
			snprintf(typed, sizeof(typed), "%s__%s%s", h->symbol, suffix, fold ? "_k" : "");
			sym = typed;
			if (fold) {
				a[2] = c64(t, m->max_entries);
				a[3] = c64(t, GX_ROUND8((unsigned long long)m->value_size));
			}
		}
	}
	wr(t, BPF_REG_0, call_helper(t, sym, a));
	forget_maps(t); /* r1..r5 are clobbered by a call */
	return 0;
}

static LLVMIntPredicate jmp_pred(int op)
{
	switch (op) {
	case BPF_JEQ:
		return LLVMIntEQ;
	case BPF_JNE:
		return LLVMIntNE;
	case BPF_JGT:
		return LLVMIntUGT;
	case BPF_JGE:
		return LLVMIntUGE;
	case BPF_JLT:
		return LLVMIntULT;
	case BPF_JLE:
		return LLVMIntULE;
	case BPF_JSGT:
		return LLVMIntSGT;
	case BPF_JSGE:
		return LLVMIntSGE;
	case BPF_JSLT:
		return LLVMIntSLT;
	default:
		return LLVMIntSLE;
	}
}

static int emit_ret(struct tx *t, int main_fn)
{
	LLVMValueRef r0 = rd(t, BPF_REG_0);
	if (main_fn && !t->o->ret64)
		r0 = LLVMBuildTrunc(t->b, r0, t->i32, "");
	LLVMBuildRet(t->b, r0);
	return 0;
}

/* Jump target of the branch at pc, or -1 (with the error set). */
static long long jmp_target(struct tx *t, size_t pc, const struct fn *f)
{
	const struct bpf_insn *in = &t->insn[pc];
	long long d = (BPF_CLASS(in->code) == BPF_JMP32 && BPF_OP(in->code) == BPF_JA) ? in->imm
											: in->off;
	long long tgt = (long long)pc + d + 1;
	if (tgt < (long long)f->start || tgt >= (long long)f->end) {
		TXERR(t, pc, "jump out of range (to %lld)", tgt);
		return -1;
	}
	if (t->half[tgt]) { /* the second half of an ld_imm64 is not an instruction */
		TXERR(t, pc, "jump into the middle of ld_imm64");
		return -1;
	}
	return tgt;
}

static int is_jmp_class(const struct bpf_insn *in)
{
	return BPF_CLASS(in->code) == BPF_JMP || BPF_CLASS(in->code) == BPF_JMP32;
}

static int emit_function(struct tx *t, struct fn *f, int main_fn)
{
	int ret = 0;
	t->fn = f->fn;
	memset(t->bbs + f->start, 0, (f->end - f->start) * sizeof(*t->bbs));

	/* Leaders. Also mark the second half of ld_imm64 to skip it. */
	LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(t->ctx, f->fn, "entry");
	for (size_t pc = f->start; pc < f->end; pc++) {
		const struct bpf_insn *in = &t->insn[pc];
		if (pc == f->start && !t->bbs[pc])
			t->bbs[pc] = LLVMAppendBasicBlockInContext(t->ctx, f->fn, "");
		if (is_ldimm64(in)) {
			pc++;
			continue;
		}
		if (!is_jmp_class(in))
			continue;
		int op = BPF_OP(in->code);
		if (op == BPF_CALL)
			continue;
		if (op != BPF_EXIT) {
			long long tgt = jmp_target(t, pc, f);
			if (tgt < 0)
				return -EINVAL;
			if (!t->bbs[tgt])
				t->bbs[tgt] = LLVMAppendBasicBlockInContext(t->ctx, f->fn, "");
		}
		if (pc + 1 < f->end && !t->bbs[pc + 1])
			t->bbs[pc + 1] = LLVMAppendBasicBlockInContext(t->ctx, f->fn, "");
	}

	/* Entry: registers, stack, arguments. */
	LLVMPositionBuilderAtEnd(t->b, entry);
	LLVMTypeRef st_ty = LLVMArrayType2(t->i8, GX_STACK_SIZE);
	t->stack = LLVMBuildAlloca(t->b, st_ty, "stack");
	LLVMSetAlignment(t->stack, 8);
	for (int r = 0; r <= 10; r++) {
		char name[8];
		snprintf(name, sizeof(name), "r%d", r);
		t->regs[r] = LLVMBuildAlloca(t->b, t->i64, name);
	}
	for (int r = 0; r <= 9; r++)
		wr(t, r, c64(t, 0));
	if (main_fn) {
		wr(t, BPF_REG_1, LLVMBuildPtrToInt(t->b, LLVMGetParam(f->fn, 0), t->i64, ""));
	} else {
		for (int r = 0; r < 5; r++)
			wr(t, BPF_REG_1 + r, LLVMGetParam(f->fn, (unsigned)r));
	}
	LLVMValueRef top = c64(t, GX_STACK_SIZE);
	wr(t, BPF_REG_10, LLVMBuildPtrToInt(t->b, LLVMBuildGEP2(t->b, t->i8, t->stack, &top, 1, ""),
					    t->i64, ""));
	LLVMBuildBr(t->b, t->bbs[f->start]);

	int open = 0; /* current block has no terminator yet */
	for (size_t pc = f->start; pc < f->end && !ret; pc++) {
		const struct bpf_insn *in = &t->insn[pc];
		if (t->bbs[pc]) {
			if (open)
				LLVMBuildBr(t->b, t->bbs[pc]);
			LLVMPositionBuilderAtEnd(t->b, t->bbs[pc]);
			open = 1;
			forget_maps(t);
		}
		if (!open) /* unreachable code after exit/ja without a label */
			continue;
		switch (BPF_CLASS(in->code)) {
		case BPF_ALU:
		case BPF_ALU64:
			ret = emit_alu(t, pc, in);
			break;
		case BPF_LDX:
			ret = emit_ldx(t, pc, in);
			break;
		case BPF_ST:
		case BPF_STX:
			ret = emit_st(t, pc, in);
			break;
		case BPF_LD:
			if (!is_ldimm64(in)) {
				ret = TXERR(t, pc, "legacy packet access is not supported");
				break;
			}
			ret = emit_ldimm64(t, pc, in);
			pc++;
			break;
		case BPF_JMP:
		case BPF_JMP32: {
			int op = BPF_OP(in->code), j32 = BPF_CLASS(in->code) == BPF_JMP32;
			if (op == BPF_CALL) {
				if (j32)
					ret = TXERR(t, pc, "invalid call opcode");
				else
					ret = emit_call(t, pc, in);
				break;
			}
			if (op == BPF_EXIT) {
				ret = j32 ? TXERR(t, pc, "invalid exit opcode") : emit_ret(t, main_fn);
				open = 0;
				break;
			}
			if (op == BPF_JCOND) {
				ret = TXERR(t, pc, "may_goto is not supported");
				break;
			}
			long long tgt = jmp_target(t, pc, f);
			if (tgt < 0) {
				ret = -EINVAL;
				break;
			}
			if (op == BPF_JA) {
				LLVMBuildBr(t->b, bb_at(t, (size_t)tgt));
				open = 0;
				break;
			}
			LLVMValueRef a = rd(t, in->dst_reg), b, c;
			if (BPF_SRC(in->code) == BPF_X)
				b = rd(t, in->src_reg);
			else
				b = c64(t, (unsigned long long)(long long)in->imm);
			if (j32) {
				a = LLVMBuildTrunc(t->b, a, t->i32, "");
				b = LLVMBuildTrunc(t->b, b, t->i32, "");
			}
			if (op == BPF_JSET) {
				LLVMValueRef x = LLVMBuildAnd(t->b, a, b, "");
				c = LLVMBuildICmp(t->b, LLVMIntNE, x, LLVMConstInt(LLVMTypeOf(x), 0, 0), "");
			} else if (op > BPF_JSLE || op == 0xe0) {
				ret = TXERR(t, pc, "unknown jump opcode 0x%02x", in->code);
				break;
			} else {
				c = LLVMBuildICmp(t->b, jmp_pred(op), a, b, "");
			}
			if (pc + 1 >= f->end) {
				ret = TXERR(t, pc, "conditional jump falls off the end");
				break;
			}
			LLVMBuildCondBr(t->b, c, bb_at(t, (size_t)tgt), bb_at(t, pc + 1));
			open = 0;
			break;
		}
		default:
			ret = TXERR(t, pc, "unknown opcode 0x%02x", in->code);
		}
	}
	if (!ret && open)
		ret = TXERR(t, f->end - 1, "last instruction falls through");
	return ret;
}

int gx_jit_translate(LLVMContextRef ctx, LLVMModuleRef mod, const struct gx_jit_prog *progs,
		     size_t nr_progs, const struct gx_jit_opts *opts, char *err, size_t err_sz)
{
	struct tx t = { .ctx = ctx, .mod = mod, .o = opts, .err = err, .err_sz = err_sz };
	int ret = 0;
	t.i1 = LLVMInt1TypeInContext(ctx);
	t.i8 = LLVMInt8TypeInContext(ctx);
	t.i16 = LLVMInt16TypeInContext(ctx);
	t.i32 = LLVMInt32TypeInContext(ctx);
	t.i64 = LLVMInt64TypeInContext(ctx);
	t.ptr = LLVMPointerTypeInContext(ctx, 0);
	LLVMTypeRef a5[5] = { t.i64, t.i64, t.i64, t.i64, t.i64 };
	t.helper_ty = LLVMFunctionType(t.i64, a5, 5, 0);
	LLVMTypeRef main_ty = LLVMFunctionType(opts->ret64 ? t.i64 : t.i32, &t.ptr, 1, 0);
	t.b = LLVMCreateBuilderInContext(ctx);

	for (size_t k = 0; k < nr_progs && !ret; k++) {
		t.p = &progs[k];
		t.insn = progs[k].insns;
		t.n = progs[k].nr_insns;
		t.fns = NULL;
		t.nr_fns = 0;
		if (!t.insn || !t.n) {
			ret = gx_jit_errf(err, err_sz, -EINVAL, "prog %s: no instructions",
					  t.p->name);
			break;
		}
		const char *fname = gx_jit_func_name(t.p);
		if (LLVMGetNamedFunction(mod, fname)) {
			ret = gx_jit_errf(err, err_sz, -EEXIST, "prog %s: duplicate function name '%s'",
					  t.p->name, fname);
			break;
		}
		ret = find_functions(&t);
		if (ret)
			break;
		t.bbs = calloc(t.n, sizeof(*t.bbs));
		t.half = calloc(t.n, 1);
		if (!t.bbs || !t.half) {
			free(t.bbs);
			free(t.half);
			free(t.fns);
			ret = -ENOMEM;
			break;
		}
		for (size_t pc = 0; pc + 1 < t.n; pc++)
			if (is_ldimm64(&t.insn[pc]))
				t.half[++pc] = 1;
		for (size_t i = 0; i < t.nr_fns; i++) {
			if (i == 0) {
				t.fns[i].fn = LLVMAddFunction(mod, fname, main_ty);
			} else {
				char name[256];
				snprintf(name, sizeof(name), "__gx_%s_sub%zu", fname, t.fns[i].start);
				t.fns[i].fn = LLVMAddFunction(mod, name, t.helper_ty);
				LLVMSetLinkage(t.fns[i].fn, LLVMInternalLinkage);
			}
		}
		for (size_t i = 0; i < t.nr_fns && !ret; i++)
			ret = emit_function(&t, &t.fns[i], i == 0);
		free(t.bbs);
		free(t.half);
		free(t.fns);
	}
	LLVMDisposeBuilder(t.b);
	return ret;
}
