/* alu_table.h — edge-case programs with known results, one table for every
 * execution mode: the reference interpreter (tests/devbpf/test_interp.c), the
 * native JIT and the PTX JIT (differential tests of the JIT part). Each case is
 * a complete program (no context, no maps, no helpers; it may use its own
 * stack and bpf-to-bpf calls) whose r0 at exit must equal `expect`.
 * Cases marked GX_ALU_UNVERIFIED are rejected by the verifier (e.g. division
 * by a zero immediate) but their semantics are still defined and checked. */
#ifndef GX_TEST_ALU_TABLE_H
#define GX_TEST_ALU_TABLE_H

#include <string.h>

#include "tests/devbpf/bpf_insn.h"

#define GX_ALU_MAX_INSNS 24
#define GX_ALU_UNVERIFIED 1u

struct gx_alu_case {
	const char *name;
	struct bpf_insn insns[GX_ALU_MAX_INSNS]; /* zero-padded */
	uint64_t expect;
	unsigned flags;
};

/* Number of insns of a case: up to its last non-zero slot (programs end
 * with exit, never an all-zero insn). */
static inline unsigned gx_alu_case_len(const struct gx_alu_case *c)
{
	static const struct bpf_insn zero;
	unsigned n = GX_ALU_MAX_INSNS;
	while (n > 0 && !memcmp(&c->insns[n - 1], &zero, sizeof(zero)))
		n--;
	return n;
}

#define C(nm, exp, ...) { nm, { __VA_ARGS__ }, (uint64_t)(exp), 0 }
#define CU(nm, exp, ...) { nm, { __VA_ARGS__ }, (uint64_t)(exp), GX_ALU_UNVERIFIED }
/* r0 = a; r1 = b; r0 OP= r1 (64-bit registers loaded with ld_imm64) */
#define BIN64(nm, op, a, b, exp) \
	C(nm, exp, GX_LD_IMM64(0, a), GX_LD_IMM64(1, b), GX_ALU64_REG(op, 0, 1), GX_EXIT())
#define BIN32(nm, op, a, b, exp) \
	C(nm, exp, GX_LD_IMM64(0, a), GX_LD_IMM64(1, b), GX_ALU32_REG(op, 0, 1), GX_EXIT())
#define SBIN64(nm, op, a, b, exp) \
	C(nm, exp, GX_LD_IMM64(0, a), GX_LD_IMM64(1, b), GX_SALU64_REG(op, 0, 1), GX_EXIT())
#define SBIN32(nm, op, a, b, exp) \
	C(nm, exp, GX_LD_IMM64(0, a), GX_LD_IMM64(1, b), GX_SALU32_REG(op, 0, 1), GX_EXIT())
#define IMM64(nm, op, a, i, exp) C(nm, exp, GX_LD_IMM64(0, a), GX_ALU64_IMM(op, 0, i), GX_EXIT())
#define IMM32(nm, op, a, i, exp) C(nm, exp, GX_LD_IMM64(0, a), GX_ALU32_IMM(op, 0, i), GX_EXIT())
#define UN(nm, a, insn, exp) C(nm, exp, GX_LD_IMM64(0, a), insn, GX_EXIT())
/* r0 = taken ? 1 : 0 for `if r1 OP r2` / `if r1 OP imm` */
#define JR(nm, cls, op, a, b, taken)                                                           \
	C(nm, taken, GX_MOV64_IMM(0, 0), GX_LD_IMM64(1, a), GX_LD_IMM64(2, b),                  \
	  GX_INSN((cls) | (op) | BPF_X, 1, 2, 1, 0), GX_EXIT(), GX_MOV64_IMM(0, 1), GX_EXIT())
#define JI(nm, cls, op, a, i, taken)                                                             \
	C(nm, taken, GX_MOV64_IMM(0, 0), GX_LD_IMM64(1, a), GX_INSN((cls) | (op) | BPF_K, 1, 0, 1, i), \
	  GX_EXIT(), GX_MOV64_IMM(0, 1), GX_EXIT())

