# image/ — libgximage.a: CUDA code images parsed in-process (fatbin wrapper
# and container, zstd/LZ4 entries, cubins, PTX, fatbins inside host ELF
# files). Public header: image/gx_image.h.
IMAGE_SRCS   := $(sort $(wildcard image/*.c))
IMAGE_LIB    := $(BUILD)/lib/libgximage.a
IMAGE_LDLIBS := -lelf -lzstd -llz4

$(IMAGE_LIB): $(call objs,$(IMAGE_SRCS))
	$(archive)

LIBS_ALL += $(IMAGE_LIB)
