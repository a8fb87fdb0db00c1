/* test_jit.c — JIT edge-case tables (lib/test_bpf.c style): every program
 * runs through the native JIT and must give the expected r0; the interpreter
 * (when built) must agree; every program is also compiled to PTX and the
 * module (plus a kernel calling each .func) must pass ptxas -arch=sm_90.
 * Also: bpf-to-bpf calls, bpf_loop, maps and helpers on host maps, error
 * messages for bad programs, and the JIT time per policy. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "devbpf/hosthelpers_internal.h"
#include "devbpf/gx_bpf.h"
#include "tests/devbpf/bpf_insn_macros.h"
#include "tests/gx_test.h"

struct tcase {
	char name[48];
	uint64_t expect;
	const struct bpf_insn *insns;
	size_t n;
};

#define T(NAME, EXP, ...)                                                           \
	{ NAME, EXP, (const struct bpf_insn[]){ __VA_ARGS__ },                     \
	  sizeof((const struct bpf_insn[]){ __VA_ARGS__ }) / sizeof(struct bpf_insn) }

static const struct tcase alu_cases[] = {
	T("mov64_imm_sext", 0xffffffffffffffffull, MOV64_IMM(0, -1), EXIT()),
	T("mov32_imm_zext", 0xffffffffull, MOV32_IMM(0, -1), EXIT()),
	T("mov32_reg_zext", 0xffffffffull, MOV64_IMM(1, -1), ALU32_REG(BPF_MOV, 0, 1), EXIT()),
	T("ld_imm64", 0x123456789abcdef0ull, LD_IMM64(0, 0x123456789abcdef0ull), EXIT()),
	T("add64_overflow", 0x8000000000000000ull, LD_IMM64(0, 0x7fffffffffffffffull),
	  ALU64_IMM(BPF_ADD, 0, 1), EXIT()),
	T("add32_wrap_zext", 1, MOV64_IMM(0, -1), ALU32_IMM(BPF_ADD, 0, 2), EXIT()),
	T("sub32_zext", 0xffffffffull, MOV64_IMM(0, 0), ALU32_IMM(BPF_SUB, 0, 1), EXIT()),
	T("sub64_reg", 0xfffffffffffffffeull, MOV64_IMM(0, 1), MOV64_IMM(1, 3),
	  ALU64_REG(BPF_SUB, 0, 1), EXIT()),
	T("mul64", 0x1000000000ull, LD_IMM64(0, 0x100000000ull), ALU64_IMM(BPF_MUL, 0, 16), EXIT()),
	T("mul32_truncates", 9, LD_IMM64(0, 0x100000003ull), ALU32_IMM(BPF_MUL, 0, 3), EXIT()),
	T("div64_by_zero", 0, MOV64_IMM(0, 7), MOV64_IMM(1, 0), ALU64_REG(BPF_DIV, 0, 1), EXIT()),
	T("mod64_by_zero", 7, MOV64_IMM(0, 7), MOV64_IMM(1, 0), ALU64_REG(BPF_MOD, 0, 1), EXIT()),
	T("div32_by_zero", 0, LD_IMM64(0, 0x100000007ull), MOV64_IMM(1, 0),
	  ALU32_REG(BPF_DIV, 0, 1), EXIT()),
	T("mod32_by_zero_zext", 7, LD_IMM64(0, 0x100000007ull), MOV64_IMM(1, 0),
	  ALU32_REG(BPF_MOD, 0, 1), EXIT()),
	T("div64_imm_zero", 0, MOV64_IMM(0, 7), ALU64_IMM(BPF_DIV, 0, 0), EXIT()),
	T("udiv64", 0x7fffffffffffffffull, MOV64_IMM(0, -1), ALU64_IMM(BPF_DIV, 0, 2), EXIT()),
	T("umod64", 1, MOV64_IMM(0, -1), ALU64_IMM(BPF_MOD, 0, 2), EXIT()),
	T("udiv32", 0x7fffffffull, MOV64_IMM(0, -1), ALU32_IMM(BPF_DIV, 0, 2), EXIT()),
	T("sdiv64", 0xfffffffffffffffdull, MOV64_IMM(0, -7), MOV64_IMM(1, 2),
	  SDIV64_REG(BPF_DIV, 0, 1), EXIT()),
	T("smod64", 0xffffffffffffffffull, MOV64_IMM(0, -7), MOV64_IMM(1, 2),
	  SDIV64_REG(BPF_MOD, 0, 1), EXIT()),
	T("sdiv64_min_by_m1", 0x8000000000000000ull, LD_IMM64(0, 0x8000000000000000ull),
	  MOV64_IMM(1, -1), SDIV64_REG(BPF_DIV, 0, 1), EXIT()),
	T("smod64_min_by_m1", 0, LD_IMM64(0, 0x8000000000000000ull), MOV64_IMM(1, -1),
	  SDIV64_REG(BPF_MOD, 0, 1), EXIT()),
	T("sdiv64_by_zero", 0, MOV64_IMM(0, -7), MOV64_IMM(1, 0), SDIV64_REG(BPF_DIV, 0, 1), EXIT()),
	T("smod64_by_zero", 0xfffffffffffffff9ull, MOV64_IMM(0, -7), MOV64_IMM(1, 0),
	  SDIV64_REG(BPF_MOD, 0, 1), EXIT()),
	T("sdiv32", 0xfffffffeull, MOV32_IMM(0, -8), MOV32_IMM(1, 3), SDIV32_REG(BPF_DIV, 0, 1),
	  EXIT()),
	T("smod32", 0xfffffffeull, MOV32_IMM(0, -8), MOV32_IMM(1, 3), SDIV32_REG(BPF_MOD, 0, 1),
	  EXIT()),
	T("sdiv32_min_by_m1", 0x80000000ull, MOV32_IMM(0, (int)0x80000000), MOV32_IMM(1, -1),
	  SDIV32_REG(BPF_DIV, 0, 1), EXIT()),
	T("lsh64_masked", 2, MOV64_IMM(0, 1), MOV64_IMM(1, 65), ALU64_REG(BPF_LSH, 0, 1), EXIT()),
	T("lsh32_masked", 2, MOV64_IMM(0, 1), MOV64_IMM(1, 33), ALU32_REG(BPF_LSH, 0, 1), EXIT()),
	T("lsh32_drops_high", 0, MOV64_IMM(0, 1), ALU32_IMM(BPF_LSH, 0, 31), ALU32_IMM(BPF_LSH, 0, 1),
	  EXIT()),
	T("rsh64", 0xf, MOV64_IMM(0, -1), ALU64_IMM(BPF_RSH, 0, 60), EXIT()),
	T("rsh32_zext", 1, MOV64_IMM(0, -1), ALU32_IMM(BPF_RSH, 0, 31), EXIT()),
	T("arsh64", 0xffffffffffffffffull, LD_IMM64(0, 0x8000000000000000ull),
	  ALU64_IMM(BPF_ARSH, 0, 63), EXIT()),
	T("arsh32_zext", 0xffffffffull, MOV32_IMM(0, (int)0x80000000), ALU32_IMM(BPF_ARSH, 0, 31),
	  EXIT()),
	T("arsh64_masked", 0xffffffffffffffffull, MOV64_IMM(0, -2), MOV64_IMM(1, 127),
	  ALU64_REG(BPF_ARSH, 0, 1), EXIT()),
	T("neg64", 0xfffffffffffffffbull, MOV64_IMM(0, 5), ALU64_IMM(BPF_NEG, 0, 0), EXIT()),
	T("neg32_zext", 0xfffffffbull, MOV64_IMM(0, 5), ALU32_IMM(BPF_NEG, 0, 0), EXIT()),
	T("or64_imm_sext", 0xfffffffffffffffeull, MOV64_IMM(0, 0), ALU64_IMM(BPF_OR, 0, -2), EXIT()),
	T("and32_zext", 0xf0, MOV64_IMM(0, -1), ALU32_IMM(BPF_AND, 0, 0xf0), EXIT()),
	T("xor32_zext", 0xffffffffull, MOV64_IMM(0, -1), ALU32_IMM(BPF_XOR, 0, 0), EXIT()),
	T("xor64_reg", 0xff00ull, MOV64_IMM(0, 0xffff), MOV64_IMM(1, 0xff), ALU64_REG(BPF_XOR, 0, 1),
	  EXIT()),
	T("movsx64_s8", 0xffffffffffffff80ull, MOV64_IMM(1, 0x80), MOVSX64(0, 1, 8), EXIT()),
	T("movsx64_s16", 0xffffffffffff8000ull, MOV64_IMM(1, 0x8000), MOVSX64(0, 1, 16), EXIT()),
	T("movsx64_s32", 0xffffffff80000000ull, MOV32_IMM(1, (int)0x80000000), MOVSX64(0, 1, 32),
	  EXIT()),
	T("movsx32_s8_zext", 0xffffff80ull, MOV64_IMM(1, 0x80), MOVSX32(0, 1, 8), EXIT()),
	T("movsx32_s16_zext", 0xffff8000ull, MOV64_IMM(1, 0x8000), MOVSX32(0, 1, 16), EXIT()),
	T("be16", 0x7856, MOV64_IMM(0, 0x12345678), ENDIAN(BPF_TO_BE, 0, 16), EXIT()),
	T("be32", 0x88776655ull, LD_IMM64(0, 0x1122334455667788ull), ENDIAN(BPF_TO_BE, 0, 32), EXIT()),
	T("be64", 0x8877665544332211ull, LD_IMM64(0, 0x1122334455667788ull), ENDIAN(BPF_TO_BE, 0, 64),
	  EXIT()),
	T("le16", 0x5678, MOV64_IMM(0, 0x12345678), ENDIAN(BPF_TO_LE, 0, 16), EXIT()),
	T("le32", 0x55667788ull, LD_IMM64(0, 0x1122334455667788ull), ENDIAN(BPF_TO_LE, 0, 32), EXIT()),
	T("le64", 0x1122334455667788ull, LD_IMM64(0, 0x1122334455667788ull),
	  ENDIAN(BPF_TO_LE, 0, 64), EXIT()),
	T("bswap16", 0x7856, MOV64_IMM(0, 0x12345678), BSWAP(0, 16), EXIT()),
	T("bswap32", 0x78563412ull, LD_IMM64(0, 0xff12345678ull), BSWAP(0, 32), EXIT()),
	T("bswap64", 0x8877665544332211ull, LD_IMM64(0, 0x1122334455667788ull), BSWAP(0, 64), EXIT()),
	/* stack and memory */
	T("stack_u8", 0x88, LD_IMM64(1, 0x1122334455667788ull), STX(BPF_DW, 10, 1, -8),
	  LDX(BPF_B, 0, 10, -8), EXIT()),
	T("stack_u16", 0x5566, LD_IMM64(1, 0x1122334455667788ull), STX(BPF_DW, 10, 1, -8),
	  LDX(BPF_H, 0, 10, -6), EXIT()),
	T("stack_u32", 0x11223344ull, LD_IMM64(1, 0x1122334455667788ull), STX(BPF_DW, 10, 1, -8),
	  LDX(BPF_W, 0, 10, -4), EXIT()),
	T("st_imm_u32", 0xffffffffull, ST(BPF_W, 10, -4, -1), LDX(BPF_W, 0, 10, -4), EXIT()),
	T("st_imm_dw_sext", 0xffffffffffffffffull, ST(BPF_DW, 10, -8, -1), LDX(BPF_DW, 0, 10, -8),
	  EXIT()),
	T("ldsx_s8", 0xffffffffffffff80ull, ST(BPF_B, 10, -1, 0x80), LDXSX(BPF_B, 0, 10, -1), EXIT()),
	T("ldsx_s16", 0xffffffffffff8001ull, ST(BPF_H, 10, -2, 0x8001), LDXSX(BPF_H, 0, 10, -2),
	  EXIT()),
	T("ldsx_s32", 0xffffffff80000000ull, ST(BPF_W, 10, -4, (int)0x80000000),
	  LDXSX(BPF_W, 0, 10, -4), EXIT()),
	T("stack_via_copy", 42, MOV64_REG(2, 10), ALU64_IMM(BPF_ADD, 2, -16), ST(BPF_DW, 2, 0, 42),
	  LDX(BPF_DW, 0, 10, -16), EXIT()),
	T("stack_bottom", 7, ST(BPF_DW, 10, -512, 7), LDX(BPF_DW, 0, 10, -512), EXIT()),
	/* atomics */
	T("atomic_add64", 15, ST(BPF_DW, 10, -8, 10), MOV64_IMM(1, 5),
	  ATOMIC(BPF_DW, 10, 1, -8, BPF_ADD), LDX(BPF_DW, 0, 10, -8), EXIT()),
	T("atomic_add32_wrap", 0, ST(BPF_W, 10, -4, -1), MOV64_IMM(1, 1),
	  ATOMIC(BPF_W, 10, 1, -4, BPF_ADD), LDX(BPF_W, 0, 10, -4), EXIT()),
	T("atomic_fetch_add64", 10, ST(BPF_DW, 10, -8, 10), MOV64_IMM(1, 5),
	  ATOMIC(BPF_DW, 10, 1, -8, BPF_ADD | BPF_FETCH), MOV64_REG(0, 1), EXIT()),
	T("atomic_fetch_or64", 0xff0f, ST(BPF_DW, 10, -8, 0x0f), MOV64_IMM(1, 0xf0),
	  ATOMIC(BPF_DW, 10, 1, -8, BPF_OR | BPF_FETCH), LDX(BPF_DW, 0, 10, -8),
	  ALU64_IMM(BPF_LSH, 0, 8), ALU64_REG(BPF_OR, 0, 1), EXIT()),
	T("atomic_fetch_and32_zext", 0xffffffffull, ST(BPF_W, 10, -4, -1), MOV64_IMM(1, -1),
	  ATOMIC(BPF_W, 10, 1, -4, BPF_AND | BPF_FETCH), MOV64_REG(0, 1), EXIT()),
	T("atomic_fetch_xor64", 0x0ff0, ST(BPF_DW, 10, -8, 0xff), MOV64_IMM(1, 0xf0f),
	  ATOMIC(BPF_DW, 10, 1, -8, BPF_XOR | BPF_FETCH), LDX(BPF_DW, 0, 10, -8), EXIT()),
	T("atomic_and64", 0x0f, ST(BPF_DW, 10, -8, 0xff), MOV64_IMM(1, 0x0f),
	  ATOMIC(BPF_DW, 10, 1, -8, BPF_AND), LDX(BPF_DW, 0, 10, -8), EXIT()),
	T("atomic_xchg", 0x907, ST(BPF_DW, 10, -8, 7), MOV64_IMM(1, 9),
	  ATOMIC(BPF_DW, 10, 1, -8, BPF_XCHG), LDX(BPF_DW, 0, 10, -8), ALU64_IMM(BPF_LSH, 0, 8),
	  ALU64_REG(BPF_OR, 0, 1), EXIT()),
	T("atomic_cmpxchg_hit", 0x805, ST(BPF_DW, 10, -8, 5), MOV64_IMM(0, 5), MOV64_IMM(1, 8),
	  ATOMIC(BPF_DW, 10, 1, -8, BPF_CMPXCHG), LDX(BPF_DW, 2, 10, -8), ALU64_IMM(BPF_LSH, 2, 8),
	  ALU64_REG(BPF_OR, 0, 2), EXIT()),
	T("atomic_cmpxchg_miss", 0x505, ST(BPF_DW, 10, -8, 5), MOV64_IMM(0, 4), MOV64_IMM(1, 8),
	  ATOMIC(BPF_DW, 10, 1, -8, BPF_CMPXCHG), LDX(BPF_DW, 2, 10, -8), ALU64_IMM(BPF_LSH, 2, 8),
	  ALU64_REG(BPF_OR, 0, 2), EXIT()),
	T("atomic_cmpxchg32_zext", 0xffffffffull, ST(BPF_W, 10, -4, -1), MOV64_IMM(0, -1),
	  MOV64_IMM(1, 3), ATOMIC(BPF_W, 10, 1, -4, BPF_CMPXCHG), EXIT()),
	/* control flow */
	T("ja", 1, MOV64_IMM(0, 1), JA(1), MOV64_IMM(0, 2), EXIT()),
	T("gotol", 1, MOV64_IMM(0, 1), GOTOL(1), MOV64_IMM(0, 2), EXIT()),
	T("jmp_over_ld_imm64", 3, MOV64_IMM(0, 3), JA(2), LD_IMM64(0, 9), EXIT()),
	T("loop_sum_1_to_10", 55, MOV64_IMM(0, 0), MOV64_IMM(1, 10), ALU64_REG(BPF_ADD, 0, 1),
	  ALU64_IMM(BPF_SUB, 1, 1), JMP_IMM(BPF_JNE, 1, 0, -3), EXIT()),
	T("bpf_to_bpf_call", 112, MOV64_IMM(1, 3), MOV64_IMM(2, 4), MOV64_IMM(6, 100), CALL_SUB(2),
	  ALU64_REG(BPF_ADD, 0, 6), EXIT(), MOV64_REG(0, 1), ALU64_REG(BPF_MUL, 0, 2),
	  MOV64_IMM(6, 1), EXIT()),
	T("call_own_stack", 0x2a0b, ST(BPF_DW, 10, -8, 42), MOV64_IMM(1, 11), CALL_SUB(4),
	  LDX(BPF_DW, 1, 10, -8), ALU64_IMM(BPF_LSH, 1, 8), ALU64_REG(BPF_OR, 0, 1), EXIT(),
	  ST(BPF_DW, 10, -8, 99), MOV64_REG(0, 1), EXIT()),
	T("nested_calls", 10, MOV64_IMM(1, 1), CALL_SUB(1), EXIT(), ALU64_IMM(BPF_ADD, 1, 2),
	  CALL_SUB(1), EXIT(), MOV64_REG(0, 1), ALU64_IMM(BPF_MUL, 0, 3), ALU64_IMM(BPF_ADD, 0, 1),
	  EXIT()),
	/* bpf_loop: sum of indices 0..4 into a stack slot; r0 = iterations*100 + sum */
	T("bpf_loop", 510, ST(BPF_DW, 10, -8, 0), MOV64_IMM(1, 5), LD_FUNC(2, 9), MOV64_REG(3, 10),
	  ALU64_IMM(BPF_ADD, 3, -8), MOV64_IMM(4, 0), CALL(181), ALU64_IMM(BPF_MUL, 0, 100),
	  LDX(BPF_DW, 1, 10, -8), ALU64_REG(BPF_ADD, 0, 1), EXIT(),
	  /* cb(i, ctx) */ LDX(BPF_DW, 3, 2, 0), ALU64_REG(BPF_ADD, 3, 1), STX(BPF_DW, 2, 3, 0),
	  MOV64_IMM(0, 0), EXIT()),
	T("bpf_loop_early_stop", 3, MOV64_IMM(1, 10), LD_FUNC(2, 5), MOV64_IMM(3, 0),
	  MOV64_IMM(4, 0), CALL(181), EXIT(),
	  /* cb: stop at i == 2 */ MOV64_IMM(0, 0), JMP_IMM(BPF_JNE, 1, 2, 1), MOV64_IMM(0, 1),
	  EXIT()),
	T("bpf_loop_bad_flags", (uint64_t)-22, MOV64_IMM(1, 10), LD_FUNC(2, 5), MOV64_IMM(3, 0),
	  MOV64_IMM(4, 1), CALL(181), EXIT(), MOV64_IMM(0, 0), EXIT()),
	/* context */
	T("ctx_read", 0x1234, LDX(BPF_DW, 0, 1, 16), EXIT()),
};

