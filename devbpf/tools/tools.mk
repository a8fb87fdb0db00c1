# Tools and policy attachment support (tools engineer):
#  - the shipped tools, clang -target bpf -> $(BUILD)/share/gpuext/tools/NAME.bpf.o
#  - libgxjit.so: the JIT as a shared library the shim dlopens on a cache miss
#    (the shim itself links no LLVM; shim/build.mk adds policy.c/devrt.c)
#  - gpuext tools (list/prepare/report) and gpuext-run --tool (cli/run_tool.c)
#  - make gpu-prep: fill the JIT cache in $(BUILD)/cache for the GPU machine
TOOL_NAMES := kernelretsnoop kernelretsnoop_all threadhist launchlate memtrace
TOOLS_DIR  := $(BUILD)/share/gpuext/tools
TOOL_OBJS  := $(patsubst %,$(TOOLS_DIR)/%.bpf.o,$(TOOL_NAMES))
TOOL_BPF_CFLAGS := -target bpf -O2 -g -Wall -Werror -I.
TOOL_BPF_HDRS := devbpf/tools/gx_tools.h devbpf/gdev_helpers.h devbpf/gdev_ctx.h

$(TOOLS_DIR)/%.bpf.o: devbpf/tools/%.bpf.c $(TOOL_BPF_HDRS)
	$(call msg,CLANG,$<)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CLANG) $(TOOL_BPF_CFLAGS) -c $< -o $@
# kernelretsnoop without its block sampling: every block of every launch
$(TOOLS_DIR)/kernelretsnoop_all.bpf.o: devbpf/tools/kernelretsnoop.bpf.c $(TOOL_BPF_HDRS)
	$(call msg,CLANG,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CLANG) $(TOOL_BPF_CFLAGS) -DGX_KRS_ALL -c $< -o $@

JITSO := $(BUILD)/lib/libgxjit.so
JITSO_OBJS := $(call objs,devbpf/tools/jitlib.c devbpf/tools/gx_pcache.c)
$(JITSO): $(JITSO_OBJS) $(JIT_LIB) $(DEVBPF_LIB) $(MAPS_LIB) $(COMMON_LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -shared -o $@ -Wl,-soname,libgxjit.so $(JITSO_OBJS) $(JIT_LIB) $(DEVBPF_LIB) $(MAPS_LIB) \
		$(COMMON_LIB) $(LDFLAGS) $(JIT_LDLIBS) $(DEVBPF_SO_LDLIBS)

LIBS_ALL += $(TOOL_OBJS) $(JITSO)

CLI_SRCS += cli/tools.c cli/tools_fmt.c cli/tools_dev.c cli/run_tool.c devbpf/tools/jitlib_open.c devbpf/tools/gx_pcache.c \
            devbpf/tools/gx_pmerge.c

# The JIT cache for the GPU machine (no LLVM there): the lead runs this
# before carrying build/; tests/gpu/tools.sh sets GPUEXT_CACHE_DIR to it.
GPU_CACHE := $(BUILD)/cache
.PHONY: gpu-prep
gpu-prep: all $(BUILD)/tests/gpu/tools_kern $(BUILD)/tests/gpu/tool_bench
	$(Q)rm -rf $(GPU_CACHE) && mkdir -p $(GPU_CACHE)
	$(Q)$(BUILD)/bin/gpuext tools prepare --cache-dir $(GPU_CACHE) --sm 90
	$(if $(GPU_PREP_POLICIES),$(Q)$(BUILD)/bin/gpuext tools prepare --cache-dir $(GPU_CACHE) --sm 90 $(GPU_PREP_POLICIES))

# GPU test programs (nvcc 13 here; static cudart runs on the H200).
$(BUILD)/tests/gpu/tools_kern: tests/gpu/tools_kern.cu
	$(call msg,NVCC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(NVCC) -O2 -arch=sm_90 -gencode arch=compute_90,code=compute_90 -o $@ $<
$(BUILD)/tests/gpu/tool_bench: bench/tool_bench.cu
	$(call msg,NVCC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(NVCC) -O2 -arch=sm_90 -gencode arch=compute_90,code=compute_90 -o $@ $<

# ---- tests ----
TOOLS_TEST := $(BUILD)/tests/tools
$(TOOLS_TEST)/test_pcache: $(call objs,tests/tools/test_pcache.c devbpf/tools/gx_pcache.c devbpf/tools/gx_pmerge.c) $(COMMON_LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $^ $(LDFLAGS)
# The tools' programs on simulated launches (native JIT and interpreter).
$(TOOLS_TEST)/test_tool_progs: $(call objs,tests/tools/test_tool_progs.c) $$(JIT_TEST_LIBS)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $^ $(LDFLAGS) $(JIT_LDLIBS) $(DEVBPF_SO_LDLIBS)
TEST_BINS += $(TOOLS_TEST)/test_tool_progs $(TOOL_OBJS)
TESTS     += "$(TOOLS_TEST)/test_tool_progs $(TOOLS_DIR)"
$(TOOLS_TEST)/%.sh: tests/tools/%.sh
	$(Q)mkdir -p $(dir $@) && cp $< $@ && chmod +x $@
TEST_BINS += $(TOOLS_TEST)/test_pcache $(TOOLS_TEST)/test_tools.sh \
             $(TOOLS_TEST)/test_tools_ptx.sh $(TOOLS_TEST)/test_attach.sh $(TOOLS_TEST)/test_attach_cache.sh
TESTS     += $(TOOLS_TEST)/test_pcache $(TOOLS_TEST)/test_tools.sh $(TOOLS_TEST)/test_tools_ptx.sh \
             $(TOOLS_TEST)/test_attach.sh $(TOOLS_TEST)/test_attach_cache.sh

# The attach test: the shim engineer's fake driver plus fakedev.c (memory).
TOOLS_FAKE := $(TOOLS_TEST)/fakecuda/libcuda.so.1
$(TOOLS_FAKE): tests/shim/fakecuda/fake.c $(BUILD)/gen/fakecuda/fake_gen.c tests/tools/fakedev.c
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -Wno-unused-parameter -shared -o $@ -Wl,-soname,libcuda.so.1 $^ -ldl -lpthread
$(TOOLS_TEST)/attach_app: tests/tools/attach_app.c devbpf/gx_devrt.h ptx-rewrite/gx_ptx.h $(COMMON_LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< -L$(STUB_LDIR) $(COMMON_LIB) -lcuda -ldl
TEST_BINS += $(TOOLS_FAKE) $(TOOLS_TEST)/attach_app
