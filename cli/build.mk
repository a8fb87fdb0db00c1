# cli/ — the gpuext command (one file per subcommand, listed in main.c's
# table) and gpuext-run (= gpuext run). The CLI uses the parts' public
# headers only; this file is the one place that lists what it links.
CLI_SRCS   := cli/main.c cli/run.c cli/run_tool.c cli/ptx.c cli/fatbin.c cli/bpf.c cli/map.c cli/tools.c \
              cli/sched.c
CLI_LIBS   := $(TOOLS_LIB) $(BS_LIB) $(ATTACH_LIB) $(IMAGE_LIB) $(PTX_LIB) $(BPF_LIB) $(COMMON_LIB)
GPUEXT_BIN := $(BUILD)/bin/gpuext
GPUEXT_RUN := $(BUILD)/bin/gpuext-run

# -rdynamic: the plugin below calls back into the executable (p_err, gx_json).
$(GPUEXT_BIN): $(call objs,$(CLI_SRCS)) $(CLI_LIBS)
	$(call link,-rdynamic $(IMAGE_LDLIBS) $(BPF_LDLIBS) -ldl)

$(GPUEXT_RUN): $(call objs,cli/run.c cli/run_main.c cli/run_tool.c) $(COMMON_LIB)
	$(link)

# `gpuext bpf jit` is a plugin the CLI dlopens (cli/bpf.c), so the gpuext
# binary itself needs no LLVM (machines that run applications often lack it).
BPFJIT_PLUGIN := $(BUILD)/lib/gpuext-bpfjit.so
$(BPFJIT_PLUGIN): $(call objs,cli/bpf_jit.c) $(JIT_LIB) $(BPF_LIB) $(COMMON_LIB)
	$(call link_so,$(JIT_LDLIBS) $(BPF_SO_LDLIBS))

BINS_ALL += $(GPUEXT_BIN) $(GPUEXT_RUN)
LIBS_ALL += $(BPFJIT_PLUGIN)