/* ---- generated jump cases: every op, JMP/JMP32, K/X, taken/not taken ---- */
static const int jops[] = { BPF_JEQ, BPF_JNE, BPF_JGT, BPF_JGE, BPF_JLT, BPF_JLE,
			    BPF_JSGT, BPF_JSGE, BPF_JSLT, BPF_JSLE, BPF_JSET };
static const char *jop_name(int op)
{
	switch (op) {
	case BPF_JEQ: return "jeq";
	case BPF_JNE: return "jne";
	case BPF_JGT: return "jgt";
	case BPF_JGE: return "jge";
	case BPF_JLT: return "jlt";
	case BPF_JLE: return "jle";
	case BPF_JSGT: return "jsgt";
	case BPF_JSGE: return "jsge";
	case BPF_JSLT: return "jslt";
	case BPF_JSLE: return "jsle";
	default: return "jset";
	}
}

static int jtaken(int op, uint64_t a, uint64_t b, int j32)
{
	if (j32)
		a = (uint32_t)a, b = (uint32_t)b;
	int64_t sa = j32 ? (int32_t)a : (int64_t)a, sb = j32 ? (int32_t)b : (int64_t)b;
	switch (op) {
	case BPF_JEQ: return a == b;
	case BPF_JNE: return a != b;
	case BPF_JGT: return a > b;
	case BPF_JGE: return a >= b;
	case BPF_JLT: return a < b;
	case BPF_JLE: return a <= b;
	case BPF_JSGT: return sa > sb;
	case BPF_JSGE: return sa >= sb;
	case BPF_JSLT: return sa < sb;
	case BPF_JSLE: return sa <= sb;
	default: return (a & b) != 0;
	}
}

