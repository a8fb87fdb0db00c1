# kmod/ — gpuext.ko, built with kbuild against the kernel headers in KDIR
# when they are present (make deps unpacks Debian's 6.12 ones). Its
# user-space client is another part, hostkmod/. kmod/nvidia/ holds the patch
# to NVIDIA's open modules. kbuild of 6.12 builds in place, so the module's
# sources are copied into $(BUILD)/kmod; the shared ABI headers are read
# from include/ where they are.
KVER      ?= 6.12.95+deb12-amd64
# make deps unpacks Debian's headers into GX_KERNEL_CACHE (not installed: see
# scripts/deps.sh); headers installed in /usr/src serve as well.
GX_KERNEL_CACHE ?= $(HOME)/.cache/gpuext/kernel
KDIR      ?= $(firstword $(wildcard $(GX_KERNEL_CACHE)/usr/src/linux-headers-$(KVER)) /usr/src/linux-headers-$(KVER))
export KDIR GX_KERNEL_CACHE
KCC       ?= gcc
KMOD_DIR  := $(BUILD)/kmod
KMOD_KO   := $(KMOD_DIR)/gpuext.ko
KMOD_SRCS := $(wildcard kmod/*.c kmod/*.h) kmod/Kbuild
KMOD_HDRS := include/gpuext/gpu_ext.h include/gpuext/gpuext_uapi.h

ifneq ($(wildcard $(KDIR)/Makefile),)
HAVE_KDIR := 1
LIBS_ALL  += $(KMOD_KO)
endif

$(KMOD_KO): $(KMOD_SRCS) $(KMOD_HDRS)
	$(call msg,KBUILD,$@)
	$(Q)mkdir -p $(KMOD_DIR)
	$(Q)cp -p $(KMOD_SRCS) $(KMOD_DIR)/
	$(Q)+$(MAKE) -s -C $(KDIR) M=$(abspath $(KMOD_DIR)) CC=$(KCC) GX_INCLUDE=$(abspath include) \
		modules >$(KMOD_DIR)/build.log 2>&1 || { cat $(KMOD_DIR)/build.log; exit 1; }
	$(Q)grep -v 'Skipping BTF\|^$$' $(KMOD_DIR)/build.log || true

.PHONY: kmod
kmod: $(KMOD_KO)
