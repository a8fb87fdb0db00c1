# tests/image: synthetic and malformed images (plain and under ASan), real
# nvcc outputs (test_image_nvcc.sh), and the fuzzers run briefly.
T_IMAGE := $(BUILD)/tests/image
$(T_IMAGE)/test_image: $(call objs,tests/image/test_image.c) $(IMAGE_LIB) $(COMMON_LIB)
	$(call link,$(IMAGE_LDLIBS))
$(T_IMAGE)/test_image_asan: tests/image/test_image.c $(IMAGE_SRCS) $(COMMON_SRCS) $(wildcard image/*.h)
	$(call link_asan,$(IMAGE_LDLIBS))

# libFuzzer targets: the image parser and entry data, the host ELF scan.
IMAGE_FUZZERS := $(BUILD)/fuzz/fuzz_image $(BUILD)/fuzz/fuzz_hostelf
$(BUILD)/fuzz/fuzz_%: tests/image/fuzz_%.c $(IMAGE_SRCS) $(COMMON_SRCS) $(wildcard image/*.h)
	$(call link_fuzz,$(IMAGE_LDLIBS))

# Decompression bombs are generated, never committed (test_image_bomb.sh).
$(T_IMAGE)/gen_bomb: $(call objs,tests/image/gen_bomb.c)
	$(link)

TEST_BINS += $(T_IMAGE)/test_image $(T_IMAGE)/test_image_asan $(IMAGE_FUZZERS) $(T_IMAGE)/gen_bomb
TESTS     += $(T_IMAGE)/test_image $(T_IMAGE)/test_image_asan tests/image/test_image_nvcc.sh \
             tests/image/test_image_bomb.sh tests/image/test_image_fuzz.sh tests/image/test_cubin_regs.sh

# `make fuzz`: each image fuzzer for FUZZ_TIME seconds (default 120).
FUZZ_TIME ?= 120
.PHONY: fuzz-image
fuzz: fuzz-image
fuzz-image: $(IMAGE_FUZZERS) tests
	$(Q)BUILD=$(BUILD) FUZZ_TIME=$(FUZZ_TIME) tests/image/test_image_fuzz.sh