/* Operand pairs: b must fit a sign-extended imm32 for the K forms. */
static const struct { uint64_t a; int32_t b; } jvals[] = {
	{ 5, 5 }, { 5, 6 }, { 0xffffffffffffffffull, 1 }, { 0x100000005ull, 5 },
	{ 0x80000000ull, -1 }, { 0xfffffffffffffffeull, -1 },
};

#define MAX_JCASES (GX_ARRAY_SIZE(jops) * 4 * GX_ARRAY_SIZE(jvals))
#define GX_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
static struct bpf_insn jinsns[MAX_JCASES][8];
static struct tcase jcases[MAX_JCASES];

static size_t gen_jump_cases(void)
{
	size_t n = 0;
	for (size_t o = 0; o < GX_ARRAY_SIZE(jops); o++)
		for (int form = 0; form < 4; form++)
			for (size_t v = 0; v < GX_ARRAY_SIZE(jvals); v++) {
				int j32 = form & 1, x = form & 2, op = jops[o];
				struct bpf_insn *p = jinsns[n];
				uint64_t a = jvals[v].a, b = (uint64_t)(int64_t)jvals[v].b;
				p[0] = INSN(MOV64_IMM(0, 0));
				struct bpf_insn ld[2] = { LD_IMM64(1, a) };
				p[1] = ld[0];
				p[2] = ld[1];
				p[3] = INSN(MOV64_IMM(2, jvals[v].b));
				if (x)
					p[4] = j32 ? INSN(JMP32_REG(op, 1, 2, 1)) : INSN(JMP_REG(op, 1, 2, 1));
				else
					p[4] = j32 ? INSN(JMP32_IMM(op, 1, jvals[v].b, 1))
						   : INSN(JMP_IMM(op, 1, jvals[v].b, 1));
				p[5] = INSN(EXIT());
				p[6] = INSN(MOV64_IMM(0, 1));
				p[7] = INSN(EXIT());
				snprintf(jcases[n].name, sizeof(jcases[n].name), "%s%s_%s_v%zu",
					 jop_name(op), j32 ? "32" : "", x ? "x" : "k", v);
				jcases[n].expect = (uint64_t)jtaken(op, a, b, j32);
				jcases[n].insns = p;
				jcases[n].n = 8;
				n++;
			}
	return n;
}

