# gpuext.ko: built with kbuild against the kernel headers in KDIR, only if
# they are present (make deps installs Debian's 6.12 ones). kbuild of 6.12
# builds in place, so the sources are copied into $(BUILD)/kmod first.
KVER      ?= 6.12.95+deb12-amd64
KDIR      ?= /usr/src/linux-headers-$(KVER)
KCC       ?= gcc
KMOD_DIR  := $(BUILD)/kmod
KMOD_KO   := $(KMOD_DIR)/gpuext.ko
KMOD_SRCS := $(wildcard kmod/*.c kmod/*.h) kmod/Kbuild hostbpf/gpu_ext.h

ifneq ($(wildcard $(KDIR)/Makefile),)
HAVE_KDIR := 1
LIBS_ALL  += $(KMOD_KO)
endif

$(KMOD_KO): $(KMOD_SRCS)
	$(call msg,KBUILD,$@)
	$(Q)mkdir -p $(KMOD_DIR)
	$(Q)cp -p $(KMOD_SRCS) $(KMOD_DIR)/
	$(Q)+$(MAKE) -s -C $(KDIR) M=$(abspath $(KMOD_DIR)) CC=$(KCC) modules >$(KMOD_DIR)/build.log 2>&1 || \
		{ cat $(KMOD_DIR)/build.log; exit 1; }
	$(Q)grep -v 'Skipping BTF\|^$$' $(KMOD_DIR)/build.log || true

.PHONY: kmod
kmod: $(KMOD_KO)
