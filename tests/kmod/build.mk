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

TEST_BINS += $(KT_DIR)/test_kmod_host $(KT_VM_BINS) $(HB_BINS)
TESTS     += $(KT_DIR)/test_kmod_host tests/kmod/test_kmod_build.sh tests/kmod/test_kmod_nvidia.sh \
             tests/kmod/test_kmod_qemu.sh
ifeq ($(HAVE_KDIR),1)
TEST_BINS += $(KMOD_KO)
endif

# `make fuzz` (on demand): the QEMU run with a million fuzzer calls.
.PHONY: kmod-fuzz
fuzz: kmod-fuzz
kmod-fuzz: tests
	$(Q)BUILD=$(BUILD) GX_KMOD_FUZZ=$${GX_KMOD_FUZZ:-1000000} GX_KMOD_VM_TIMEOUT=900 \
		scripts/run-tests.sh tests/kmod/test_kmod_qemu.sh
