# shim/image.mk — CUDA image parsing (fatbin wrapper/container, cubin, PTX,
# host ELF scan) as a static library, the `gpuext fatbin` subcommand, tests
# and fuzzers. Included by the top Makefile (and by shim/build.mk): guarded.
ifndef GX_IMAGE_MK
GX_IMAGE_MK := 1

IMAGE_SRCS   := shim/image.c shim/fatbin.c shim/image_elf.c shim/image_ptx.c \
                shim/image_decompress.c shim/image_host.c
IMAGE_LIB    := $(BUILD)/lib/libgximage.a
IMAGE_LDLIBS := -lelf -lzstd -llz4

$(IMAGE_LIB): $(call objs,$(IMAGE_SRCS))
	$(call msg,AR,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)rm -f $@ && ar rcs $@ $^

LIBS_ALL   += $(IMAGE_LIB)
CLI_SRCS   += cli/fatbin.c
CLI_LIBS   += $(IMAGE_LIB)
CLI_LDLIBS += $(IMAGE_LDLIBS)

# Unit tests (synthetic and malformed images), built plain and with ASan.
IMAGE_TEST      := $(BUILD)/tests/test_image
IMAGE_TEST_ASAN := $(BUILD)/tests/test_image_asan
IMAGE_ASAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer

$(IMAGE_TEST): $(call objs,tests/image/test_image.c) $(IMAGE_LIB) $(COMMON_LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $^ $(LDFLAGS) $(IMAGE_LDLIBS)

$(IMAGE_TEST_ASAN): tests/image/test_image.c $(IMAGE_SRCS) $(COMMON_SRCS) $(wildcard shim/*.h)
	$(call msg,ASAN,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) $(IMAGE_ASAN_FLAGS) -o $@ tests/image/test_image.c $(IMAGE_SRCS) \
		$(COMMON_SRCS) $(LDFLAGS) $(IMAGE_LDLIBS)

IMAGE_SCRIPTS := $(BUILD)/tests/test_image_nvcc.sh $(BUILD)/tests/test_image_bomb.sh

# Decompression bombs are generated, never committed (test_image_bomb.sh).
$(BUILD)/tests/gen_bomb: tests/image/gen_bomb.c tests/image/bomb.h shim/gx_image.h
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $<
$(BUILD)/tests/%.sh: tests/image/%.sh
	$(Q)mkdir -p $(dir $@) && cp $< $@ && chmod +x $@

# libFuzzer targets (clang): image parser + entry data, host ELF scan.
IMAGE_FUZZERS := $(BUILD)/fuzz/fuzz_image $(BUILD)/fuzz/fuzz_hostelf
IMAGE_FUZZ_CFLAGS := -std=gnu11 -g -O1 -D_GNU_SOURCE -I. -Icommon -fsanitize=fuzzer,address,undefined \
                     -fno-sanitize-recover=all
$(BUILD)/fuzz/fuzz_%: tests/image/fuzz_%.c $(IMAGE_SRCS) $(COMMON_SRCS) $(wildcard shim/*.h)
	$(call msg,FUZZ,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CLANG) $(IMAGE_FUZZ_CFLAGS) -o $@ $< $(IMAGE_SRCS) $(COMMON_SRCS) $(IMAGE_LDLIBS)

TEST_BINS += $(IMAGE_TEST) $(IMAGE_TEST_ASAN) $(IMAGE_SCRIPTS) $(IMAGE_FUZZERS) \
             $(BUILD)/tests/test_image_fuzz.sh $(BUILD)/tests/gen_bomb
TESTS     += $(IMAGE_TEST) $(IMAGE_TEST_ASAN) $(BUILD)/tests/test_image_nvcc.sh \
             $(BUILD)/tests/test_image_bomb.sh $(BUILD)/tests/test_image_fuzz.sh

# `make fuzz`: each image fuzzer for FUZZ_TIME seconds (default 120).
FUZZ_TIME ?= 120
.PHONY: fuzz-image
fuzz: fuzz-image
fuzz-image: $(IMAGE_FUZZERS) tests
	$(Q)BUILD=$(BUILD) FUZZ_TIME=$(FUZZ_TIME) $(BUILD)/tests/test_image_fuzz.sh

endif
