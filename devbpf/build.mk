# devbpf — policy objects: loader, verifier, interpreter (libgxbpf.a).
# The JIT (another engineer) adds its sources to DEVBPF_SRCS from its own
# fragment (e.g. devbpf/jit/build.mk is not included automatically: add
# `include devbpf/jit.mk` below, or append here).
DEVBPF_SRCS += devbpf/sections.c devbpf/object.c devbpf/loader.c devbpf/reloc.c \
               devbpf/verifier.c devbpf/verifier_cfg.c devbpf/verifier_scalar.c \
               devbpf/verifier_mem.c devbpf/verifier_helpers.c devbpf/disasm.c devbpf/interp.c
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

# Verifier corpus: annotated programs compiled with clang -target bpf.
VCORPUS_SRCS := $(wildcard tests/devbpf/verifier/*.bpf.c)
VCORPUS_OBJS := $(patsubst tests/devbpf/verifier/%.bpf.c,$(BUILD)/tests/devbpf/verifier/%.bpf.o,$(VCORPUS_SRCS))
BPF_CFLAGS   := -target bpf -O2 -g -Wall -Werror -Idevbpf -Itests/devbpf/verifier
$(BUILD)/tests/devbpf/verifier/%.bpf.o: tests/devbpf/verifier/%.bpf.c tests/devbpf/verifier/gx_test_bpf.h devbpf/gdev_helpers.h devbpf/gdev_ctx.h
	$(call msg,CLANG,$<)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

TEST_BINS += $(BUILD)/tests/test_bpf_verifier $(VCORPUS_OBJS)
TESTS     += "$(BUILD)/tests/test_bpf_verifier $(BUILD)/tests/devbpf/verifier"
$(BUILD)/tests/test_bpf_verifier: $(call objs,tests/devbpf/test_verifier.c) $(DEVBPF_LIB) $(COMMON_LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $< $(DEVBPF_TEST_LIBS) $(LDFLAGS)

# JIT, helpers and maps runtime (libgxjit.a, libgxmaps.a).
include devbpf/jit.mk