static struct gdev_ctx test_ctx = { .addr = 0x1234 };

typedef uint64_t (*prog64_fn)(void *ctx);

#include "tests/devbpf/interp_shim.h"

static void run_native_table(const struct tcase *cases, size_t n, const char *group)
{
	struct gx_jit_prog *progs = calloc(n, sizeof(*progs));
	char (*names)[64] = calloc(n, 64);
	for (size_t i = 0; i < n; i++) {
		snprintf(names[i], 64, "t_%s", cases[i].name);
		progs[i] = (struct gx_jit_prog){ .name = names[i], .insns = cases[i].insns,
						 .nr_insns = cases[i].n };
	}
	struct gx_jit_opts o = { .sz = sizeof(o), .target = GX_JIT_NATIVE, .ret64 = 1 };
	char err[256];
	struct gx_jit *j = gx_jit__new(progs, n, &o, err, sizeof(err));
	GX_CHECK(j != NULL, "%s: native JIT of %zu programs (%s)", group, n, j ? "ok" : err);
	if (j) {
		int interp_disagree = 0, interp_ran = 0;
		for (size_t i = 0; i < n; i++) {
			prog64_fn f = (prog64_fn)gx_jit__func(j, names[i]);
			uint64_t r = f ? f(&test_ctx) : 0xdeadull;
			GX_CHECK(f && r == cases[i].expect, "native %s = 0x%llx (expect 0x%llx)",
				 cases[i].name, (unsigned long long)r,
				 (unsigned long long)cases[i].expect);
			uint64_t ir;
			int rc = gx_test_interp(cases[i].insns, cases[i].n, &test_ctx, &ir);
			if (rc == 0) {
				interp_ran++;
				if (ir != r) {
					interp_disagree++;
					printf("# interp %s = 0x%llx, native 0x%llx\n", cases[i].name,
					       (unsigned long long)ir, (unsigned long long)r);
				}
			}
		}
		if (interp_ran)
			GX_CHECK(interp_disagree == 0, "%s: interpreter agrees with native JIT on %d programs",
				 group, interp_ran);
		else
			GX_CHECK(0, "%s: the interpreter ran none of the programs", group);
		gx_jit__free(j);
	}
	free(progs);
	free(names);
}

/* Compile cases to one PTX module, add a kernel calling every .func, and
 * assemble it with ptxas (whole program, so calls must resolve). */
static int ptx_fold; /* fold_geometry for ptx_table */
static void ptx_table(const struct tcase *cases, size_t n, const char *group,
		      const struct gx_jit_map *maps, size_t nr_maps)
{
	struct gx_jit_prog *progs = calloc(n, sizeof(*progs));
	char (*names)[64] = calloc(n, 64);
	for (size_t i = 0; i < n; i++) {
		snprintf(names[i], 64, "p_%s", cases[i].name);
		progs[i] = (struct gx_jit_prog){ .name = names[i], .insns = cases[i].insns,
						 .nr_insns = cases[i].n };
	}
	struct gx_jit_opts o = { .sz = sizeof(o), .target = GX_JIT_PTX, .maps = maps,
				 .nr_maps = nr_maps, .define_devrt = 1, .fold_geometry = ptx_fold };
	char err[256];
	struct gx_jit *j = gx_jit__new(progs, n, &o, err, sizeof(err));
	GX_CHECK(j != NULL, "%s: PTX JIT of %zu programs (%s)", group, n, j ? "ok" : err);
	if (!j)
		goto out;
	size_t len;
	const char *ptx = gx_jit__ptx(j, &len);
	int funcs_ok = 1;
	for (size_t i = 0; i < n; i++) {
		char pat[128];
		snprintf(pat, sizeof(pat), ".visible .func  (.param .b32 func_retval0) %s(", names[i]);
		if (!strstr(ptx, pat)) {
			printf("# missing: %s\n", pat);
			funcs_ok = 0;
		}
	}
	GX_CHECK(funcs_ok, "%s: one .visible .func (.param .b32) NAME(.param .b64) per program", group);
	GX_CHECK(strstr(ptx, ".target sm_90") && strstr(ptx, ".version 8.0"),
		 "%s: PTX targets sm_90, ISA 8.0", group);
	GX_CHECK(!strstr(ptx, "gx_h_"), "%s: helpers are inlined (no gx_h_ symbol left)", group);
	char path[] = "/tmp/gx_test_jit_XXXXXX.ptx";
	int fd = mkstemps(path, 4);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (f) {
		fwrite(ptx, 1, len, f);
		fprintf(f, "\n.visible .entry gx_test_kernel(.param .u64 ctxp)\n{\n"
			   "\t.reg .b32 %%r<2>;\n\t.reg .b64 %%rd<2>;\n"
			   "\tld.param.u64 %%rd1, [ctxp];\n");
		for (size_t i = 0; i < n; i++)
			fprintf(f, "\t{\n\t.param .b64 a0;\n\t.param .b32 r0;\n"
				   "\tst.param.b64 [a0], %%rd1;\n"
				   "\tcall.uni (r0), %s, (a0);\n\tld.param.b32 %%r1, [r0];\n\t}\n",
				names[i]);
		fprintf(f, "\tret;\n}\n");
		fclose(f);
		const char *ptxas = getenv("PTXAS") ? getenv("PTXAS") : "/usr/local/cuda/bin/ptxas";
		char cmd[1024];
		snprintf(cmd, sizeof(cmd), "%s -arch=sm_90 -o /dev/null %s 2>&1 | head -5", ptxas,
			 path);
		FILE *p = popen(cmd, "r");
		char out[1024] = "";
		size_t got = p ? fread(out, 1, sizeof(out) - 1, p) : 0;
		int rc = p ? pclose(p) : -1;
		out[got] = 0;
		GX_CHECK(rc == 0 && got == 0, "%s: ptxas -arch=sm_90 accepts the module with a kernel calling every func%s%s",
			 group, got ? ": " : "", out);
		unlink(path);
	} else {
		GX_CHECK(0, "%s: temp file for ptxas", group);
	}
	gx_jit__free(j);
out:
	free(progs);
	free(names);
}

