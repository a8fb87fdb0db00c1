# tests/common: the utilities, the trust rule for shared files (test_trust), the BPF-ISA header against 6.1-era UAPI
# headers, `make`'s missing-package line, and clang-format over the C files.
$(BUILD)/tests/common/test_common: $(call objs,tests/common/test_common.c) $(COMMON_LIB)
	$(link)

$(BUILD)/tests/common/test_trust: $(call objs,tests/common/test_trust.c) $(COMMON_LIB)
	$(link)

TEST_BINS += $(BUILD)/tests/common/test_common $(BUILD)/tests/common/test_trust
TESTS     += $(BUILD)/tests/common/test_common $(BUILD)/tests/common/test_trust tests/common/test_bpf_isa_headers.sh \
             tests/common/test_deps_check.sh tests/common/test_clang_format.sh
