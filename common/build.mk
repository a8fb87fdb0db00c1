COMMON_SRCS := common/gx_log.c common/gx_util.c
COMMON_OBJS := $(call objs,$(COMMON_SRCS))
COMMON_LIB  := $(BUILD)/lib/libgxcommon.a

$(COMMON_LIB): $(COMMON_OBJS)
	$(call msg,AR,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)ar rcs $@ $^

LIBS_ALL += $(COMMON_LIB)

TEST_BINS += $(BUILD)/tests/test_common
TESTS     += $(BUILD)/tests/test_common tests/common/test_bpf_isa_headers.sh \
             tests/common/test_deps_check.sh
$(BUILD)/tests/test_common: $(call objs,tests/common/test_common.c) $(COMMON_LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $^ $(LDFLAGS)