/* ---- maps and helpers through the native JIT ---- */
struct drain_ctx {
	int *nprintk, *nprefetch;
	char *line;
	struct gx_rec_prefetch *pf;
};

static int drain_cb(void *ctx, unsigned type, const void *rec, size_t len)
{
	struct drain_ctx *dc = ctx;
	if (type == GX_REC_PRINTK && len == sizeof(struct gx_rec_printk)) {
		(*dc->nprintk)++;
		gx_printk_format(rec, dc->line, 128);
	} else if (type == GX_REC_PREFETCH && len == sizeof(struct gx_rec_prefetch)) {
		(*dc->nprefetch)++;
		memcpy(dc->pf, rec, sizeof(*dc->pf));
	}
	return 0;
}

static void test_maps_helpers(void)
{
	struct gx_map *arr, *hash, *gdata, *sm, *rb;
	struct gx_map_spec s_arr = { "counts", GX_MAP_ARRAY, 4, 8, 4, 0 };
	struct gx_map_spec s_hash = { "h", GX_MAP_HASH, 8, 8, 16, 0 };
	struct gx_map_spec s_gd = { "data", GX_MAP_ARRAY, 4, 32, 1, 0 };
	struct gx_map_spec s_sm = { "persm", GX_MAP_PERSM_ARRAY, 4, 8, 2, 4 };
	struct gx_map_spec s_rb = { "rb", GX_MAP_RINGBUF, 0, 0, 4096, 0 };
	int ok = !gx_map__create(&s_arr, 0, &arr) && !gx_map__create(&s_hash, 0, &hash) &&
		 !gx_map__create(&s_gd, 0, &gdata) && !gx_map__create(&s_sm, 0, &sm) &&
		 !gx_map__create(&s_rb, 0, &rb);
	GX_CHECK(ok, "host maps for helper tests");
	if (!ok)
		return;
	uint64_t *gd = gx_map__lookup(gdata, &(uint32_t){ 0 });
	gd[2] = 77;
	struct gx_jit_map maps[5] = {
		{ "counts", GX_MAP_ARRAY, 4, 8, 4, arr },
		{ "h", GX_MAP_HASH, 8, 8, 16, hash },
		{ "data", GX_MAP_ARRAY, 4, 32, 1, gdata },
		{ "persm", GX_MAP_PERSM_ARRAY, 4, 8, 2, sm },
		{ "rb", GX_MAP_RINGBUF, 0, 0, 4096, rb },
	};
	const struct tcase cases[] = {
		/* counts[1] += 5 via lookup; r0 = new value */
		T("array_inc", 5, ST(BPF_W, 10, -4, 1), LD_MAP(1, 0), MOV64_REG(2, 10),
		  ALU64_IMM(BPF_ADD, 2, -4), CALL(1), JMP_IMM(BPF_JEQ, 0, 0, 4), LDX(BPF_DW, 1, 0, 0),
		  ALU64_IMM(BPF_ADD, 1, 5), STX(BPF_DW, 0, 1, 0), MOV64_REG(0, 1), EXIT()),
		/* a subprogram returns the lookup of counts[2]; the caller
		 * checks it and adds 3 (r0 = new value) */
		T("subprog_lookup_inc", 3, MOV64_IMM(1, 2), CALL_SUB(6), JMP_IMM(BPF_JEQ, 0, 0, 4),
		  LDX(BPF_DW, 1, 0, 0), ALU64_IMM(BPF_ADD, 1, 3), STX(BPF_DW, 0, 1, 0), MOV64_REG(0, 1),
		  EXIT(), STX(BPF_W, 10, 1, -4), LD_MAP(1, 0), MOV64_REG(2, 10), ALU64_IMM(BPF_ADD, 2, -4),
		  CALL(1), EXIT()),
		/* out-of-range key: NULL */
		T("array_oob_null", 0, ST(BPF_W, 10, -4, 4), LD_MAP(1, 0), MOV64_REG(2, 10),
		  ALU64_IMM(BPF_ADD, 2, -4), CALL(1), EXIT()),
		/* h[kernel_id-like key 99] = 1234 then lookup */
		T("hash_update_lookup", 1234, ST(BPF_DW, 10, -8, 99), ST(BPF_DW, 10, -16, 1234),
		  LD_MAP(1, 1), MOV64_REG(2, 10), ALU64_IMM(BPF_ADD, 2, -8), MOV64_REG(3, 10),
		  ALU64_IMM(BPF_ADD, 3, -16), MOV64_IMM(4, 0), CALL(2), LD_MAP(1, 1), MOV64_REG(2, 10),
		  ALU64_IMM(BPF_ADD, 2, -8), CALL(1), JMP_IMM(BPF_JEQ, 0, 0, 1), LDX(BPF_DW, 0, 0, 0),
		  EXIT()),
		/* NOEXIST on an existing key: -EEXIST */
		T("hash_noexist", (uint64_t)-17, ST(BPF_DW, 10, -8, 99), ST(BPF_DW, 10, -16, 1),
		  LD_MAP(1, 1), MOV64_REG(2, 10), ALU64_IMM(BPF_ADD, 2, -8), MOV64_REG(3, 10),
		  ALU64_IMM(BPF_ADD, 3, -16), MOV64_IMM(4, 1), CALL(2), EXIT()),
		/* delete twice: 0 then -ENOENT -> r0 = (first << 8) | (-second) */
		T("hash_delete", 2, ST(BPF_DW, 10, -8, 99), LD_MAP(1, 1), MOV64_REG(2, 10),
		  ALU64_IMM(BPF_ADD, 2, -8), CALL(3), MOV64_REG(6, 0), LD_MAP(1, 1), MOV64_REG(2, 10),
		  ALU64_IMM(BPF_ADD, 2, -8), CALL(3), ALU64_IMM(BPF_NEG, 0, 0), ALU64_IMM(BPF_LSH, 6, 8),
		  ALU64_REG(BPF_OR, 0, 6), EXIT()),
		/* direct value access (global data) */
		T("map_value_direct", 77, LD_MAP_VALUE(1, 2, 16), LDX(BPF_DW, 0, 1, 0), EXIT()),
		/* helpers reading the host env */
		T("helper_smid", 7, CALL(0x1001), EXIT()),
		T("helper_block_idx_y", 3, MOV64_IMM(1, 1), CALL(0x1004), EXIT()),
		T("helper_thread_idx_bad_dim", 0, MOV64_IMM(1, 5), CALL(0x1005), EXIT()),
		T("helper_ktime_nonzero", 1, CALL(5), JMP_IMM(BPF_JEQ, 0, 0, 1), MOV64_IMM(0, 1), EXIT()),
		/* per-SM shard: lookup hits shard smid % 4 = 3 */
		T("persm_shard_inc", 1, ST(BPF_W, 10, -4, 1), LD_MAP(1, 3), MOV64_REG(2, 10),
		  ALU64_IMM(BPF_ADD, 2, -4), CALL(1), JMP_IMM(BPF_JEQ, 0, 0, 3), MOV64_IMM(1, 1),
		  ATOMIC(BPF_DW, 0, 1, 0, BPF_ADD), LDX(BPF_DW, 0, 0, 0), EXIT()),
		/* ringbuf output of 12 bytes from the stack */
		T("ringbuf_output", 0, ST(BPF_DW, 10, -16, 0x41424344), ST(BPF_W, 10, -8, 0x45),
		  LD_MAP(1, 4), MOV64_REG(2, 10), ALU64_IMM(BPF_ADD, 2, -16), MOV64_IMM(3, 12),
		  MOV64_IMM(4, 0), CALL(130), EXIT()),
		/* printk through the runtime ring: fmt in global data */
		T("printk", 11, LD_MAP_VALUE(1, 2, 0), MOV64_IMM(2, 16), MOV64_IMM(3, 42),
		  MOV64_IMM(4, -1), MOV64_IMM(5, 255), CALL(0x1008), EXIT()),
		/* mem_prefetch request record */
		T("mem_prefetch", 0, LD_IMM64(1, 0x7f0000001000ull), MOV64_IMM(2, 4096), CALL(0x1006),
		  EXIT()),
	};
	memcpy(gd, "v=%d %ld %x", 12); /* printk's fmt: bytes 0..11; gd[2] stays 77 */
	size_t n = GX_ARRAY_SIZE(cases);
	gx_host_env.smid = 7;
	gx_host_env.block_idx[1] = 3;
	static _Alignas(64) unsigned char ringmem[sizeof(struct gx_ring) + 4096];
	struct gx_ring *rt = (struct gx_ring *)ringmem;
	gx_ring__init(rt, 4096);
	gx_host_ring = rt;

	struct gx_jit_prog *progs = calloc(n, sizeof(*progs));
	for (size_t i = 0; i < n; i++)
		progs[i] = (struct gx_jit_prog){ .name = cases[i].name, .insns = cases[i].insns,
						 .nr_insns = cases[i].n };
	struct gx_jit_opts o = { .sz = sizeof(o), .target = GX_JIT_NATIVE, .ret64 = 1, .maps = maps,
				 .nr_maps = 5 };
	char err[256];
	struct gx_jit *j = gx_jit__new(progs, n, &o, err, sizeof(err));
	GX_CHECK(j != NULL, "maps/helpers: native JIT (%s)", j ? "ok" : err);
	if (j) {
		for (size_t i = 0; i < n; i++) {
			prog64_fn f = (prog64_fn)gx_jit__func(j, cases[i].name);
			uint64_t r = f ? f(&test_ctx) : 0xdead;
			GX_CHECK(r == cases[i].expect, "native %s = 0x%llx (expect 0x%llx)", cases[i].name,
				 (unsigned long long)r, (unsigned long long)cases[i].expect);
		}
		prog64_fn inc = (prog64_fn)gx_jit__func(j, "array_inc");
		uint64_t second = inc ? inc(&test_ctx) : 0;
		GX_CHECK(second == 10 && *(uint64_t *)gx_map__lookup(arr, &(uint32_t){ 1 }) == 10,
			 "array map keeps state across runs and the host sees it");
		GX_CHECK(*(uint64_t *)gx_map__lookup(arr, &(uint32_t){ 2 }) == 3,
			 "the caller wrote through the value pointer its subprogram returned");
		uint64_t merged = 0;
		gx_map__merged_u64(sm, 1, &merged);
		GX_CHECK(*(uint64_t *)gx_map__shard_elem(sm, 3, 1) == 1 && merged == 1 &&
				 *(uint64_t *)gx_map__shard_elem(sm, 0, 1) == 0,
			 "per-SM array: only shard smid%%nr_shards written, merged view sums");
		long nrec = gx_ring__drain(gx_map__ring(rb), NULL, NULL);
		GX_CHECK(nrec == 1, "ringbuf map holds the one output record (%ld)", nrec);
		int nprintk = 0, nprefetch = 0;
		char line[128] = "";
		struct gx_rec_prefetch pf = { 0 };
		struct drain_ctx dc = { &nprintk, &nprefetch, line, &pf };
		long nr = gx_ring__drain(rt, drain_cb, &dc);
		GX_CHECK(nr == 2 && nprintk == 1 && nprefetch == 1, "runtime ring: one printk, one prefetch record");
		GX_CHECK(!strcmp(line, "v=42 -1 ff"), "printk formats '%s'", line);
		GX_CHECK(pf.addr == 0x7f0000001000ull && pf.len == 4096 && pf.smid == 7,
			 "prefetch record carries addr/len/smid");
		gx_jit__free(j);
	}
	/* Same programs to PTX: maps through __gx_devrt, helpers inlined. */
	ptx_table(cases, n, "maps/helpers", maps, 5);
	gx_host_ring = NULL;
	free(progs);
	gx_map__free(arr);
	gx_map__free(hash);
	gx_map__free(gdata);
	gx_map__free(sm);
	gx_map__free(rb);
}

