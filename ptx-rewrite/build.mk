# ptx-rewrite/ — libgxptx.a: the PTX parser, IR and emitter (ptx_*.c), the
# library the passes are built from (passlib.c, policy.c, tramp.c, site*.c,
# handler.c, inline.c ...), the passes (pass_*.c), their driver (passes.c),
# gx_ptx_rewrite() (rewrite.c) and the module API (module.c); how they
# depend on each other: docs/DESIGN.md. Public header: ptx-rewrite/gx_ptx.h.
PTX_SRCS := $(sort $(wildcard ptx-rewrite/*.c))
PTX_LIB  := $(BUILD)/lib/libgxptx.a

$(PTX_LIB): $(call objs,$(PTX_SRCS))
	$(archive)

LIBS_ALL += $(PTX_LIB)
