/* launch_fast.S — the no-subscriber path of the launch wrappers, in two
 * instructions: test the launch bit of gx_ev_mask; if clear, jump through
 * the driver's slot (exactly like a forwarded symbol); if set, jump to the C
 * slow path (launch.c), which has the same signature, so every argument —
 * registers and stack — is still in place. No frame, no register touched. */
	.section .note.GNU-stack,"",@progbits
	.include "gx_syms.inc"
	.set GX_EV_LAUNCH_BIT, 0x10	/* 1 << GX_EV_LAUNCH, checked in launch.c */

	.macro FAST name
	.text
	.p2align 4
	.globl \name
	.type \name,@function
\name:
	testl $GX_EV_LAUNCH_BIT, gx_ev_mask(%rip)
	jnz gx_slow_\name
	jmp *gx_slots+8*GX_SYM_\name(%rip)
	.size \name,.-\name
	.endm

	FAST cuLaunchKernel
	FAST cuLaunchKernel_ptsz
	FAST cuLaunchKernelEx
	FAST cuLaunchKernelEx_ptsz
	FAST cuLaunchCooperativeKernel
	FAST cuLaunchCooperativeKernel_ptsz