/* ---- externs: host callables and kfuncs for host-side policies ---- */
static unsigned long long ext_add(unsigned long long a, unsigned long long b, unsigned long long c,
				  unsigned long long d, unsigned long long e)
{
	(void)c, (void)d, (void)e;
	return a + b * 1000;
}
static unsigned long long ext_k(unsigned long long a, unsigned long long b, unsigned long long c,
				unsigned long long d, unsigned long long e)
{
	(void)b, (void)c, (void)d, (void)e;
	return a * 2;
}

/* GX_JIT_FOLD: an array lookup of a known map takes max_entries and the
 * value stride as immediates; the storage address and shard count are still
 * read from __gx_devrt. The folded and the plain module both pass ptxas, and
 * the host forms of the folded helpers find the same elements. */
static void test_fold_geometry(void)
{
	struct tcase cases[] = {
		/* counts[1] of a 4 x 24-byte array, counts[0] of a per-warp array */
		T("fold_array", 0, ST(BPF_W, 10, -4, 1), LD_MAP(1, 0), MOV64_REG(2, 10),
		  ALU64_IMM(BPF_ADD, 2, -4), CALL(1), JMP_IMM(BPF_JEQ, 0, 0, 1), LDX(BPF_DW, 0, 0, 0), EXIT()),
		T("fold_perwarp", 0, ST(BPF_W, 10, -4, 0), LD_MAP(1, 1), MOV64_REG(2, 10),
		  ALU64_IMM(BPF_ADD, 2, -4), CALL(1), JMP_IMM(BPF_JEQ, 0, 0, 3), MOV64_IMM(1, 1),
		  ATOMIC(BPF_DW, 0, 1, 0, BPF_ADD), MOV64_IMM(0, 0), EXIT()),
	};
	struct gx_jit_map maps[2] = {
		{ "counts", GX_MAP_ARRAY, 4, 20, 4, NULL },
		{ "th", GX_MAP_PERWARP_ARRAY, 4, 24, 1, NULL },
	};
	struct gx_jit_prog progs[2];
	for (size_t i = 0; i < 2; i++)
		progs[i] = (struct gx_jit_prog){ .name = cases[i].name, .insns = cases[i].insns, .nr_insns = cases[i].n };
	char pat[4][64];
	size_t offs[4] = { offsetof(struct gx_devrt, maps[0].max_entries), offsetof(struct gx_devrt, maps[0].value_stride),
			   offsetof(struct gx_devrt, maps[1].max_entries), offsetof(struct gx_devrt, maps[1].value_stride) };
	for (int i = 0; i < 4; i++)
		snprintf(pat[i], sizeof(pat[i]), "[__gx_devrt+%zu]", offs[i]);
	char data1[64];
	snprintf(data1, sizeof(data1), "[__gx_devrt+%zu]", offsetof(struct gx_devrt, maps[1].data));
	for (int fold = 0; fold < 2; fold++) {
		struct gx_jit_opts o = { .sz = sizeof(o), .target = GX_JIT_PTX, .maps = maps, .nr_maps = 2,
					 .define_devrt = 1, .fold_geometry = fold };
		char err[256];
		struct gx_jit *j = gx_jit__new(progs, 2, &o, err, sizeof(err));
		GX_CHECK(j != NULL, "fold %d: PTX JIT (%s)", fold, j ? "ok" : err);
		if (!j)
			continue;
		const char *ptx = gx_jit__ptx(j, NULL);
		int geom = 0;
		for (int i = 0; i < 4; i++)
			geom += strstr(ptx, pat[i]) != NULL;
		if (fold)
			GX_CHECK(geom == 0 && strstr(ptx, data1) && strstr(ptx, ", 24;"),
				 "fold: no max_entries/stride loads (%d), data still read, stride 24 an immediate", geom);
		else
			GX_CHECK(geom == 4, "no fold: max_entries and stride read from __gx_devrt (%d of 4)", geom);
		gx_jit__free(j);
	}
	struct gx_map *arr, *pw;
	struct gx_map_spec s_arr = { "counts", GX_MAP_ARRAY, 4, 20, 4, 0 };
	struct gx_map_spec s_pw = { "th", GX_MAP_PERWARP_ARRAY, 4, 24, 1, 3 };
	if (gx_map__create(&s_arr, 0, &arr) || gx_map__create(&s_pw, 0, &pw)) {
		GX_CHECK(0, "fold: host maps");
		return;
	}
	int same = 1;
	gx_host_env.smid = 0;
	for (uint32_t k = 0; k < 6; k++) {
		uint64_t key = (uint64_t)(uintptr_t)&k;
		same &= gx_h_map_lookup_elem__array_k((uint64_t)(uintptr_t)arr, key, 4, 24, 0) ==
			gx_h_map_lookup_elem__array((uint64_t)(uintptr_t)arr, key, 0, 0, 0);
		gx_host_env.warpid = k; /* shards 0..2, then out of range folds back */
		same &= gx_h_map_lookup_elem__perwarp_k((uint64_t)(uintptr_t)pw, key, 1, 24, 0) ==
			gx_h_map_lookup_elem__perwarp((uint64_t)(uintptr_t)pw, key, 0, 0, 0);
	}
	gx_host_env.warpid = 0;
	GX_CHECK(same, "folded host lookups find the elements the plain ones do (in range and out)");
	gx_map__free(arr);
	gx_map__free(pw);
	ptx_fold = 1;
	ptx_table(cases, 2, "folded geometry", maps, 2);
	ptx_fold = 0;
}

