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
