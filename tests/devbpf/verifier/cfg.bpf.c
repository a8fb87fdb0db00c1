/* Structure: well-formed instructions, jumps in range, no fall-through off
 * the end, no unreachable code, registers initialised, r0 set, a scalar
 * return value in the hook's range. Written in assembly so the compiler
 * cannot tidy the mistakes away. */
#include "gx_test_bpf.h"

SEC("gdev/probe/k") __description("invalid opcode") __failure __msg("invalid opcode 0xff")
__naked int cfg_bad_opcode(void)
{
	asm volatile("r0 = 0; .8byte 0x00000000000000ff; exit;" ::: __clobber_all);
}

SEC("gdev/probe/k") __description("may_goto (JCOND) is not an instruction we accept") __failure __msg("invalid opcode 0xe5")
__naked int cfg_may_goto(void)
{
	asm volatile("r0 = 0; .8byte 0x00000000000000e5; exit;" ::: __clobber_all);
}

SEC("gdev/probe/k") __description("jump out of range") __failure __msg("jump out of range")
__naked int cfg_jump_oob(void)
{
	asm volatile("r0 = 0; goto +5; exit;" ::: __clobber_all);
}

SEC("gdev/probe/k") __description("backward jump before the start") __failure __msg("jump out of range")
__naked int cfg_jump_before(void)
{
	asm volatile("r0 = 0; if r0 == 0 goto -5; exit;" ::: __clobber_all);
}

SEC("gdev/probe/k") __description("fall-through off the end") __failure __msg("fallthrough off the end")
__naked int cfg_fallthrough(void)
{
	asm volatile("r0 = 0; if r1 == 0 goto 1f; exit; 1: r0 = 0;" ::: __clobber_all);
}

SEC("gdev/probe/k") __description("unreachable instruction") __failure __msg("unreachable insn")
__naked int cfg_unreachable(void)
{
	asm volatile("r0 = 0; exit; r0 = 1; exit;" ::: __clobber_all);
}

SEC("gdev/probe/k") __description("jump into the second half of ld_imm64") __failure __msg("jump into the middle of ld_imm64")
__naked int cfg_into_ldimm64(void)
{
	asm volatile("r0 = 0; if r1 == 0 goto +1; r2 = 0x1122334455667788 ll; exit;" ::: __clobber_all);
}

SEC("gdev/probe/k") __description("write to r10") __failure __msg("frame pointer r10 is read-only")
__naked int cfg_write_r10(void)
{
	asm volatile("r0 = 0; .8byte 0x0000000000000ab7; exit;" ::: __clobber_all);
}

SEC("gdev/probe/k") __description("division by a zero immediate") __failure __msg("division by zero")
__naked int cfg_div_zero(void)
{
	asm volatile("r0 = 1; .8byte 0x0000000000000037; r0 = 0; exit;" ::: __clobber_all);
}

SEC("gdev/probe/k") __description("shift by 64") __failure __msg("invalid shift 64")
__naked int cfg_shift(void)
{
	asm volatile("r0 = 1; r0 <<= 64; r0 = 0; exit;" ::: __clobber_all);
}

SEC("gdev/probe/k") __description("kfunc call") __failure __msg("kfunc calls are not supported")
__naked int cfg_kfunc(void)
{
	asm volatile("r0 = 0; .8byte 0x0000000100002085; exit;" ::: __clobber_all);
}

SEC("gdev/probe/k") __description("legacy packet load") __failure __msg("LD_ABS/LD_IND")
__naked int cfg_ld_abs(void)
{
	asm volatile("r6 = r1; r0 = *(u8 *)skb[0]; r0 = 0; exit;" ::: __clobber_all);
}

SEC("gdev/probe/k") __description("read of an uninitialised register") __failure __msg("read of uninitialized register r3")
__naked int cfg_uninit_reg(void)
{
	asm volatile("r0 = r3; r0 = 0; exit;" ::: __clobber_all);
}

SEC("gdev/probe/k") __description("r0 not set before exit") __failure __msg("R0 not set before exit")
__naked int cfg_no_r0(void)
{
	asm volatile("exit;" ::: __clobber_all);
}

SEC("gdev/probe/k") __description("returning a pointer") __failure __msg("returning a pointer is not allowed")
__naked int cfg_ret_ptr(void)
{
	asm volatile("r0 = r10; exit;" ::: __clobber_all);
}

SEC("gdev/probe/k") __description("return value outside the hook's range") __failure __msg("return value out of range")
int cfg_ret_range(struct gdev_ctx *ctx)
{
	return ctx->smid > 4;
}

SEC("gdev/probe/k") __description("pointer comparison") __failure __msg("comparison of pointer")
__naked int cfg_ptr_cmp(void)
{
	asm volatile("r0 = 0; if r1 > r10 goto 1f; 1: exit;" ::: __clobber_all);
}

SEC("gdev/probe/k") __description("32-bit arithmetic on a pointer") __failure __msg("invalid pointer arithmetic")
__naked int cfg_ptr_alu32(void)
{
	asm volatile("w1 += 8; r0 = 0; exit;" ::: __clobber_all);
}

SEC("gdev/probe/k") __description("multiplying a pointer") __failure __msg("invalid pointer arithmetic on ctx")
__naked int cfg_ptr_mul(void)
{
	asm volatile("r1 *= 2; r0 = 0; exit;" ::: __clobber_all);
}

SEC("gdev/probe/k") __description("reserved field set") __failure __msg("reserved field is not zero")
__naked int cfg_reserved(void)
{
	asm volatile("r0 = 0; .8byte 0x00000000000100b7; exit;" ::: __clobber_all);
}

SEC("gdev/probe/k") __description("straight-line code with both branch arms") __success
__naked int cfg_diamond(void)
{
	asm volatile("r2 = *(u32 *)(r1 + 96);"
		     "if r2 > 10 goto 1f;"
		     "r0 = 0;"
		     "goto 2f;"
		     "1: r0 = 0;"
		     "2: exit;" ::: __clobber_all);
}

SEC("gdev/probe/k") __description("cpu v4 instructions: movsx, ldsx, sdiv, bswap, gotol") __success
__naked int cfg_v4(void)
{
	asm volatile("r2 = *(u32 *)(r1 + 96);"
		     "r3 = (s8)r2;"
		     "*(u64 *)(r10 - 8) = r3;"
		     "r4 = *(s16 *)(r10 - 8);"
		     "r4 s/= 3;"
		     "r4 s%%= 5;"
		     "r4 = bswap32 r4;"
		     "gotol +0;"
		     "r0 = 0;"
		     "exit;" ::: __clobber_all);
}
