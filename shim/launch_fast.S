/* launch_fast.S — the no-subscriber path of the launch wrappers, in two
 * instructions: test the launch bits of gx_ev_mask; if clear, jump through
 * the driver's slot (exactly like a forwarded symbol); if set, jump to the C
 * slow path (launch.c), which has the same signature, so every argument —
 * registers and stack — is still in place. No frame, no register touched.
 *
 * Each wrapper has a twin, gx_gpa_<name>, for cuGetProcAddress: a driver may
 * answer a query with a pointer that is not its exported symbol (an internal
 * entry, possibly cheaper); procaddr.c stores that pointer in the twin's own
 * slot (gx_gpa_slots) and hands out the twin, so the application's launches
 * reach exactly the function the driver chose, one jump later. */
	.section .note.GNU-stack,"",@progbits
	.include "gx_syms.inc"
	/* 1 << GX_EV_LAUNCH | 1 << GX_EV_LAUNCH_DONE, checked in launch.c */
	.set GX_EV_LAUNCH_BIT, 0x4010

	.macro FAST name idx
	.text
	.p2align 4
	.globl \name
	.type \name,@function
\name:
	testl $GX_EV_LAUNCH_BIT, gx_ev_mask(%rip)
	jnz gx_slow_\name
	jmp *gx_slots+8*GX_SYM_\name(%rip)
	.size \name,.-\name

	.p2align 4
	.globl gx_gpa_\name
	.hidden gx_gpa_\name
	.type gx_gpa_\name,@function
gx_gpa_\name:
	testl $GX_EV_LAUNCH_BIT, gx_ev_mask(%rip)
	jnz gx_slow_\name
	jmp *gx_gpa_slots+8*\idx(%rip)
	.size gx_gpa_\name,.-gx_gpa_\name
	.endm

	/* Order = index into gx_gpa_slots (procaddr.c's gpa_launch[]). */
	FAST cuLaunchKernel 0
	FAST cuLaunchKernel_ptsz 1
	FAST cuLaunchKernelEx 2
	FAST cuLaunchKernelEx_ptsz 3
	FAST cuLaunchCooperativeKernel 4
	FAST cuLaunchCooperativeKernel_ptsz 5

	.data
	.p2align 6
	.globl gx_gpa_slots
	.hidden gx_gpa_slots
gx_gpa_slots:
	.zero 8*6
