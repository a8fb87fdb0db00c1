# devbpf — policy objects: loader, verifier, interpreter (libgxbpf.a).
# The JIT (another engineer) adds its sources to DEVBPF_SRCS from its own
# fragment (e.g. devbpf/jit/build.mk is not included automatically: add
# `include devbpf/jit.mk` below, or append here).
DEVBPF_SRCS += devbpf/sections.c devbpf/object.c devbpf/loader.c devbpf/reloc.c \
               devbpf/verifier.c devbpf/verifier_cfg.c devbpf/verifier_scalar.c \
               devbpf/verifier_mem.c devbpf/verifier_helpers.c devbpf/disasm.c devbpf/interp.c
DEVBPF_LIB  := $(BUILD)/lib/libgxbpf.a
# Executables link libbpf statically (the GPU machine has none); shared
# libraries cannot (Debian's libbpf.a is not PIC) and link it dynamically.
DEVBPF_LDLIBS := -l:libbpf.a -lelf -lz
DEVBPF_SO_LDLIBS := -lbpf -lelf -lz

$(DEVBPF_LIB): $$(call objs,$$(DEVBPF_SRCS))
	$(call msg,AR,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)rm -f $@ && ar rcs $@ $^

LIBS_ALL += $(DEVBPF_LIB)

# JIT, helpers and maps runtime (libgxjit.a, libgxmaps.a): devbpf/jit.mk.
include devbpf/jit.mk

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

# The same corpus built for cpu v4 (ALU32/JMP32, sign extension, gotol):
# every verdict must hold there too.
VCORPUS_V4 := $(patsubst tests/devbpf/verifier/%.bpf.c,$(BUILD)/tests/devbpf/verifier-v4/%.bpf.o,$(VCORPUS_SRCS))
$(BUILD)/tests/devbpf/verifier-v4/%.bpf.o: tests/devbpf/verifier/%.bpf.c tests/devbpf/verifier/gx_test_bpf.h devbpf/gdev_helpers.h devbpf/gdev_ctx.h
	$(call msg,CLANG,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -mcpu=v4 -c $< -o $@

TEST_BINS += $(BUILD)/tests/test_bpf_verifier $(VCORPUS_OBJS) $(VCORPUS_V4)
TESTS     += "$(BUILD)/tests/test_bpf_verifier $(BUILD)/tests/devbpf/verifier" \
             "$(BUILD)/tests/test_bpf_verifier $(BUILD)/tests/devbpf/verifier-v4"
$(BUILD)/tests/test_bpf_verifier: $(call objs,tests/devbpf/test_verifier.c) $(DEVBPF_LIB) $(COMMON_LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $< $(DEVBPF_TEST_LIBS) $(LDFLAGS)

# Loader tests: one good object and the malformed variants of bad.bpf.c.
LDR_DIR     := $(BUILD)/tests/devbpf/loader
LDR_BAD_N   := 1 2 3 4 5 6 7 8 9 10 11
LDR_OBJS    := $(LDR_DIR)/good.bpf.o $(foreach n,$(LDR_BAD_N),$(LDR_DIR)/bad-$(n).bpf.o)
$(LDR_DIR)/good.bpf.o: tests/devbpf/loader/good.bpf.c devbpf/gdev_helpers.h devbpf/gdev_ctx.h
	$(call msg,CLANG,$<)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@
$(LDR_DIR)/bad-%.bpf.o: tests/devbpf/loader/bad.bpf.c devbpf/gdev_helpers.h devbpf/gdev_ctx.h
	$(call msg,CLANG,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -DVARIANT=$* -c $< -o $@

TEST_BINS += $(BUILD)/tests/test_bpf_loader $(LDR_OBJS) $(BUILD)/tests/gen_bpf_bomb
# Objects small on disk and huge once flattened, generated, never committed
# (tests/devbpf/bpf_bomb.h: test_bpf_cli.sh, the fuzzer's seeds).
$(BUILD)/tests/gen_bpf_bomb: tests/devbpf/gen_bpf_bomb.c tests/devbpf/bpf_bomb.h
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $<
TESTS     += "$(BUILD)/tests/test_bpf_loader $(LDR_DIR)"
$(BUILD)/tests/test_bpf_loader: $(call objs,tests/devbpf/test_loader.c) $(DEVBPF_LIB) $(COMMON_LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $< $(DEVBPF_TEST_LIBS) $(LDFLAGS)

# libFuzzer target for loader + verifier + interpreter (clang, ASan+UBSan).
# `make test` runs it for a few seconds; `make fuzz` for GX_FUZZ_TIME (300 s).
FUZZ_CC       ?= $(CLANG)
FUZZ_BPF      := $(BUILD)/fuzz/fuzz_bpf_loader
FUZZ_BPF_SRCS := tests/devbpf/fuzz_loader.c $(DEVBPF_SRCS) $(COMMON_SRCS)
GX_FUZZ_TIME  ?= 300
$(FUZZ_BPF): $(FUZZ_BPF_SRCS) $(wildcard devbpf/*.h)
	$(call msg,FUZZ-CC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		-D_GNU_SOURCE -I. -Icommon -o $@ $(FUZZ_BPF_SRCS) $(DEVBPF_LDLIBS)
$(BUILD)/tests/fuzz_bpf_loader.sh: tests/devbpf/fuzz_bpf_loader.sh
	$(Q)mkdir -p $(dir $@) && cp $< $@ && chmod +x $@
TEST_BINS += $(FUZZ_BPF) $(BUILD)/tests/fuzz_bpf_loader.sh
TESTS     += $(BUILD)/tests/fuzz_bpf_loader.sh
fuzz: fuzz-bpf-loader
.PHONY: fuzz-bpf-loader
fuzz-bpf-loader: $(FUZZ_BPF) $(VCORPUS_OBJS) $(LDR_OBJS)
	$(Q)BUILD=$(BUILD) GX_FUZZ_TIME=$(GX_FUZZ_TIME) tests/devbpf/fuzz_bpf_loader.sh

TEST_BINS += $(BUILD)/tests/test_bpf_cli.sh
TESTS     += $(BUILD)/tests/test_bpf_cli.sh
$(BUILD)/tests/test_bpf_cli.sh: tests/devbpf/test_bpf_cli.sh
	$(Q)mkdir -p $(dir $@) && cp $< $@ && chmod +x $@
