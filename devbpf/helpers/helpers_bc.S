/* helpers_bc.S — embeds the device helper bitcode (built from gx_helpers.c
 * by clang for NVPTX) into the JIT library, so no file is looked up at run
 * time. GX_HELPERS_BC is the bitcode's path, given by the build. */
	.section .rodata
	.balign 16
	.globl gx_helpers_bc_start
	.hidden gx_helpers_bc_start
gx_helpers_bc_start:
	.incbin GX_HELPERS_BC
	.globl gx_helpers_bc_end
	.hidden gx_helpers_bc_end
gx_helpers_bc_end:
	.byte 0
	.section .note.GNU-stack,"",@progbits
