# The gpuext CLI. Parts add their subcommand sources to CLI_SRCS, the static
# libraries they need to CLI_LIBS and extra link flags to CLI_LDLIBS.
CLI_SRCS   += cli/main.c cli/version.c
GPUEXT_BIN := $(BUILD)/bin/gpuext
BINS_ALL   += $(GPUEXT_BIN)

# Evaluated late (=) so fragments included after this one still contribute.
$(GPUEXT_BIN): $$(call objs,$$(CLI_SRCS)) $$(CLI_LIBS) $$(COMMON_LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $(call objs,$(CLI_SRCS)) $(CLI_LIBS) $(COMMON_LIB) -rdynamic $(LDFLAGS) $(CLI_LDLIBS)

TEST_BINS += $(BUILD)/tests/test_cli.sh
TESTS     += $(BUILD)/tests/test_cli.sh
$(BUILD)/tests/test_cli.sh: tests/cli/test_cli.sh
	$(Q)mkdir -p $(dir $@) && cp $< $@ && chmod +x $@
