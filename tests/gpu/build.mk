# tests/gpu: what the GPU run (tests/gpu/run.sh, on the H200) needs built
# here. `make gpu-prep` before carrying build/: the JIT cache for a machine
# without LLVM, the native back end's libraries packed, the GPU programs.
GPU_CACHE         := $(BUILD)/cache
# kernelretsnoop without its krs_counts map: tests/gpu/metrics.sh's A/B of
# the map's device cost (GPUEXT_TOOLS_DIR=$(BUILD)/tests/gpu/krs_nocount).
GPU_KRS_NOCOUNT   := $(BUILD)/tests/gpu/krs_nocount/kernelretsnoop.bpf.o
GPU_PREP_POLICIES := $(HB_DEVPF) $(BS_POL_OBJS) $(GPU_KRS_NOCOUNT)

$(GPU_KRS_NOCOUNT): tools/kernelretsnoop.bpf.c $(TOOL_HDRS)
	$(call bpf_compile,)

# GPU test programs (nvcc 13 here; static cudart runs on the H200).
$(BUILD)/tests/gpu/tools_kern: tests/gpu/tools_kern.cu
$(BUILD)/tests/gpu/tool_bench: bench/tool_bench.cu
$(BUILD)/tests/gpu/tools_kern $(BUILD)/tests/gpu/tool_bench:
	$(call msg,NVCC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(NVCC) -O2 -arch=sm_90 -gencode arch=compute_90,code=compute_90 -o $@ $<

# The tenants benchmark (tests/gpu/tenants.sh): SASS only, so under the shim
# its module passes through and both sides run the same code.
$(BUILD)/tests/gpu/tenants: bench/tenants.cu common/gx_cu_check.h
	$(call msg,NVCC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(NVCC) -O2 -I. -gencode arch=compute_90,code=sm_90 -o $@ $<

# tests/gpu/blocksched.sh: a program the shim rewrites (PTX only).
$(BUILD)/tests/gpu/sched_app: tests/gpu/sched_app.cu bench/sched_kernels.cu common/gx_cu_check.h
	$(call msg,NVCC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(NVCC) -O2 -gencode arch=compute_90,code=compute_90 -o $@ $<

# tests/gpu/attach_compile.sh: a loop `gpuext attach --sched` attaches to (PTX only).
$(BUILD)/tests/gpu/sched_live: tests/gpu/sched_live.cu bench/sched_kernels.cu common/gx_cu_check.h
	$(call msg,NVCC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(NVCC) -O2 -gencode arch=compute_90,code=compute_90 -o $@ $<

.PHONY: gpu-prep gpu-jitlibs
# tests/gpu/metrics.sh: Debian's libmicrohttpd beside the build, for a GPU
# host without libmicrohttpd12 (its gnutls and the rest Ubuntu has).
$(BUILD)/tests/gpu/mhd/libmicrohttpd.so.12:
	$(Q)mkdir -p $(dir $@) && cp -L /usr/lib/x86_64-linux-gnu/libmicrohttpd.so.12 $@

gpu-prep: $(BUILD)/tests/gpu/mhd/libmicrohttpd.so.12
gpu-prep: all $(BUILD)/tests/gpu/tools_kern $(BUILD)/tests/gpu/tool_bench $(BUILD)/tests/gpu/sched_app \
	  $(BUILD)/tests/gpu/sched_live $(GPU_PREP_POLICIES) gpu-jitlibs $(BUILD)/tests/gpu/tenants $(T_TN_OBJS) $(BUILD)/tests/shim/test_memlimit
	$(Q)rm -rf $(GPU_CACHE) && mkdir -p $(GPU_CACHE)
	$(Q)$(GPUEXT_BIN) tools prepare --cache-dir $(GPU_CACHE) --sm 90
	$(Q)$(GPUEXT_BIN) tools prepare --cache-dir $(GPU_CACHE) --sm 90 $(GPU_PREP_POLICIES)
	@# the JIT's A/B switch (tests/gpu/perf.sh runs the tools with it off too)
	@# and perf's route baseline (bench/empty_probe.bpf.o as a policy)
	$(Q)GX_JIT_FOLD=0 $(GPUEXT_BIN) tools prepare --cache-dir $(GPU_CACHE) --sm 90
	$(Q)$(GPUEXT_BIN) tools prepare --cache-dir $(GPU_CACHE) --sm 90 $(BUILD)/bench/empty_probe.bpf.o

# The libraries of the native back end the GPU machine lacks, packed for the
# native check of tests/gpu/hostpolicy.sh (scripts/pack-jit-libs.sh).
gpu-jitlibs: $(JITSO)
	$(Q)GX_JITLIB=$(JITSO) scripts/pack-jit-libs.sh $(BUILD)/share/jitlibs

# tests/gpu/install.sh: make dist's tarball and wheel, and a device policy
# the way a user prepares one on a build machine (compiled, JIT cache made
# here), in .carry/dist: the only things that GPU run uses.
GPU_DIST := .carry/dist
.PHONY: gpu-dist
gpu-dist: dist
	$(Q)rm -rf $(GPU_DIST) && mkdir -p $(GPU_DIST)/usercache
	$(Q)cp $(BUILD)/dist/gpuext-$(GX_VERSION)-linux-x86_64.tar.gz $(BUILD)/dist/gpuext-$(GX_VERSION)-*.whl \
		$(BUILD)/dist/gpuext-llvm-$(GX_VERSION)-linux-x86_64.tar.gz $(GPU_DIST)/
	$(Q)echo "$$(git rev-parse --short HEAD)$$(git diff --quiet HEAD || echo ' (+ uncommitted changes)')" >$(GPU_DIST)/commit
	$(Q)$(CLANG) $(BPF_CFLAGS) -c tests/gpu/install/blockcount.bpf.c -o $(GPU_DIST)/blockcount.bpf.o
	$(Q)$(GPUEXT_BIN) tools prepare --cache-dir $(GPU_DIST)/usercache --sm all $(GPU_DIST)/blockcount.bpf.o >/dev/null
	$(Q)echo "gpu-dist: $$(du -sh $(GPU_DIST) | cut -f1) in $(GPU_DIST)"
