# hostbpf: struct_ops host policies (clang -target bpf against a vmlinux.h
# generated here from the kernel's BTF), their skeleton loaders in
# $(BUILD)/bin/gx_NAME, and the /dev/gpuext client library for the shim.
HB_DIR      := $(BUILD)/hostbpf
VMLINUX_BTF ?= $(firstword $(wildcard $(KDIR)/vmlinux /sys/kernel/btf/vmlinux))
HB_POLICIES := fifo lfu mru quota seq stride tree prio
HB_BINS     := $(patsubst %,$(BUILD)/bin/gx_%,$(HB_POLICIES))
HB_OBJS     := $(patsubst %,$(HB_DIR)/gx_%.bpf.o,$(HB_POLICIES))
HB_BPF_FLAGS := -target bpf -O2 -g -Wall -Werror -D__TARGET_ARCH_x86 \
                -I$(HB_DIR) -Ihostbpf -idirafter /usr/include
HB_LDLIBS   := -lbpf -lelf -lz

KCLIENT_LIB := $(BUILD)/lib/libgxkmod.a
LIBS_ALL    += $(KCLIENT_LIB)
ifneq ($(VMLINUX_BTF),)
BINS_ALL    += $(HB_BINS)
endif

$(KCLIENT_LIB): $(call objs,hostbpf/gx_kmod_client.c)
	$(call msg,AR,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)ar rcs $@ $^

$(HB_DIR)/vmlinux.h:
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c >$@.tmp && mv $@.tmp $@

HB_BPF_DEPS := hostbpf/gpu_ext.h hostbpf/gx_common.bpf.h $(HB_DIR)/vmlinux.h
$(HB_DIR)/%.bpf.o: hostbpf/%.bpf.c $(HB_BPF_DEPS)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(HB_BPF_FLAGS) -c $< -o $@
$(HB_DIR)/%.bpf.o: tests/kmod/%.bpf.c $(HB_BPF_DEPS)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(HB_BPF_FLAGS) -c $< -o $@

# bpftool 7.5 writes skeletons for libbpf 1.5 (bpf_map_skeleton.link, used
# only for auto-attach); libbpf-dev is 1.4, and the loaders attach
# struct_ops themselves, so that one line is dropped.
$(HB_DIR)/%.skel.h: $(HB_DIR)/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $* | sed '/map->link = /d' >$@.tmp && mv $@.tmp $@

HB_LOADER_OBJ = $(BUILD)/obj/hostbpf/gx_loader.o
$(HB_LOADER_OBJ) $(patsubst %,$(BUILD)/obj/hostbpf/gx_%.o,$(HB_POLICIES)) \
  $(BUILD)/obj/tests/kmod/gx_bad.o: ALL_CFLAGS += -I$(HB_DIR) -Ihostbpf
$(foreach p,$(HB_POLICIES),$(eval $(BUILD)/obj/hostbpf/gx_$(p).o: $(HB_DIR)/gx_$(p).skel.h))

$(HB_BINS): $(BUILD)/bin/gx_%: $(BUILD)/obj/hostbpf/gx_%.o $(HB_LOADER_OBJ)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $^ $(LDFLAGS) $(HB_LDLIBS)
.SECONDARY: $(HB_OBJS) $(HB_DIR)/gx_bad.bpf.o $(patsubst %.bpf.o,%.skel.h,$(HB_OBJS)) $(HB_DIR)/gx_bad.skel.h
include hostbpf/hostexec.mk
