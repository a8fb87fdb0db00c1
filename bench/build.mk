# bench/: benchmarks. hook_overhead (GPU): runtime and JIT cost of the
# ptx-rewrite passes on kernels of hook_kernels.cu; run by tests/gpu/passes.sh.
BENCH_HOOK      := $(BUILD)/bench/hook_overhead
# (Library paths spelled out: this file is included before the parts that define them.)
BENCH_HOOK_PTX  := $(BUILD)/bench/hook_kernels.ptx

$(BENCH_HOOK_PTX): bench/hook_kernels.cu
	$(call msg,NVCC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(NVCC) -arch=sm_90 -ptx $< -o $@

$(BENCH_HOOK): $(call objs,bench/hook_overhead.c) $(BUILD)/lib/libgxptx.a $(BUILD)/lib/libgxcommon.a | $(BENCH_HOOK_PTX)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $^ $(LDFLAGS) -L$(CUDA_HOME)/lib64/stubs -lcuda

BINS_ALL += $(BENCH_HOOK) $(BENCH_HOOK_PTX)

# For `hook_overhead --regs` on the GPU (tests/gpu/passes.sh), which has no
# LLVM: tool_bench's kernels as PTX and the tools' handlers JIT'd to PTX here.
# (gpuext bpf jit loads gpuext-bpfjit.so: a prerequisite, or a parallel
# clean build runs it before the plugin exists.)
BENCH_TB_PTX := $(BUILD)/bench/tool_bench.ptx
$(BENCH_TB_PTX): bench/tool_bench.cu
	$(call msg,NVCC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(NVCC) -arch=sm_90 -ptx $< -o $@
# A BPF object's device programs JIT'd to PTX (the log kept beside it).
define bench_jit_ptx
	$(call msg,JIT,$@)
	$(Q)$(BUILD)/bin/gpuext bpf jit --target ptx $< -o $@ >$@.log 2>&1 || { cat $@.log; exit 1; }
endef
$(BUILD)/bench/tool_%.ptx: $(BUILD)/share/gpuext/tools/%.bpf.o $(BUILD)/bin/gpuext $(BUILD)/lib/gpuext-bpfjit.so
	$(bench_jit_ptx)
BINS_ALL += $(BENCH_TB_PTX) $(BUILD)/bench/tool_launchlate.ptx $(BUILD)/bench/tool_threadhist.ptx
# The empty device probe (bench/empty_probe.bpf.c) through the user's path,
# JIT'd here for hook_overhead's "entry+exit empty eBPF" row. (Compiled as
# the tools are: TOOL_BPF_CFLAGS, devbpf/tools/tools.mk, is set by the time
# the recipe runs; the headers are listed here, this file is read first.)
$(BUILD)/bench/empty_probe.bpf.o: bench/empty_probe.bpf.c devbpf/gdev_helpers.h devbpf/gdev_ctx.h
	$(call msg,CLANG,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CLANG) $(TOOL_BPF_CFLAGS) -c $< -o $@
$(BUILD)/bench/policy_%.ptx: $(BUILD)/bench/%.bpf.o $(BUILD)/bin/gpuext $(BUILD)/lib/gpuext-bpfjit.so
	$(bench_jit_ptx)
BINS_ALL += $(BUILD)/bench/empty_probe.bpf.o $(BUILD)/bench/policy_empty_probe.ptx

# launch_ab: the shim's added launch cost inside one process (real vs shim
# entry points, same CUfunction, alternating rounds); run by
# bench/launch_overhead.sh on the GPU and by tests/shim/run.sh on the fake
# driver. Linked with -ldl only: it dlopens libcuda.so.1 itself.
BENCH_AB := $(BUILD)/bench/launch_ab
$(BENCH_AB): $(call objs,bench/launch_ab.c)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $^ $(LDFLAGS) -ldl -lm
BINS_ALL += $(BENCH_AB)
