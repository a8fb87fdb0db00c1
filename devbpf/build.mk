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

# ---- tests ----
DEVBPF_TEST_LIBS = $(DEVBPF_LIB) $(COMMON_LIB) $(DEVBPF_LDLIBS)
TEST_BINS += $(BUILD)/tests/test_bpf_interp
TESTS     += $(BUILD)/tests/test_bpf_interp
$(BUILD)/tests/test_bpf_interp: $(call objs,tests/devbpf/test_interp.c) $(DEVBPF_LIB) $(COMMON_LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $< $(DEVBPF_TEST_LIBS) $(LDFLAGS)

# JIT, helpers and maps runtime (libgxjit.a, libgxmaps.a).
include devbpf/jit.mk
