# ptx-rewrite: PTX parser/IR/emitter (ptx_*.c), passes (pass_*.c, passes.c)
# and the public entry point gx_ptx_rewrite() (rewrite.c).
PTX_SRCS := ptx-rewrite/rewrite.c ptx-rewrite/ptx_ir.c ptx-rewrite/ptx_lex.c ptx-rewrite/ptx_parse.c ptx-rewrite/ptx_emit.c ptx-rewrite/ptx_build.c \
            ptx-rewrite/passes.c $(filter-out ptx-rewrite/passes.c,$(wildcard ptx-rewrite/pass_*.c))
PTX_LIB  := $(BUILD)/lib/libgxptx.a

$(PTX_LIB): $(call objs,$(PTX_SRCS))
	$(call msg,AR,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)ar rcs $@ $^

LIBS_ALL += $(PTX_LIB)

CLI_SRCS += cli/ptx.c
CLI_LIBS += $(PTX_LIB)

# Identity round trip over the PTX corpus (built into $(BUILD)/ptx-corpus by
# tests/ptx/corpus.sh, which the passes' tests reuse).
TESTS += tests/ptx/test_corpus.sh

# Pass tests (tests/ptx/test_passes.sh, test_link.sh): see docs/ptx-rewrite.md.
TEST_BINS += $(BUILD)/tests/ptx/test_link
TESTS     += tests/ptx/test_passes.sh tests/ptx/test_link.sh tests/ptx/test_sites.sh
$(BUILD)/tests/ptx/test_link: $(call objs,tests/ptx/test_link.c) $(PTX_LIB) $(COMMON_LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $^ $(LDFLAGS)

# bench/ptx_throughput: MB/s of parse / emit / rewrite over given PTX files.
PTX_BENCH := $(BUILD)/bench/ptx_throughput
BINS_ALL  += $(PTX_BENCH)
$(PTX_BENCH): $(call objs,bench/ptx_throughput.c) $(PTX_LIB) $(COMMON_LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $^ $(LDFLAGS)

# Parser/IR/emitter unit tests (tests/ptx/test_ptx_ir.c) and golden files.
TEST_BINS += $(BUILD)/tests/ptx/test_ptx_ir
TESTS     += $(BUILD)/tests/ptx/test_ptx_ir
$(BUILD)/tests/ptx/test_ptx_ir: $(call objs,tests/ptx/test_ptx_ir.c) $(PTX_LIB) $(COMMON_LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $^ $(LDFLAGS)

# Golden files of the parser/emitter.
TESTS += tests/ptx/test_golden.sh

# libFuzzer target (clang, ASan+UBSan): parser, emitter fixpoint, passes.
PTX_FUZZER := $(BUILD)/fuzz/fuzz_ptx
PTX_FUZZ_CFLAGS := -std=gnu11 -g -O1 -D_GNU_SOURCE -I. -Icommon -I$(CUDA_HOME)/include \
                   -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
$(PTX_FUZZER): tests/ptx/fuzz_ptx.c $(PTX_SRCS) $(COMMON_SRCS) $(wildcard ptx-rewrite/*.h)
	$(call msg,FUZZ,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CLANG) $(PTX_FUZZ_CFLAGS) -o $@ $< $(PTX_SRCS) $(COMMON_SRCS)
TEST_BINS += $(PTX_FUZZER)
TESTS     += tests/ptx/test_ptx_fuzz.sh

# `make fuzz-ptx` (also part of `make fuzz`): PTX_FUZZ_TIME seconds, default 300.
.PHONY: fuzz-ptx
fuzz: fuzz-ptx
fuzz-ptx: $(PTX_FUZZER)
	$(Q)BUILD=$(BUILD) PTX_FUZZ_TIME=$${PTX_FUZZ_TIME:-300} tests/ptx/test_ptx_fuzz.sh

# CLI front end of `gpuext ptx`.
TESTS += tests/ptx/test_ptx_cli.sh

# `make bench-ptx`: rewrite throughput over the corpus.
.PHONY: bench-ptx
bench-ptx: $(PTX_BENCH) $(GPUEXT_BIN)
	$(Q)BUILD=$(BUILD) tests/ptx/corpus.sh | $(PTX_BENCH) -r 21
