# tests/ptx-rewrite: the PTX corpus round trip (corpus.sh builds it into
# $(BUILD)/ptx-corpus; the pass tests reuse it), golden files of the parser
# and the passes, linking policy PTX, hook sites, the IR's unit tests, the
# CLI, the fuzzer run briefly (docs/ptx-rewrite.md), and the check that the
# folder's files include and call each other without cycles (test_cycles.py).
T_PTX := $(BUILD)/tests/ptx-rewrite
$(T_PTX)/test_link $(T_PTX)/test_ptx_ir: $(T_PTX)/%: $(BUILD)/obj/tests/ptx-rewrite/%.o $(PTX_LIB) $(COMMON_LIB)
	$(link)

# libFuzzer target (clang, ASan+UBSan): parser, emitter fixpoint, passes.
PTX_FUZZER := $(BUILD)/fuzz/fuzz_ptx
$(PTX_FUZZER): tests/ptx-rewrite/fuzz_ptx.c $(PTX_SRCS) $(COMMON_SRCS) $(wildcard ptx-rewrite/*.h)
	$(link_fuzz)

TEST_BINS += $(T_PTX)/test_link $(T_PTX)/test_ptx_ir $(PTX_FUZZER)
TESTS     += tests/ptx-rewrite/test_corpus.sh tests/ptx-rewrite/test_passes.sh tests/ptx-rewrite/test_link.sh \
             tests/ptx-rewrite/test_sites.sh $(T_PTX)/test_ptx_ir tests/ptx-rewrite/test_golden.sh \
             tests/ptx-rewrite/test_ptx_fuzz.sh tests/ptx-rewrite/test_ptx_cli.sh tests/ptx-rewrite/test_cycles.py \
             tests/ptx-rewrite/test_mem_sample.sh tests/ptx-rewrite/test_mem_defer.sh tests/ptx-rewrite/test_ring_loops.sh

# `make fuzz-ptx` (also part of `make fuzz`): PTX_FUZZ_TIME seconds, default 300.
.PHONY: fuzz-ptx
fuzz: fuzz-ptx
fuzz-ptx: $(PTX_FUZZER)
	$(Q)BUILD=$(BUILD) PTX_FUZZ_TIME=$${PTX_FUZZ_TIME:-300} tests/ptx-rewrite/test_ptx_fuzz.sh