#define M1 0xffffffffffffffffull
#define I64MIN 0x8000000000000000ull

static const struct gx_alu_case gx_alu_cases[] = {
	/* ---- ALU64 ---- */
	BIN64("add64 wraps", BPF_ADD, M1, 1, 0),
	IMM64("add64 imm is sign-extended", BPF_ADD, 0, -1, M1),
	BIN64("sub64 borrows", BPF_SUB, 5, 7, 0xfffffffffffffffeull),
	BIN64("mul64 keeps low 64 bits", BPF_MUL, 0x100000000ull, 0x100000000ull, 0),
	IMM64("mul64 negative imm", BPF_MUL, 3, -2, 0xfffffffffffffffaull),
	BIN64("div64 unsigned", BPF_DIV, M1, 2, 0x7fffffffffffffffull),
	IMM64("div64 imm -1 is 2^64-1 unsigned", BPF_DIV, 10, -1, 0),
	BIN64("div64 by zero register gives 0", BPF_DIV, 7, 0, 0),
	BIN64("mod64 by zero register keeps dst", BPF_MOD, 7, 0, 7),
	BIN64("mod64", BPF_MOD, 17, 5, 2),
	BIN64("mod64 large", BPF_MOD, M1, 10, 5),
	SBIN64("sdiv64 truncates toward zero", BPF_DIV, -7, 2, -3),
	SBIN64("smod64 sign follows dividend", BPF_MOD, -7, 2, -1),
	SBIN64("smod64 negative divisor", BPF_MOD, 7, -2, 1),
	SBIN64("sdiv64 INT64_MIN / -1 wraps", BPF_DIV, I64MIN, -1, I64MIN),
	SBIN64("smod64 INT64_MIN % -1 is 0", BPF_MOD, I64MIN, -1, 0),
	SBIN64("sdiv64 by zero gives 0", BPF_DIV, -7, 0, 0),
	SBIN64("smod64 by zero keeps dst", BPF_MOD, -7, 0, -7),
	C("sdiv64 imm", -5, GX_LD_IMM64(0, 10), GX_SALU64_IMM(BPF_DIV, 0, -2), GX_EXIT()),
	IMM64("or64 imm sign-extends", BPF_OR, 0, -2, 0xfffffffffffffffeull),
	IMM64("and64 imm", BPF_AND, 0xff00ff00ff00ff00ull, 0x0ff0, 0x0f00),
	IMM64("and64 negative imm keeps high bits", BPF_AND, 0xff00ff00ff00ff00ull, -256, 0xff00ff00ff00ff00ull),
	BIN64("xor64", BPF_XOR, 0xf0f0f0f0f0f0f0f0ull, M1, 0x0f0f0f0f0f0f0f0full),
	IMM64("lsh64 by 63", BPF_LSH, 1, 63, I64MIN),
	BIN64("lsh64 register 64 is masked to 0", BPF_LSH, 1, 64, 1),
	BIN64("lsh64 register 65 is masked to 1", BPF_LSH, 1, 65, 2),
	IMM64("rsh64 logical", BPF_RSH, I64MIN, 63, 1),
	BIN64("rsh64 register masked", BPF_RSH, I64MIN, 127, 1),
	IMM64("arsh64 arithmetic", BPF_ARSH, I64MIN, 63, M1),
	BIN64("arsh64 register masked", BPF_ARSH, 0x8000000000000010ull, 68, 0xf800000000000001ull),
	UN("neg64", 5, GX_NEG64(0), 0xfffffffffffffffbull),
	UN("neg64 of INT64_MIN", I64MIN, GX_NEG64(0), I64MIN),
	C("mov64 imm sign-extends", M1, GX_MOV64_IMM(0, -1), GX_EXIT()),
	C("mov64 register", 0x123456789abcdef0ull, GX_LD_IMM64(1, 0x123456789abcdef0ull), GX_MOV64_REG(0, 1), GX_EXIT()),
	/* ---- ALU32: operate on the low half, zero-extend the result ---- */
	BIN32("add32 wraps and zero-extends", BPF_ADD, M1, 1, 0),
	C("mov32 imm zero-extends", 0xffffffffull, GX_MOV32_IMM(0, -1), GX_EXIT()),
	C("mov32 register zero-extends", 0xffffffffull, GX_LD_IMM64(1, M1), GX_MOV32_REG(0, 1), GX_EXIT()),
	IMM32("sub32 borrows in 32 bits", BPF_SUB, 0, 1, 0xffffffffull),
	IMM32("mul32", BPF_MUL, 0x10000, 0x10000, 0),
	IMM32("mul32 high input bits ignored", BPF_MUL, 0x500000003ull, 3, 9),
	IMM32("div32 ignores high bits", BPF_DIV, 0x100000006ull, 3, 2),
	BIN32("div32 by zero gives 0", BPF_DIV, 0xffffffff00000007ull, 0, 0),
	BIN32("div32 by register with zero low half", BPF_DIV, 7, 0x100000000ull, 0),
	BIN32("mod32 by zero keeps low half", BPF_MOD, 0xffffffff00000007ull, 0, 7),
	BIN32("mod32", BPF_MOD, 0xffffffffull, 10, 5),
	SBIN32("sdiv32", BPF_DIV, 0xfffffff9ull, 2, 0xfffffffdull),
	SBIN32("smod32", BPF_MOD, 0xfffffff9ull, 2, 0xffffffffull),
	SBIN32("sdiv32 INT32_MIN / -1 wraps", BPF_DIV, 0x80000000ull, 0xffffffffull, 0x80000000ull),
	SBIN32("smod32 INT32_MIN % -1 is 0", BPF_MOD, 0x80000000ull, 0xffffffffull, 0),
	SBIN32("sdiv32 by zero gives 0", BPF_DIV, 0xfffffff9ull, 0, 0),
	SBIN32("smod32 by zero keeps low half", BPF_MOD, 0x12345678fffffff9ull, 0, 0xfffffff9ull),
	BIN32("lsh32 register 33 is masked to 1", BPF_LSH, 1, 33, 2),
	IMM32("lsh32 by 31", BPF_LSH, 1, 31, 0x80000000ull),
	IMM32("rsh32 logical on low half", BPF_RSH, M1, 4, 0x0fffffffull),
	IMM32("arsh32", BPF_ARSH, 0x80000000ull, 31, 0xffffffffull),
	BIN32("arsh32 register masked", BPF_ARSH, 0x80000010ull, 36, 0xf8000001ull),
	UN("neg32", 1, GX_NEG32(0), 0xffffffffull),
	IMM32("or32 zero-extends", BPF_OR, 0xffffffff00000000ull, 1, 1),
	IMM32("and32", BPF_AND, M1, 0xff, 0xff),
	IMM32("xor32 imm -1", BPF_XOR, 0x1234567800000000ull, -1, 0xffffffffull),
	/* ---- sign extension (cpu v4) ---- */
	C("movsx64 s8", 0xffffffffffffff80ull, GX_MOV64_IMM(1, 0x80), GX_MOVSX64(0, 1, 8), GX_EXIT()),
	C("movsx64 s8 positive", 0x7f, GX_MOV64_IMM(1, 0x17f), GX_MOVSX64(0, 1, 8), GX_EXIT()),
	C("movsx64 s16", 0xffffffffffff8000ull, GX_MOV64_IMM(1, 0x8000), GX_MOVSX64(0, 1, 16), GX_EXIT()),
	C("movsx64 s32", 0xffffffff80000000ull, GX_LD_IMM64(1, 0x80000000ull), GX_MOVSX64(0, 1, 32), GX_EXIT()),
	C("movsx32 s8 zero-extends", 0xffffff80ull, GX_MOV64_IMM(1, 0x80), GX_MOVSX32(0, 1, 8), GX_EXIT()),
	C("movsx32 s16", 0x7fff, GX_LD_IMM64(1, 0xffff7fffull), GX_MOVSX32(0, 1, 16), GX_EXIT()),
	C("ldx u8 zero-extends", 0x80, GX_MOV64_IMM(1, 0x80), GX_STX(BPF_B, 10, 1, -8),
	  GX_LDX(BPF_B, 0, 10, -8), GX_EXIT()),
	C("ldxsx s8", 0xffffffffffffff80ull, GX_MOV64_IMM(1, 0x80), GX_STX(BPF_B, 10, 1, -8),
	  GX_LDXSX(BPF_B, 0, 10, -8), GX_EXIT()),
	C("ldxsx s16", 0xffffffffffff8001ull, GX_MOV64_IMM(1, 0x8001), GX_STX(BPF_H, 10, 1, -8),
	  GX_LDXSX(BPF_H, 0, 10, -8), GX_EXIT()),
	C("ldxsx s32", 0xfffffffffffffffeull, GX_MOV64_IMM(1, -2), GX_STX(BPF_W, 10, 1, -8),
	  GX_LDXSX(BPF_W, 0, 10, -8), GX_EXIT()),
	C("ldx u32 zero-extends", 0xfffffffeull, GX_MOV64_IMM(1, -2), GX_STX(BPF_W, 10, 1, -8),
	  GX_LDX(BPF_W, 0, 10, -8), GX_EXIT()),
	C("st imm64 sign-extends imm", M1, GX_ST(BPF_DW, 10, -8, -1), GX_LDX(BPF_DW, 0, 10, -8), GX_EXIT()),
	C("stx u16 stores the low half", 0x5678, GX_LD_IMM64(1, 0x12345678ull), GX_ST(BPF_DW, 10, -8, 0),
	  GX_STX(BPF_H, 10, 1, -8), GX_LDX(BPF_DW, 0, 10, -8), GX_EXIT()),
	/* ---- byte order ---- */
	UN("be16", 0x123456789abcdef0ull, GX_BE(0, 16), 0xf0de),
	UN("be32", 0x123456789abcdef0ull, GX_BE(0, 32), 0xf0debc9aull),
	UN("be64", 0x123456789abcdef0ull, GX_BE(0, 64), 0xf0debc9a78563412ull),
	UN("le16 truncates", 0x123456789abcdef0ull, GX_LE(0, 16), 0xdef0),
	UN("le32 truncates", 0x123456789abcdef0ull, GX_LE(0, 32), 0x9abcdef0ull),
	UN("le64 is identity", 0x123456789abcdef0ull, GX_LE(0, 64), 0x123456789abcdef0ull),
	UN("bswap16", 0x123456789abcdef0ull, GX_BSWAP(0, 16), 0xf0de),
	UN("bswap32", 0x123456789abcdef0ull, GX_BSWAP(0, 32), 0xf0debc9aull),
	UN("bswap64", 0x123456789abcdef0ull, GX_BSWAP(0, 64), 0xf0debc9a78563412ull),
	/* ---- jumps: 64-bit ---- */
	JR("jeq taken", BPF_JMP, BPF_JEQ, 5, 5, 1),
	JR("jeq not taken", BPF_JMP, BPF_JEQ, 5, 0x100000005ull, 0),
	JI("jeq imm -1 sign-extends", BPF_JMP, BPF_JEQ, M1, -1, 1),
	JR("jne", BPF_JMP, BPF_JNE, 1, 2, 1),
	JR("jgt unsigned", BPF_JMP, BPF_JGT, M1, 1, 1),
	JR("jgt equal", BPF_JMP, BPF_JGT, 3, 3, 0),
	JR("jge equal", BPF_JMP, BPF_JGE, 3, 3, 1),
	JR("jlt unsigned", BPF_JMP, BPF_JLT, 1, M1, 1),
	JR("jle", BPF_JMP, BPF_JLE, 4, 3, 0),
	JR("jset", BPF_JMP, BPF_JSET, 0x100000000ull, 0x100000001ull, 1),
	JR("jset none", BPF_JMP, BPF_JSET, 0x100000000ull, 1, 0),
	JR("jsgt signed", BPF_JMP, BPF_JSGT, M1, 1, 0),
	JR("jsgt signed true", BPF_JMP, BPF_JSGT, 1, M1, 1),
	JR("jsge equal", BPF_JMP, BPF_JSGE, I64MIN, I64MIN, 1),
	JR("jslt signed", BPF_JMP, BPF_JSLT, M1, 0, 1),
	JR("jsle", BPF_JMP, BPF_JSLE, 0, M1, 0),
	JI("jgt imm -1 is 2^64-1", BPF_JMP, BPF_JGT, 5, -1, 0),
	JI("jlt imm -1 is 2^64-1", BPF_JMP, BPF_JLT, 5, -1, 1),
	JI("jslt imm -1", BPF_JMP, BPF_JSLT, 5, -1, 0),
	/* ---- jumps: 32-bit compare the low halves ---- */
	JR("jeq32 ignores high bits", BPF_JMP32, BPF_JEQ, 0x100000005ull, 5, 1),
	JR("jne32", BPF_JMP32, BPF_JNE, 0x100000005ull, 5, 0),
	JR("jgt32 unsigned", BPF_JMP32, BPF_JGT, 0xffffffffull, 1, 1),
	JR("jge32", BPF_JMP32, BPF_JGE, 0x200000001ull, 0x100000002ull, 0),
	JR("jlt32", BPF_JMP32, BPF_JLT, 0x100000000ull, 1, 1),
	JR("jle32", BPF_JMP32, BPF_JLE, 2, 0x100000002ull, 1),
	JR("jset32", BPF_JMP32, BPF_JSET, 0x100000000ull, 0x100000000ull, 0),
	JR("jsgt32 signed", BPF_JMP32, BPF_JSGT, 0xffffffffull, 1, 0),
	JR("jsge32", BPF_JMP32, BPF_JSGE, 0x7fffffffull, 0x80000000ull, 1),
	JR("jslt32 signed", BPF_JMP32, BPF_JSLT, 0x80000000ull, 0, 1),
	JR("jsle32", BPF_JMP32, BPF_JSLE, 0x00000000ffffffffull, 0x1ffffffffull, 1),
	JI("jeq32 imm -1", BPF_JMP32, BPF_JEQ, 0xffffffffull, -1, 1),
	JI("jsgt32 imm", BPF_JMP32, BPF_JSGT, 0x180000000ull, -1, 0),
	C("ja skips", 7, GX_MOV64_IMM(0, 7), GX_JA(1), GX_MOV64_IMM(0, 9), GX_EXIT()),
	C("ja backward loop of 3", 3, GX_MOV64_IMM(0, 0), GX_ALU64_IMM(BPF_ADD, 0, 1),
	  GX_JMP_IMM(BPF_JGE, 0, 3, 1), GX_JA(-3), GX_EXIT()),
	C("gotol (ja32) skips", 7, GX_MOV64_IMM(0, 7), GX_JA32(1), GX_MOV64_IMM(0, 9), GX_EXIT()),
	/* ---- calls, stack, atomics ---- */
	C("bpf-to-bpf call passes r1 and returns r0", 15, GX_MOV64_IMM(1, 5), GX_CALL_REL(1), GX_EXIT(),
	  GX_MOV64_REG(0, 1), GX_ALU64_IMM(BPF_MUL, 0, 3), GX_EXIT()),
	C("callee does not clobber caller r6", 7, GX_MOV64_IMM(6, 7), GX_CALL_REL(2), GX_MOV64_REG(0, 6),
	  GX_EXIT(), GX_MOV64_IMM(6, 100), GX_MOV64_IMM(0, 0), GX_EXIT()),
	C("callee has its own stack frame", 42, GX_ST(BPF_DW, 10, -8, 42), GX_CALL_REL(2),
	  GX_LDX(BPF_DW, 0, 10, -8), GX_EXIT(), GX_ST(BPF_DW, 10, -8, 1), GX_MOV64_IMM(0, 0), GX_EXIT()),
	C("atomic add64", 15, GX_ST(BPF_DW, 10, -8, 10), GX_MOV64_IMM(1, 5),
	  GX_ATOMIC(BPF_DW, BPF_ADD, 10, 1, -8), GX_LDX(BPF_DW, 0, 10, -8), GX_EXIT()),
	C("atomic fetch_add64 returns old", 10, GX_ST(BPF_DW, 10, -8, 10), GX_MOV64_IMM(1, 5),
	  GX_ATOMIC(BPF_DW, BPF_ADD | BPF_FETCH, 10, 1, -8), GX_MOV64_REG(0, 1), GX_EXIT()),
	C("atomic fetch_or32 zero-extends old", 0xfffffff0ull, GX_ST(BPF_W, 10, -8, -16),
	  GX_MOV64_IMM(1, 1), GX_ATOMIC(BPF_W, BPF_OR | BPF_FETCH, 10, 1, -8), GX_MOV64_REG(0, 1), GX_EXIT()),
	C("atomic and/xor64", 0x7, GX_ST(BPF_DW, 10, -8, 0xe), GX_MOV64_IMM(1, 0x7),
	  GX_ATOMIC(BPF_DW, BPF_AND, 10, 1, -8), GX_MOV64_IMM(1, 0x1),
	  GX_ATOMIC(BPF_DW, BPF_XOR, 10, 1, -8), GX_LDX(BPF_DW, 0, 10, -8), GX_EXIT()),
	C("atomic xchg64", 30, GX_ST(BPF_DW, 10, -8, 10), GX_MOV64_IMM(1, 20),
	  GX_ATOMIC(BPF_DW, BPF_XCHG, 10, 1, -8), GX_LDX(BPF_DW, 0, 10, -8), GX_ALU64_REG(BPF_ADD, 0, 1),
	  GX_EXIT()),
	C("atomic cmpxchg64 success", 30, GX_ST(BPF_DW, 10, -8, 10), GX_MOV64_IMM(0, 10), GX_MOV64_IMM(1, 20),
	  GX_ATOMIC(BPF_DW, BPF_CMPXCHG, 10, 1, -8), GX_LDX(BPF_DW, 1, 10, -8), GX_ALU64_REG(BPF_ADD, 0, 1),
	  GX_EXIT()),
	C("atomic cmpxchg64 failure", 22, GX_ST(BPF_DW, 10, -8, 11), GX_MOV64_IMM(0, 10), GX_MOV64_IMM(1, 20),
	  GX_ATOMIC(BPF_DW, BPF_CMPXCHG, 10, 1, -8), GX_LDX(BPF_DW, 1, 10, -8), GX_ALU64_REG(BPF_ADD, 0, 1),
	  GX_EXIT()),
	C("atomic cmpxchg32 zero-extends r0", 0xffffffffull, GX_ST(BPF_W, 10, -8, -1), GX_MOV64_IMM(0, 0),
	  GX_MOV64_IMM(1, 20), GX_ATOMIC(BPF_W, BPF_CMPXCHG, 10, 1, -8), GX_EXIT()),
	/* ---- defined, but rejected by the verifier ---- */
	CU("div64 by zero imm gives 0", 0, GX_MOV64_IMM(0, 9), GX_ALU64_IMM(BPF_DIV, 0, 0), GX_EXIT()),
	CU("mod32 by zero imm keeps low half", 9, GX_LD_IMM64(0, 0x700000009ull), GX_ALU32_IMM(BPF_MOD, 0, 0),
	   GX_EXIT()),
	CU("lsh64 imm 64 masked", 1, GX_MOV64_IMM(0, 1), GX_ALU64_IMM(BPF_LSH, 0, 64), GX_EXIT()),
};

#undef C
#undef CU
#undef BIN64
#undef BIN32
#undef SBIN64
#undef SBIN32
#undef IMM64
#undef IMM32
#undef UN
#undef JR
#undef JI
#undef M1
#undef I64MIN

#endif
