# tests/tools: the tools' programs on simulated launches (native JIT and
# interpreter), their reports on synthetic logs (golden files), their PTX,
# and reports with several GPUs.
T_TOOLS := $(BUILD)/tests/tools
$(T_TOOLS)/test_tool_progs: $(call objs,tests/tools/test_tool_progs.c) $(JIT_LIB) $(BPF_LIB) $(COMMON_LIB)
	$(call link,$(JIT_LDLIBS) $(BPF_SO_LDLIBS))
$(T_TOOLS)/mkmulti: $(call objs,tests/tools/mkmulti.c) $(BPF_LIB) $(COMMON_LIB)
	$(link)

TEST_BINS += $(T_TOOLS)/test_tool_progs $(T_TOOLS)/mkmulti $(TOOL_OBJS)
TESTS     += "$(T_TOOLS)/test_tool_progs $(TOOLS_DIR)" tests/tools/test_tools.sh tests/tools/test_tools_ptx.sh \
             tests/tools/test_tools_multi.sh

# The tool logs' reader and reports under libFuzzer.
FUZZ_TOOLDATA := $(BUILD)/fuzz/fuzz_tooldata
$(FUZZ_TOOLDATA): tests/tools/fuzz_tooldata.c $(TOOLS_SRCS) $(BPF_SRCS) $(COMMON_SRCS)
	$(call link_fuzz,$(BPF_LDLIBS))
fuzz: fuzz-tooldata
.PHONY: fuzz-tooldata
fuzz-tooldata: $(FUZZ_TOOLDATA)
	$(Q)BUILD=$(BUILD) GX_FUZZ_TIME=$(GX_FUZZ_TIME) tests/tools/test_tooldata_fuzz.sh
TEST_BINS += $(FUZZ_TOOLDATA)
TESTS     += tests/tools/test_tooldata_fuzz.sh
