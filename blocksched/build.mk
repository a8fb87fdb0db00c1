# blocksched/ — eBPF-scheduled persistent workers (docs/blocksched.md).
# Public header: blocksched/gx_blocksched.h. Products:
#  libgxblocksched.a  the launch side (linked into the shim), the device
#                     runtime's PTX (bs_rt.c through clang's NVPTX back end,
#                     embedded as a string: the GPU machine has no LLVM) and
#                     the schedule log's report (for `gpuext sched`);
#  share/gpuext/sched/NAME.bpf.o  the shipped policies (policies/*.bpf.c).
BS_GEN      := $(BUILD)/gen/blocksched
BS_SRCS     := blocksched/bs_launch.c blocksched/bs_parse.c blocksched/bs_guard.c blocksched/bs_mem.c blocksched/bs_log.c blocksched/bs_report.c \
               blocksched/bs_rt_text.c
BS_LIB      := $(BUILD)/lib/libgxblocksched.a
BS_POL_DIR  := $(BUILD)/share/gpuext/sched
BS_POLICIES := $(patsubst blocksched/policies/%.bpf.c,%,$(wildcard blocksched/policies/*.bpf.c))
BS_POL_OBJS := $(patsubst %,$(BS_POL_DIR)/%.bpf.o,$(BS_POLICIES))
BS_NVPTX_FLAGS := -target nvptx64-nvidia-cuda -march=sm_60 -O2 -ffreestanding -nostdlib \
                  -Wall -Wextra -Werror -I. -Iinclude

$(BS_GEN)/bs_rt.ptx: blocksched/bs_rt.c blocksched/bs_rt_internal.h include/gpuext/gx_work.h
	$(call msg,NVPTX,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CLANG) $(BS_NVPTX_FLAGS) -S $< -o $@
$(BS_GEN)/bs_rt_ptx.c: $(BS_GEN)/bs_rt.ptx blocksched/gen-rt.sh
	$(call msg,GEN,$@)
	$(Q)blocksched/gen-rt.sh $< $@
$(BUILD)/obj/blocksched/bs_rt_ptx.o: $(BS_GEN)/bs_rt_ptx.c
	$(call msg,CC,$<)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BS_LIB): $(call objs,$(BS_SRCS)) $(BUILD)/obj/blocksched/bs_rt_ptx.o
	$(archive)

# -mcpu=v3: 32-bit ALU, so a 32-bit division stays one (a 64-bit one is a
# long routine in PTX, and registers are what persistent kernels lack).
$(BS_POL_DIR)/%.bpf.o: blocksched/policies/%.bpf.c blocksched/policies/sched_common.h $(GDEV_HDRS)
	$(call bpf_compile,-mcpu=v3)

LIBS_ALL += $(BS_LIB) $(BS_POL_OBJS)
