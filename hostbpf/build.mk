# hostbpf/ — the host policies: gx_NAME.bpf.c (struct_ops gpu_mem_ops /
# gpu_sched_ops, include/gpuext/gpu_ext.h) and gx_NAME.c, its loader into
# gpuext.ko ($(BUILD)/bin/gx_NAME, over gx_loader.c), compiled against a
# vmlinux.h generated here from the kernel's BTF. The same objects run in
# the shim without the module (hostexec/).
HB_DIR      := $(BUILD)/hostbpf
VMLINUX_BTF ?= $(firstword $(wildcard $(KDIR)/vmlinux /sys/kernel/btf/vmlinux))
HB_POLICIES := fifo lfu mru quota seq stride tree prio
HB_BINS     := $(patsubst %,$(BUILD)/bin/gx_%,$(HB_POLICIES))
# Tenant scheduling (task_launch, run by the shim; docs/tenants.md). gpuext.ko
# never calls task_launch; one loader for the three (gx_tenant -o OBJ) lets
# the kernel's verifier check them against the module (the QEMU test).
HB_TENANT   := lcfirst tbucket lcslo
HB_OBJS     := $(patsubst %,$(HB_DIR)/gx_%.bpf.o,$(HB_POLICIES) $(HB_TENANT))
HB_BPF_FLAGS := -D__TARGET_ARCH_x86 -I$(HB_DIR) -Ihostbpf -idirafter /usr/include
# libbpf linked in statically: the loaders ship to hosts that have none.
HB_LDLIBS   := -l:libbpf.a -lelf -lz
HB_BPF_DEPS := include/gpuext/gpu_ext.h hostbpf/gx_common.bpf.h $(HB_DIR)/vmlinux.h

HB_TENANT_LOADER := $(BUILD)/bin/gx_tenant
ifneq ($(VMLINUX_BTF),)
BINS_ALL    += $(HB_BINS) $(HB_TENANT_LOADER)
endif
LIBS_ALL    += $(HB_OBJS)

$(HB_DIR)/vmlinux.h:
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c >$@.tmp && mv $@.tmp $@

$(HB_DIR)/%.bpf.o: hostbpf/%.bpf.c $(HB_BPF_DEPS)
	$(call bpf_compile,$(HB_BPF_FLAGS))

# bpftool 7.5 writes skeletons for libbpf 1.5 (bpf_map_skeleton.link, used
# only for auto-attach); libbpf-dev is 1.4, and the loaders attach
# struct_ops themselves, so that one line is dropped.
$(HB_DIR)/%.skel.h: $(HB_DIR)/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $* | sed '/map->link = /d' >$@.tmp && mv $@.tmp $@

HB_LOADER_OBJ = $(BUILD)/obj/hostbpf/gx_loader.o
$(HB_LOADER_OBJ) $(patsubst %,$(BUILD)/obj/hostbpf/gx_%.o,$(HB_POLICIES)): ALL_CFLAGS += -I$(HB_DIR) -Ihostbpf
$(foreach p,$(HB_POLICIES),$(eval $(BUILD)/obj/hostbpf/gx_$(p).o: $(HB_DIR)/gx_$(p).skel.h))

$(HB_BINS): $(BUILD)/bin/gx_%: $(BUILD)/obj/hostbpf/gx_%.o $(HB_LOADER_OBJ)
	$(call link,$(HB_LDLIBS))
$(BUILD)/obj/hostbpf/gx_tenant.o: ALL_CFLAGS += -Ihostbpf
$(HB_TENANT_LOADER): $(BUILD)/obj/hostbpf/gx_tenant.o $(HB_LOADER_OBJ)
	$(call link,$(HB_LDLIBS))
.SECONDARY: $(HB_OBJS) $(patsubst %.bpf.o,%.skel.h,$(HB_OBJS))
