/* lazy.S — first call of a forwarded driver function.
 *
 * Every slot of gx_slots starts at a per-symbol stub that loads the symbol's
 * index into %r11 and jumps here. We save every argument register (integer
 * and vector; the callee's prototype is unknown to us), ask C for the real
 * address (gx_resolve_slot stores it into the slot, so later calls take the
 * trampoline's single indirect jump), restore the registers and tail-jump.
 * The stack is exactly as the caller left it, so stack arguments pass. */
	.section .note.GNU-stack,"",@progbits
	.text
	.p2align 4
	.globl gx_lazy_resolve
	.hidden gx_lazy_resolve
	.type gx_lazy_resolve,@function
gx_lazy_resolve:
	.cfi_startproc
	pushq %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	movq %rsp, %rbp
	.cfi_def_cfa_register %rbp
	subq $192, %rsp
	movq %rdi, 0(%rsp)
	movq %rsi, 8(%rsp)
	movq %rdx, 16(%rsp)
	movq %rcx, 24(%rsp)
	movq %r8, 32(%rsp)
	movq %r9, 40(%rsp)
	movq %rax, 48(%rsp)
	movq %r10, 56(%rsp)
	movdqu %xmm0, 64(%rsp)
	movdqu %xmm1, 80(%rsp)
	movdqu %xmm2, 96(%rsp)
	movdqu %xmm3, 112(%rsp)
	movdqu %xmm4, 128(%rsp)
	movdqu %xmm5, 144(%rsp)
	movdqu %xmm6, 160(%rsp)
	movdqu %xmm7, 176(%rsp)
	movl %r11d, %edi
	call gx_resolve_slot
	movq %rax, %r11
	movq 0(%rsp), %rdi
	movq 8(%rsp), %rsi
	movq 16(%rsp), %rdx
	movq 24(%rsp), %rcx
	movq 32(%rsp), %r8
	movq 40(%rsp), %r9
	movq 48(%rsp), %rax
	movq 56(%rsp), %r10
	movdqu 64(%rsp), %xmm0
	movdqu 80(%rsp), %xmm1
	movdqu 96(%rsp), %xmm2
	movdqu 112(%rsp), %xmm3
	movdqu 128(%rsp), %xmm4
	movdqu 144(%rsp), %xmm5
	movdqu 160(%rsp), %xmm6
	movdqu 176(%rsp), %xmm7
	leave
	.cfi_def_cfa %rsp, 8
	jmp *%r11
	.cfi_endproc
	.size gx_lazy_resolve,.-gx_lazy_resolve
