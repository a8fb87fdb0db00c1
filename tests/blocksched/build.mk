# tests/blocksched: the device runtime's claim protocol on the host (threads
# and interleavings), the launch side through the shim against the fake
# driver, the transform's loops (ptxas, registers), and the policies'
# decisions on simulated launches (interpreter and native JIT).
T_BS := $(BUILD)/tests/blocksched
# The runtime compiled for the host (the same C the kernels run as PTX).
$(T_BS)/test_bs_rt: $(call objs,tests/blocksched/test_bs_rt.c blocksched/bs_rt.c)
	$(call link,-lpthread)
$(T_BS)/test_bs_guard: $(call objs,tests/blocksched/test_bs_guard.c blocksched/bs_guard.c)
	$(call link,)
# The rewriter-notes parser: golden notes, and a libFuzzer target (`make test`
# runs it a few seconds; `make fuzz` for GX_FUZZ_TIME).
$(T_BS)/test_bs_parse: $(call objs,tests/blocksched/test_bs_parse.c blocksched/bs_parse.c)
	$(call link,)
FUZZ_BS_PARSE := $(BUILD)/fuzz/fuzz_bs_parse
$(FUZZ_BS_PARSE): tests/blocksched/fuzz_bs_parse.c blocksched/bs_parse.c blocksched/gx_blocksched.h
	$(call link_fuzz,)
fuzz: fuzz-bs-parse
.PHONY: fuzz-bs-parse
fuzz-bs-parse: $(FUZZ_BS_PARSE)
	$(Q)BUILD=$(BUILD) GX_FUZZ_TIME=$(GX_FUZZ_TIME) tests/blocksched/test_bs_parse_fuzz.sh
$(T_BS)/test_bs_launch: $(BUILD)/obj/tests/blocksched/test_bs_launch.o
	$(call link,-L$(STUB_LDIR) -lcuda -ldl -lpthread)
$(T_BS)/side_load: $(BUILD)/obj/tests/blocksched/side_load.o
	$(call link,-L$(STUB_LDIR) -lcuda -ldl)

# The policies on simulated launches: the interpreter (and the native JIT).
$(T_BS)/test_bs_policies: $(call objs,tests/blocksched/test_bs_policies.c blocksched/bs_rt.c) $(JIT_LIB) $(BPF_LIB) \
                          $(COMMON_LIB)
	$(call link,$(JIT_LDLIBS) $(BPF_SO_LDLIBS))

TEST_BINS += $(T_BS)/test_bs_rt $(T_BS)/test_bs_guard $(T_BS)/test_bs_parse $(FUZZ_BS_PARSE) $(T_BS)/test_bs_launch $(T_BS)/side_load $(T_BS)/test_bs_policies $(BS_POL_OBJS)
TESTS     += $(T_BS)/test_bs_rt $(T_BS)/test_bs_guard $(T_BS)/test_bs_parse tests/blocksched/test_bs_parse_fuzz.sh tests/blocksched/test_bs_launch.sh tests/blocksched/test_bs_side.sh tests/blocksched/test_bs_ptx.sh "$(T_BS)/test_bs_policies $(BS_POL_DIR)"
