# tests/kmod: gpuext.ko's build (BTF, struct_ops, kfuncs), the host-side
# client, the NVIDIA patch, and one QEMU boot of Debian's 6.12 kernel that
# runs the module tests, the loaders and a 100k-call ioctl fuzz.
KT_DIR     := $(BUILD)/tests/kmod
KT_VM_BINS := $(KT_DIR)/gx_vmtest $(KT_DIR)/gx_kmod_fuzz $(KT_DIR)/gx_client_test $(KT_DIR)/gx_bad

# A policy the module must refuse, and its loader.
$(HB_DIR)/gx_bad.bpf.o: tests/kmod/gx_bad.bpf.c $(HB_BPF_DEPS)
	$(call bpf_compile,$(HB_BPF_FLAGS))
$(BUILD)/obj/tests/kmod/gx_bad.o: ALL_CFLAGS += -I$(HB_DIR) -Ihostbpf
$(BUILD)/obj/tests/kmod/gx_bad.o: $(HB_DIR)/gx_bad.skel.h
$(KT_DIR)/gx_bad: $(BUILD)/obj/tests/kmod/gx_bad.o $(HB_LOADER_OBJ)
	$(call link,$(HB_LDLIBS))
.SECONDARY: $(HB_DIR)/gx_bad.bpf.o $(HB_DIR)/gx_bad.skel.h

$(KT_DIR)/gx_vmtest $(KT_DIR)/gx_kmod_fuzz: $(KT_DIR)/%: $(BUILD)/obj/tests/kmod/%.o
	$(link)
$(KT_DIR)/gx_client_test $(KT_DIR)/test_kmod_host: $(KT_DIR)/%: $(BUILD)/obj/tests/kmod/%.o $(KCLIENT_LIB) $(COMMON_LIB)
	$(link)

# gx_consumer.ko: the QEMU test's stand-in for nvidia-uvm/nvidia taking and
# putting gx_hooks (load/unload order). Built like gpuext.ko, in a copy.
KT_KO_DIR  := $(KT_DIR)/ko
KT_KO      := $(KT_KO_DIR)/gx_consumer.ko
KT_KO_SRCS := tests/kmod/gx_consumer.c tests/kmod/Kbuild kmod/gpuext_backend.h
$(KT_KO): $(KT_KO_SRCS) $(KMOD_HDRS)
	$(call msg,KBUILD,$@)
	$(Q)mkdir -p $(KT_KO_DIR)
	$(Q)cp -p $(KT_KO_SRCS) $(KT_KO_DIR)/
	$(Q)+$(MAKE) -s -C $(KDIR) M=$(abspath $(KT_KO_DIR)) CC=$(KCC) GX_INCLUDE=$(abspath include) \
		modules >$(KT_KO_DIR)/build.log 2>&1 || { cat $(KT_KO_DIR)/build.log; exit 1; }
	$(Q)grep -v 'Skipping BTF\|^$$' $(KT_KO_DIR)/build.log || true

TEST_BINS += $(KT_DIR)/test_kmod_host $(KT_VM_BINS) $(HB_BINS)
TESTS     += $(KT_DIR)/test_kmod_host tests/kmod/test_kmod_build.sh tests/kmod/test_kmod_cycles.sh \
             tests/kmod/test_kmod_nvidia.sh \
             tests/kmod/test_kmod_qemu.sh
ifeq ($(HAVE_KDIR),1)
TEST_BINS += $(KMOD_KO) $(KT_KO)
endif

# `make fuzz` (on demand): the QEMU run with a million fuzzer calls.
.PHONY: kmod-fuzz
fuzz: kmod-fuzz
kmod-fuzz: tests
	$(Q)BUILD=$(BUILD) GX_KMOD_FUZZ=$${GX_KMOD_FUZZ:-1000000} GX_KMOD_VM_TIMEOUT=900 \
		scripts/run-tests.sh tests/kmod/test_kmod_qemu.sh