static void test_externs(void)
{
	const struct bpf_insn prog[] = {
		MOV64_IMM(1, 3), MOV64_IMM(2, 4), CALL(7777), MOV64_REG(6, 0), MOV64_IMM(1, 21),
		I(BPF_JMP | BPF_CALL, 0, BPF_PSEUDO_KFUNC_CALL, 0, 555), ALU64_REG(BPF_ADD, 0, 6),
		EXIT(),
	};
	const struct gx_jit_extern ext[] = { { 0, 7777, "host_add", ext_add }, { 1, 555, "bpf_test_kfunc", ext_k } };
	struct gx_jit_prog p = { .name = "ext", .insns = prog, .nr_insns = GX_ARRAY_SIZE(prog) };
	struct gx_jit_opts o = { .sz = sizeof(o), .target = GX_JIT_NATIVE, .ret64 = 1,
				 .externs = ext, .nr_externs = 2 };
	char err[256] = "";
	struct gx_jit *j = gx_jit__new(&p, 1, &o, err, sizeof(err));
	prog64_fn f = j ? (prog64_fn)gx_jit__func(j, "ext") : NULL;
	uint64_t r = f ? f(&test_ctx) : 0;
	GX_CHECK(r == 4003 + 42, "native externs: a helper id and a kfunc call host functions (%llu, %s)",
		 (unsigned long long)r, err);
	gx_jit__free(j);
	o.nr_externs = 1;
	j = gx_jit__new(&p, 1, &o, err, sizeof(err));
	GX_CHECK(!j && !strcmp(err, "prog ext insn 5: kfunc 555 is not provided"),
		 "missing kfunc: '%s'", err);
	o.target = GX_JIT_PTX;
	GX_CHECK(!gx_jit__new(&p, 1, &o, err, sizeof(err)) &&
			 !strcmp(err, "externs are available to the native target only"),
		 "externs refused for PTX");
}

