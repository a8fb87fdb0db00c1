/* bpf_insn_macros.h — instruction builders for table tests (the shape of the
 * kernel's filter.h macros, written for our tests). */
#ifndef GX_TEST_BPF_INSN_MACROS_H
#define GX_TEST_BPF_INSN_MACROS_H

#include "common/gx_bpf_isa.h"

#define I(CODE, DST, SRC, OFF, IMM) \
	{ .code = (CODE), .dst_reg = (DST), .src_reg = (SRC), .off = (OFF), .imm = (IMM) }
/* As an expression (assignments): INSN(MOV64_IMM(0, 1)). */
#define INSN(...) ((struct bpf_insn)__VA_ARGS__)
#define ALU64_IMM(OP, D, IMM) I(BPF_ALU64 | BPF_OP(OP) | BPF_K, D, 0, 0, IMM)
#define ALU64_REG(OP, D, S) I(BPF_ALU64 | BPF_OP(OP) | BPF_X, D, S, 0, 0)
#define ALU32_IMM(OP, D, IMM) I(BPF_ALU | BPF_OP(OP) | BPF_K, D, 0, 0, IMM)
#define ALU32_REG(OP, D, S) I(BPF_ALU | BPF_OP(OP) | BPF_X, D, S, 0, 0)
#define SDIV64_REG(OP, D, S) I(BPF_ALU64 | BPF_OP(OP) | BPF_X, D, S, 1, 0)
#define SDIV32_REG(OP, D, S) I(BPF_ALU | BPF_OP(OP) | BPF_X, D, S, 1, 0)
#define MOV64_IMM(D, IMM) ALU64_IMM(BPF_MOV, D, IMM)
#define MOV64_REG(D, S) ALU64_REG(BPF_MOV, D, S)
#define MOV32_IMM(D, IMM) ALU32_IMM(BPF_MOV, D, IMM)
#define MOVSX64(D, S, BITS) I(BPF_ALU64 | BPF_MOV | BPF_X, D, S, BITS, 0)
#define MOVSX32(D, S, BITS) I(BPF_ALU | BPF_MOV | BPF_X, D, S, BITS, 0)
#define LD_IMM64_RAW(D, SRC, LO, HI) \
	I(BPF_LD | BPF_DW | BPF_IMM, D, SRC, 0, (int)(LO)), I(0, 0, 0, 0, (int)(HI))
#define LD_IMM64(D, V) LD_IMM64_RAW(D, 0, (unsigned long long)(V) & 0xffffffffu, \
				     (unsigned long long)(V) >> 32)
#define LD_MAP(D, IDX) LD_IMM64_RAW(D, BPF_PSEUDO_MAP_FD, IDX, 0)
#define LD_MAP_VALUE(D, IDX, OFF) LD_IMM64_RAW(D, BPF_PSEUDO_MAP_VALUE, IDX, OFF)
#define LD_FUNC(D, REL) LD_IMM64_RAW(D, BPF_PSEUDO_FUNC, REL, 0)
#define LDX(SZ, D, S, OFF) I(BPF_LDX | BPF_SIZE(SZ) | BPF_MEM, D, S, OFF, 0)
#define LDXSX(SZ, D, S, OFF) I(BPF_LDX | BPF_SIZE(SZ) | BPF_MEMSX, D, S, OFF, 0)
#define STX(SZ, D, S, OFF) I(BPF_STX | BPF_SIZE(SZ) | BPF_MEM, D, S, OFF, 0)
#define ST(SZ, D, OFF, IMM) I(BPF_ST | BPF_SIZE(SZ) | BPF_MEM, D, 0, OFF, IMM)
#define ATOMIC(SZ, D, S, OFF, OP) I(BPF_STX | BPF_SIZE(SZ) | BPF_ATOMIC, D, S, OFF, OP)
#define JMP_IMM(OP, D, IMM, OFF) I(BPF_JMP | BPF_OP(OP) | BPF_K, D, 0, OFF, IMM)
#define JMP_REG(OP, D, S, OFF) I(BPF_JMP | BPF_OP(OP) | BPF_X, D, S, OFF, 0)
#define JMP32_IMM(OP, D, IMM, OFF) I(BPF_JMP32 | BPF_OP(OP) | BPF_K, D, 0, OFF, IMM)
#define JMP32_REG(OP, D, S, OFF) I(BPF_JMP32 | BPF_OP(OP) | BPF_X, D, S, OFF, 0)
#define JA(OFF) I(BPF_JMP | BPF_JA, 0, 0, OFF, 0)
#define GOTOL(IMM) I(BPF_JMP32 | BPF_JA, 0, 0, 0, IMM)
#define ENDIAN(SRC, D, BITS) I(BPF_ALU | BPF_END | (SRC), D, 0, 0, BITS)
#define BSWAP(D, BITS) I(BPF_ALU64 | BPF_END, D, 0, 0, BITS)
#define CALL(ID) I(BPF_JMP | BPF_CALL, 0, 0, 0, ID)
#define CALL_SUB(REL) I(BPF_JMP | BPF_CALL, 0, BPF_PSEUDO_CALL, 0, REL)
#define EXIT() I(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)

#endif
