# bench/ — benchmarks (docs say how each is run; results in bench/results/).
#  hook_overhead     runtime and JIT cost of the ptx-rewrite passes on the
#                    kernels of hook_kernels.cu (GPU; tests/gpu/passes.sh)
#  ptx_throughput    MB/s of parse / emit / rewrite (`make bench-ptx`)
#  hostexec_cost     CPU cost of the host-policy executor per event
#  launch_ab         the shim's added launch cost inside one process
#  memlimit_cost     the allocation path with and without a tenant memory limit (GPU; tests/gpu/limits.sh)
#  probe_ab          the threadhist block probe taken apart on two short
#                    barrier kernels (GPU; tests/gpu/probeab.sh; under ncu:
#                    bench/probe_ab_ncu.sh)
#  sched_bench       block scheduling: native launch vs each schedule policy
#                    on imbalanced and balanced kernels (GPU; tests/gpu/blocksched.sh)
BENCH_HOOK     := $(BUILD)/bench/hook_overhead
BENCH_HOOK_PTX := $(BUILD)/bench/hook_kernels.ptx
BENCH_TB_PTX   := $(BUILD)/bench/tool_bench.ptx
PTX_BENCH      := $(BUILD)/bench/ptx_throughput
BENCH_HX       := $(BUILD)/bench/hostexec_cost
BENCH_AB       := $(BUILD)/bench/launch_ab

