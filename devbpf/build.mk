# devbpf — policy objects: loader, verifier, interpreter (libgxbpf.a).
# The JIT (another engineer) adds its sources to DEVBPF_SRCS from its own
# fragment (e.g. devbpf/jit/build.mk is not included automatically: add
# `include devbpf/jit.mk` below, or append here).
DEVBPF_SRCS += devbpf/sections.c devbpf/object.c devbpf/loader.c devbpf/reloc.c \
               devbpf/verifier.c devbpf/interp.c
DEVBPF_LIB  := $(BUILD)/lib/libgxbpf.a
DEVBPF_LDLIBS := -lbpf -lelf -lz

$(DEVBPF_LIB): $$(call objs,$$(DEVBPF_SRCS))
	$(call msg,AR,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)rm -f $@ && ar rcs $@ $^

LIBS_ALL += $(DEVBPF_LIB)

CLI_SRCS   += cli/bpf.c
CLI_LIBS   += $(DEVBPF_LIB)
CLI_LDLIBS += $(DEVBPF_LDLIBS)
