# ptx-rewrite/ — libgxptx.a: the PTX parser, IR and emitter (ptx_*.c), the
# passes (pass_*.c, passes.c), gx_ptx_rewrite() (rewrite.c) and the module
# API (module.c). Public header: ptx-rewrite/gx_ptx.h.
PTX_SRCS := $(sort $(wildcard ptx-rewrite/*.c))
PTX_LIB  := $(BUILD)/lib/libgxptx.a

$(PTX_LIB): $(call objs,$(PTX_SRCS))
	$(archive)

LIBS_ALL += $(PTX_LIB)