$(BUILD)/bench/%.ptx: bench/%.cu
	$(call msg,NVCC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(NVCC) -arch=sm_90 -ptx $< -o $@

$(BENCH_HOOK): $(call objs,bench/hook_overhead.c) $(BS_LIB) $(PTX_LIB) $(COMMON_LIB) | $(BENCH_HOOK_PTX)
	$(call link,-L$(STUB_LDIR) -lcuda)

# For `hook_overhead --regs` on the GPU, which has no LLVM: the tools'
# handlers and the empty probe (bench/empty_probe.bpf.c, compiled as the
# tools are) JIT'd to PTX here. gpuext bpf jit loads gpuext-bpfjit.so: a
# prerequisite, or a parallel clean build runs it before the plugin exists.
define bench_jit_ptx
	$(call msg,JIT,$@)
	$(Q)$(GPUEXT_BIN) bpf jit --target ptx $< -o $@ >$@.log 2>&1 || { cat $@.log; exit 1; }
endef
$(BUILD)/bench/tool_%.ptx: $(TOOLS_DIR)/%.bpf.o $(GPUEXT_BIN) $(BPFJIT_PLUGIN)
	$(bench_jit_ptx)
$(BUILD)/bench/empty_probe.bpf.o: bench/empty_probe.bpf.c $(GDEV_HDRS)
	$(bpf_compile)
$(BUILD)/bench/policy_%.ptx: $(BUILD)/bench/%.bpf.o $(GPUEXT_BIN) $(BPFJIT_PLUGIN)
	$(bench_jit_ptx)

$(PTX_BENCH): $(call objs,bench/ptx_throughput.c) $(PTX_LIB) $(COMMON_LIB)
	$(link)

# sched_bench: block scheduling, native vs each policy (GPU; tests/gpu/blocksched.sh).
BENCH_SCHED     := $(BUILD)/bench/sched_bench
BENCH_SCHED_PTX := $(BUILD)/bench/sched_kernels.ptx
$(BENCH_SCHED): $(call objs,bench/sched_bench.c) $(BS_LIB) $(PTX_LIB) $(ATTACH_LIB) $(BPF_LIB) $(COMMON_LIB) \
                | $(BENCH_SCHED_PTX)
	$(call link,-L$(STUB_LDIR) -lcuda)

# jitlib_open.o: the native back end dlopens libgxjit.so.
$(BENCH_HX): $(call objs,bench/hostexec_cost.c) $(HOSTEXEC_LIB) $(ATTACH_LIB) $(BPF_LIB) $(COMMON_LIB)
	$(call link,-lelf -lz -ldl)

# The allocation path with and without a memory limit (tests/gpu/limits.sh).
BENCH_ML := $(BUILD)/bench/memlimit_cost
$(BENCH_ML): $(call objs,bench/memlimit_cost.c)
	$(call link,-L$(STUB_LDIR) -lcuda)

# probe_ab: the kernels as nvcc makes them and the variants of the probe
# (bench/probe_ab_variants.py; the GPU machine has no LLVM to JIT threadhist).
BENCH_PAB     := $(BUILD)/bench/probe_ab
BENCH_PAB_DIR := $(BUILD)/bench/probe_ab_ptx
$(BUILD)/bench/probe_ab_kernels.ptx: bench/tool_bench.cu
$(BENCH_PAB): $(call objs,bench/probe_ab.c) $(COMMON_LIB)
	$(call link,-L$(STUB_LDIR) -lcuda)
$(BENCH_PAB_DIR)/nat.ptx: $(BUILD)/bench/probe_ab_kernels.ptx bench/probe_ab_variants.py $(GPUEXT_BIN) \
		$(BPFJIT_PLUGIN) $(TOOLS_DIR)/threadhist.bpf.o $(TOOLS_DIR)/threadhist_lw.bpf.o $(TOOLS_DIR)/threadhist_w1.bpf.o
	$(call msg,GEN,$(BENCH_PAB_DIR))
	$(Q)rm -rf $(BENCH_PAB_DIR) && python3 bench/probe_ab_variants.py $(GPUEXT_BIN) $(TOOLS_DIR) $< $(BENCH_PAB_DIR)

# PTX for tests/gpu/probeab.sh to disassemble on the GPU machine (this one
# has ptxas but no cuobjdump): memtrace in its golden kernel (why a warp's
# store reaches the site as 1 + 31 lanes, GPU run 90) and memtrace_gate in
# tool_bench (why its reduce did not finish).
BENCH_SASS_IN := $(BUILD)/bench/sass_in
$(BENCH_SASS_IN)/memtrace_golden.ptx: tests/gpu/memtrace/golden.cu $(BENCH_TB_PTX) $(GPUEXT_BIN) $(BPFJIT_PLUGIN) \
		$(TOOLS_DIR)/memtrace.bpf.o $(TOOLS_DIR)/memtrace_gate.bpf.o
	$(call msg,GEN,$(BENCH_SASS_IN))
	$(Q)mkdir -p $(BENCH_SASS_IN)
	$(Q)$(NVCC) -arch=sm_90 -ptx $< -o $(BENCH_SASS_IN)/golden.orig
	$(Q)$(GPUEXT_BIN) ptx rewrite --policy $(TOOLS_DIR)/memtrace.bpf.o $(BENCH_SASS_IN)/golden.orig -o $@ 2>/dev/null
	$(Q)$(GPUEXT_BIN) ptx rewrite --policy $(TOOLS_DIR)/memtrace_gate.bpf.o --sample 1 $(BENCH_SASS_IN)/golden.orig \
		-o $(BENCH_SASS_IN)/memtrace_gate_golden_full.ptx 2>/dev/null
	$(Q)$(GPUEXT_BIN) ptx rewrite --policy $(TOOLS_DIR)/memtrace_gate.bpf.o --sample 16 $(BENCH_SASS_IN)/golden.orig \
		-o $(BENCH_SASS_IN)/memtrace_gate_golden_16.ptx 2>/dev/null
	$(Q)$(GPUEXT_BIN) ptx rewrite --policy $(TOOLS_DIR)/memtrace_gate.bpf.o --sample 1024 $(BENCH_TB_PTX) \
		-o $(BENCH_SASS_IN)/memtrace_gate_tool_bench.ptx 2>/dev/null

# Linked with -ldl only: it dlopens libcuda.so.1 itself.
$(BENCH_AB): $(call objs,bench/launch_ab.c)
	$(call link,-ldl -lm)

BINS_ALL += $(BENCH_HOOK) $(BENCH_HOOK_PTX) $(BENCH_TB_PTX) $(BUILD)/bench/tool_launchlate.ptx \
            $(BUILD)/bench/tool_threadhist.ptx $(BUILD)/bench/empty_probe.bpf.o \
            $(BUILD)/bench/policy_empty_probe.ptx $(PTX_BENCH) $(BENCH_HX) $(BENCH_AB) $(BENCH_SCHED) \
            $(BENCH_SCHED_PTX) $(BENCH_ML) $(BENCH_PAB) $(BENCH_PAB_DIR)/nat.ptx $(BENCH_SASS_IN)/memtrace_golden.ptx

# `make bench-ptx`: rewrite throughput over the corpus.
.PHONY: bench-ptx
bench-ptx: $(PTX_BENCH) $(GPUEXT_BIN)
	$(Q)BUILD=$(BUILD) tests/ptx-rewrite/corpus.sh | $(PTX_BENCH) -r 21