/* ---- bad programs: stable messages, no crash ---- */
static void test_errors(void)
{
	const struct tcase bad[] = {
		T("falls_off_end", 0, MOV64_IMM(0, 0)),
		T("jump_out_of_range", 0, JA(5), EXIT()),
		T("jump_into_ld_imm64", 0, JA(1), LD_IMM64(0, 1), EXIT()),
		T("unknown_helper", 0, CALL(9999), EXIT()),
		T("bad_map_index", 0, LD_MAP(1, 3), EXIT()),
		T("bad_endian", 0, ENDIAN(BPF_TO_BE, 0, 24), EXIT()),
		T("write_r10", 0, MOV64_IMM(10, 0), EXIT()),
		T("bad_opcode", 0, I(0xff, 0, 0, 0, 0), EXIT()),
		T("legacy_ld_abs", 0, I(BPF_LD | BPF_ABS | BPF_W, 0, 0, 0, 0), EXIT()),
		T("call_out_of_range", 0, CALL_SUB(10), EXIT()),
		T("incomplete_ld_imm64", 0, EXIT(), I(BPF_LD | BPF_DW | BPF_IMM, 0, 0, 0, 0)),
	};
	static const char *want[] = {
		"prog falls_off_end insn 0: last instruction falls through",
		"prog jump_out_of_range insn 0: jump out of range (to 6)",
		"prog jump_into_ld_imm64 insn 0: jump into the middle of ld_imm64",
		"prog unknown_helper insn 0: unknown helper 9999",
		"prog bad_map_index insn 0: map index 3 out of range (0 maps)",
		"prog bad_endian insn 0: invalid endian immediate 24",
		"prog write_r10 insn 0: cannot write r10",
		"prog bad_opcode insn 0: unknown ALU opcode 0xff",
		"prog legacy_ld_abs insn 0: legacy packet access is not supported",
		"prog call_out_of_range insn 0: call target 11 out of range",
		"prog incomplete_ld_imm64 insn 1: incomplete ld_imm64",
	};
	for (size_t i = 0; i < GX_ARRAY_SIZE(bad); i++) {
		for (int tgt = GX_JIT_PTX; tgt <= GX_JIT_NATIVE; tgt++) {
			struct gx_jit_prog p = { .name = bad[i].name, .insns = bad[i].insns,
						 .nr_insns = bad[i].n };
			struct gx_jit_opts o = { .sz = sizeof(o), .target = tgt };
			char err[256] = "";
			struct gx_jit *j = gx_jit__new(&p, 1, &o, err, sizeof(err));
			GX_CHECK(!j && !strcmp(err, want[i]), "%s rejected (%s): '%s'", bad[i].name,
				 tgt == GX_JIT_PTX ? "ptx" : "native", err);
			gx_jit__free(j);
		}
	}
	struct gx_jit_prog p = { .name = "bad-name", .insns = alu_cases[0].insns, .nr_insns = 2 };
	struct gx_jit_opts o = { .sz = sizeof(o), .target = GX_JIT_PTX };
	char err[256] = "";
	GX_CHECK(!gx_jit__new(&p, 1, &o, err, sizeof(err)) &&
			 !strcmp(err, "prog bad-name: invalid function name 'bad-name'"),
		 "invalid PTX identifier rejected: '%s'", err);
	struct { struct gx_jit_opts o; char tail[8]; } big = { .o = { .sz = sizeof(big), .target = GX_JIT_PTX }, .tail = { 1 } };
	p.name = "ok";
	GX_CHECK(!gx_jit__new(&p, 1, &big.o, err, sizeof(err)) &&
			 !strcmp(err, "unknown options (non-zero tail)"),
		 "options with a non-zero unknown tail rejected");
}

/* ---- JIT time of a realistic policy (map lookup + atomic + branch) ---- */
static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void test_jit_time(void)
{
	static const struct bpf_insn pol[] = {
		LDX(BPF_W, 2, 1, 96), /* smid */
		STX(BPF_W, 10, 2, -4), LD_MAP(1, 0), MOV64_REG(2, 10), ALU64_IMM(BPF_ADD, 2, -4),
		CALL(1), JMP_IMM(BPF_JEQ, 0, 0, 2), MOV64_IMM(1, 1), ATOMIC(BPF_DW, 0, 1, 0, BPF_ADD),
		MOV64_IMM(0, 0), EXIT(),
	};
	struct gx_map *m;
	struct gx_map_spec s = { "cnt", GX_MAP_ARRAY, 4, 8, 256, 0 };
	if (gx_map__create(&s, 0, &m)) {
		GX_CHECK(0, "map for timing");
		return;
	}
	struct gx_jit_map jm = { "cnt", GX_MAP_ARRAY, 4, 8, 256, m };
	for (int tgt = GX_JIT_PTX; tgt <= GX_JIT_NATIVE; tgt++) {
		double ms[7], cpu[7];
		int fails = 0;
		for (int k = 0; k < 7; k++) {
			struct gx_jit_prog p = { .name = "count_by_sm", .insns = pol,
						 .nr_insns = GX_ARRAY_SIZE(pol) };
			struct gx_jit_opts o = { .sz = sizeof(o), .target = tgt, .maps = &jm, .nr_maps = 1 };
			struct gx_jit *j = gx_jit__new(&p, 1, &o, NULL, 0);
			ms[k] = j ? gx_jit__time_ms(j) : 1e9;
			cpu[k] = j ? gx_jit__cpu_ms(j) : 1e9;
			fails += !j;
			gx_jit__free(j);
		}
		qsort(ms, 7, sizeof(double), cmp_d);
		qsort(cpu, 7, sizeof(double), cmp_d);
		printf("# jit time %s: wall min %.2f / median %.2f / max %.2f ms, cpu median %.2f ms\n",
		       tgt == GX_JIT_PTX ? "ptx" : "native", ms[0], ms[3], ms[6], cpu[3]);
		/* the minimum: this machine is shared, the median is printed above */
		GX_CHECK(!fails && ms[0] <= 50.0, "JIT time per policy (%s) %.2f ms <= 50 ms",
			 tgt == GX_JIT_PTX ? "ptx" : "native", ms[0]);
	}
	gx_map__free(m);
}

/* The ALU table shared with the interpreter's tests (tests/devbpf/alu_table.h), as tcases. */
#include "tests/devbpf/alu_table.h"
static struct tcase shared_cases[sizeof(gx_alu_cases) / sizeof(gx_alu_cases[0])];
static size_t load_shared_cases(void)
{
	size_t n = sizeof(gx_alu_cases) / sizeof(gx_alu_cases[0]);
	for (size_t i = 0; i < n; i++) {
		snprintf(shared_cases[i].name, sizeof(shared_cases[i].name), "s%zu", i);
		shared_cases[i].expect = gx_alu_cases[i].expect;
		shared_cases[i].insns = gx_alu_cases[i].insns;
		shared_cases[i].n = gx_alu_case_len(&gx_alu_cases[i]);
	}
	return n;
}

int main(void)
{
	size_t nj = gen_jump_cases(), ns = load_shared_cases();
	run_native_table(shared_cases, ns, "shared table");
	ptx_table(shared_cases, ns, "shared table", NULL, 0);
	run_native_table(alu_cases, GX_ARRAY_SIZE(alu_cases), "alu/mem/calls");
	run_native_table(jcases, nj, "jumps");
	ptx_table(alu_cases, GX_ARRAY_SIZE(alu_cases), "alu/mem/calls", NULL, 0);
	ptx_table(jcases, nj, "jumps", NULL, 0);
	test_maps_helpers();
	test_fold_geometry();
	test_errors();
	test_externs();
	test_jit_time();
	return gx_test_done();
}
