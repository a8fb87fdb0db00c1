/* bpf_insn.h — instruction builders for hand-written test programs (the
 * kernel's filter.h macros are not in the uapi headers). Shared by the
 * interpreter tests and the JIT's differential tests. */
#ifndef GX_TEST_BPF_INSN_H
#define GX_TEST_BPF_INSN_H

#include "common/gx_bpf_isa.h"
#include <stdint.h>

#define GX_INSN(c, d, s, o, i) \
	((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i) })

#define GX_ALU64_IMM(op, d, i) GX_INSN(BPF_ALU64 | (op) | BPF_K, d, 0, 0, i)
#define GX_ALU64_REG(op, d, s) GX_INSN(BPF_ALU64 | (op) | BPF_X, d, s, 0, 0)
#define GX_ALU32_IMM(op, d, i) GX_INSN(BPF_ALU | (op) | BPF_K, d, 0, 0, i)
#define GX_ALU32_REG(op, d, s) GX_INSN(BPF_ALU | (op) | BPF_X, d, s, 0, 0)
/* signed division/modulo (cpu v4: off = 1) */
#define GX_SALU64_IMM(op, d, i) GX_INSN(BPF_ALU64 | (op) | BPF_K, d, 0, 1, i)
#define GX_SALU64_REG(op, d, s) GX_INSN(BPF_ALU64 | (op) | BPF_X, d, s, 1, 0)
#define GX_SALU32_IMM(op, d, i) GX_INSN(BPF_ALU | (op) | BPF_K, d, 0, 1, i)
#define GX_SALU32_REG(op, d, s) GX_INSN(BPF_ALU | (op) | BPF_X, d, s, 1, 0)
#define GX_MOV64_IMM(d, i) GX_ALU64_IMM(BPF_MOV, d, i)
#define GX_MOV64_REG(d, s) GX_ALU64_REG(BPF_MOV, d, s)
#define GX_MOV32_IMM(d, i) GX_ALU32_IMM(BPF_MOV, d, i)
#define GX_MOV32_REG(d, s) GX_ALU32_REG(BPF_MOV, d, s)
/* sign-extending moves (cpu v4): bits = 8, 16, 32 (32 only for 64-bit) */
#define GX_MOVSX64(d, s, bits) GX_INSN(BPF_ALU64 | BPF_MOV | BPF_X, d, s, bits, 0)
#define GX_MOVSX32(d, s, bits) GX_INSN(BPF_ALU | BPF_MOV | BPF_X, d, s, bits, 0)
#define GX_NEG64(d) GX_INSN(BPF_ALU64 | BPF_NEG | BPF_K, d, 0, 0, 0)
#define GX_NEG32(d) GX_INSN(BPF_ALU | BPF_NEG | BPF_K, d, 0, 0, 0)
/* byte order: to_le / to_be (ALU), unconditional bswap (ALU64) */
#define GX_LE(d, bits) GX_INSN(BPF_ALU | BPF_END | BPF_TO_LE, d, 0, 0, bits)
#define GX_BE(d, bits) GX_INSN(BPF_ALU | BPF_END | BPF_TO_BE, d, 0, 0, bits)
#define GX_BSWAP(d, bits) GX_INSN(BPF_ALU64 | BPF_END | BPF_TO_LE, d, 0, 0, bits)

#define GX_LD_IMM64_RAW(d, s, lo, hi) \
	GX_INSN(BPF_LD | BPF_DW | BPF_IMM, d, s, 0, (int32_t)(lo)), GX_INSN(0, 0, 0, 0, (int32_t)(hi))
#define GX_LD_IMM64(d, v) \
	GX_LD_IMM64_RAW(d, 0, (uint32_t)(uint64_t)(v), (uint32_t)((uint64_t)(v) >> 32))
#define GX_LD_MAP(d, idx) GX_LD_IMM64_RAW(d, BPF_PSEUDO_MAP_IDX, idx, 0)
#define GX_LD_MAP_VALUE(d, idx, off) GX_LD_IMM64_RAW(d, BPF_PSEUDO_MAP_IDX_VALUE, idx, off)

#define GX_LDX(sz, d, s, o) GX_INSN(BPF_LDX | BPF_MEM | (sz), d, s, o, 0)
#define GX_LDXSX(sz, d, s, o) GX_INSN(BPF_LDX | BPF_MEMSX | (sz), d, s, o, 0)
#define GX_STX(sz, d, s, o) GX_INSN(BPF_STX | BPF_MEM | (sz), d, s, o, 0)
#define GX_ST(sz, d, o, i) GX_INSN(BPF_ST | BPF_MEM | (sz), d, 0, o, i)
#define GX_ATOMIC(sz, op, d, s, o) GX_INSN(BPF_STX | BPF_ATOMIC | (sz), d, s, o, op)

#define GX_JMP_IMM(op, d, i, o) GX_INSN(BPF_JMP | (op) | BPF_K, d, 0, o, i)
#define GX_JMP_REG(op, d, s, o) GX_INSN(BPF_JMP | (op) | BPF_X, d, s, o, 0)
#define GX_JMP32_IMM(op, d, i, o) GX_INSN(BPF_JMP32 | (op) | BPF_K, d, 0, o, i)
#define GX_JMP32_REG(op, d, s, o) GX_INSN(BPF_JMP32 | (op) | BPF_X, d, s, o, 0)
#define GX_JA(o) GX_INSN(BPF_JMP | BPF_JA, 0, 0, o, 0)
#define GX_JA32(i) GX_INSN(BPF_JMP32 | BPF_JA, 0, 0, 0, i) /* gotol */
#define GX_CALL_HELPER(id) GX_INSN(BPF_JMP | BPF_CALL, 0, 0, 0, id)
#define GX_CALL_REL(i) GX_INSN(BPF_JMP | BPF_CALL, 0, BPF_PSEUDO_CALL, 0, i)
#define GX_EXIT() GX_INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)

#endif
