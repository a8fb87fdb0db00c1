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

# ---- tests: host-side checks, and the QEMU run of everything in one boot ----
KT_DIR  := $(BUILD)/tests/kmod
KT_VM_BINS := $(KT_DIR)/gx_vmtest $(KT_DIR)/gx_kmod_fuzz $(KT_DIR)/gx_client_test $(KT_DIR)/gx_bad
$(BUILD)/obj/tests/kmod/gx_bad.o: $(HB_DIR)/gx_bad.skel.h

$(KT_DIR)/gx_vmtest: $(call objs,tests/kmod/gx_vmtest.c)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $^ $(LDFLAGS)
$(KT_DIR)/gx_kmod_fuzz: $(call objs,tests/kmod/gx_kmod_fuzz.c)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $^ $(LDFLAGS)
$(KT_DIR)/gx_client_test: $(call objs,tests/kmod/gx_client_test.c) $(KCLIENT_LIB) $(COMMON_LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $^ $(LDFLAGS)
$(KT_DIR)/gx_bad: $(BUILD)/obj/tests/kmod/gx_bad.o $(HB_LOADER_OBJ)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $^ $(LDFLAGS) $(HB_LDLIBS)

$(KT_DIR)/test_kmod_host: $(call objs,tests/kmod/test_kmod_host.c) $(KCLIENT_LIB) $(COMMON_LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $^ $(LDFLAGS)

# gx_consumer.ko: the QEMU test's stand-in for nvidia-uvm/nvidia taking and
# putting gx_hooks (load/unload order). Built like gpuext.ko, in a copy.
KT_KO_DIR  := $(KT_DIR)/ko
KT_KO      := $(KT_KO_DIR)/gx_consumer.ko
KT_KO_SRCS := tests/kmod/gx_consumer.c tests/kmod/Kbuild kmod/gpuext_backend.h \
              $(filter %/gpu_ext.h,$(KMOD_SRCS))

$(KT_KO): $(KT_KO_SRCS)
	$(call msg,KBUILD,$@)
	$(Q)mkdir -p $(KT_KO_DIR)
	$(Q)cp -p $(KT_KO_SRCS) $(KT_KO_DIR)/
	$(Q)+$(MAKE) -s -C $(KDIR) M=$(abspath $(KT_KO_DIR)) CC=$(KCC) modules >$(KT_KO_DIR)/build.log 2>&1 || \
		{ cat $(KT_KO_DIR)/build.log; exit 1; }
	$(Q)grep -v 'Skipping BTF\|^$$' $(KT_KO_DIR)/build.log || true

$(KT_DIR)/%.sh: tests/kmod/%.sh
	$(Q)mkdir -p $(dir $@) && cp $< $@ && chmod +x $@

TEST_BINS += $(KT_DIR)/test_kmod_host $(KT_DIR)/test_kmod_build.sh $(KT_DIR)/test_kmod_qemu.sh \
             $(KT_DIR)/test_kmod_nvidia.sh $(KT_VM_BINS) $(HB_BINS)
TESTS     += $(KT_DIR)/test_kmod_host $(KT_DIR)/test_kmod_build.sh \
             $(KT_DIR)/test_kmod_nvidia.sh $(KT_DIR)/test_kmod_qemu.sh
ifeq ($(HAVE_KDIR),1)
TEST_BINS += $(KMOD_KO) $(KT_KO)
endif

# `make fuzz` (on demand): the QEMU run with a million fuzzer calls.
.PHONY: kmod-fuzz
fuzz: kmod-fuzz
kmod-fuzz: tests
	$(Q)BUILD=$(BUILD) GX_KMOD_FUZZ=$${GX_KMOD_FUZZ:-1000000} GX_KMOD_VM_TIMEOUT=900 \
		scripts/run-tests.sh $(KT_DIR)/test_kmod_qemu.sh
