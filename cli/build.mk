# cli/ — the gpuext command (one file per subcommand, listed in main.c's
# table), gpuext-run (= gpuext run) and gpuext-ptxas (ptxas with the
# process's device policies compiled in, for Triton and XLA). The CLI uses the parts' public
# headers only; this file is the one place that lists what it links.
CLI_SRCS   := cli/main.c cli/run.c cli/run_tool.c cli/ptx.c cli/fatbin.c cli/bpf.c cli/map.c cli/tools.c cli/tenant.c \
              cli/sched.c cli/doctor.c cli/cdi.c cli/exporter_exec.c cli/attach.c cli/cache.c
CLI_LIBS   := $(TOOLS_LIB) $(BS_LIB) $(HOSTEXEC_LIB) $(ATTACH_LIB) $(TENANT_LIB) $(IMAGE_LIB) $(PTX_LIB) $(BPF_LIB) $(COMMON_LIB)
GPUEXT_BIN := $(BUILD)/bin/gpuext
GPUEXT_RUN := $(BUILD)/bin/gpuext-run
GPUEXT_PTXAS := $(BUILD)/bin/gpuext-ptxas
# XLA finds ptxas in <CUDA data folder>/bin: a folder whose bin/ptxas is
# gpuext-ptxas (its libdevice, absent here, XLA takes from its other roots).
PTXAS_CUDA_DIR := $(BUILD)/share/gpuext/cuda

# -rdynamic: the plugin below calls back into the executable (p_err, gx_json).
$(GPUEXT_BIN): $(call objs,$(CLI_SRCS)) $(CLI_LIBS)
	$(call link,-rdynamic $(IMAGE_LDLIBS) $(BPF_LDLIBS) -ldl)

$(GPUEXT_RUN): $(call objs,cli/run.c cli/run_main.c cli/run_tool.c) $(HOSTEXEC_LIB) $(TENANT_LIB) $(COMMON_LIB)
	$(link)

$(GPUEXT_PTXAS): $(call objs,cli/ptxas.c) $(HOSTEXEC_LIB) $(ATTACH_LIB) $(PTX_LIB) $(BPF_LIB) $(COMMON_LIB)
	$(call link,-ldl)
$(PTXAS_CUDA_DIR)/bin/ptxas: | $(GPUEXT_PTXAS)
	$(Q)mkdir -p $(@D) && ln -sf ../../../../bin/gpuext-ptxas $@

# `gpuext bpf jit` is a plugin the CLI dlopens (cli/bpf.c), so the gpuext
# binary itself needs no LLVM (machines that run applications often lack it).
BPFJIT_PLUGIN := $(BUILD)/lib/gpuext-bpfjit.so
$(BPFJIT_PLUGIN): $(call objs,cli/bpf_jit.c) $(JIT_LIB) $(BPF_LIB) $(COMMON_LIB)
	$(call link_so,$(LLVM_RPATH) $(JIT_LDLIBS) $(BPF_SO_LDLIBS))

# The Prometheus exporter: its own program, because libmicrohttpd is not in
# the set of libraries the other binaries may need (scripts/dist-check.sh).
GPUEXT_EXPORTER := $(BUILD)/bin/gpuext-exporter
$(GPUEXT_EXPORTER): $(call objs,cli/exporter.c) $(TENANT_LIB) $(BPF_LIB) $(COMMON_LIB)
	$(call link,-lmicrohttpd -lm -lpthread)

BINS_ALL += $(GPUEXT_EXPORTER)
BINS_ALL += $(GPUEXT_BIN) $(GPUEXT_RUN) $(GPUEXT_PTXAS) $(PTXAS_CUDA_DIR)/bin/ptxas
LIBS_ALL += $(BPFJIT_PLUGIN)
