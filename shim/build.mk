# shim/ — the drop-in libcuda.so.1 (see docs/shim.md).
# The image parser (libgximage.a, shim/image.mk) is another part's: included
# if present; until then shim/noimage.c (PTX text only) stands in.
-include shim/image.mk

CUDA_STUB   ?= $(CUDA_HOME)/lib64/stubs/libcuda.so
SHIM_GEN    := $(BUILD)/gen/shim
SHIM_LIB    := $(BUILD)/lib/libcuda.so.1
SHIM_SRCS   := shim/core.c shim/real.c shim/procaddr.c shim/init.c shim/events.c \
               shim/tables.c shim/load.c shim/module.c shim/link.c shim/launch.c \
               shim/graph.c shim/mem.c shim/passes_env.c shim/hostpolicy.c shim/hostkmod.c shim/persist.c \
               shim/mcache.c shim/rdc.c
# Device policies (tools engineer): attach, device runtime, JIT cache.
SHIM_SRCS   += shim/policy.c shim/devrt.c devbpf/tools/gx_pcache.c devbpf/tools/gx_pmerge.c devbpf/tools/jitlib_open.c
ifeq ($(IMAGE_LIB),)
SHIM_SRCS   += shim/noimage.c
IMAGE_LDLIBS ?=
endif
SHIM_OBJS   := $(call objs,$(SHIM_SRCS)) $(BUILD)/obj/shim/lazy.o $(BUILD)/obj/shim/launch_fast.o \
               $(SHIM_GEN)/gx_tramp.o
SHIM_CFLAGS := -I$(SHIM_GEN)

# One stamp for the three generated files (a multi-target rule would run twice).
$(SHIM_GEN)/.stamp: shim/gen-syms.sh shim/driver-extra.syms $(CUDA_STUB) $(CUDA_HOME)/include/cuda.h
	$(call msg,GEN,$(SHIM_GEN))
	$(Q)shim/gen-syms.sh $(CUDA_STUB) $(CUDA_HOME)/include $(CC) $(SHIM_GEN)
	$(Q)touch $@
$(SHIM_GEN)/gx_syms.h $(SHIM_GEN)/gx_tramp.S $(SHIM_GEN)/syms.list $(SHIM_GEN)/gx_syms.inc: $(SHIM_GEN)/.stamp

$(call objs,$(SHIM_SRCS)): CFLAGS += $(SHIM_CFLAGS)
$(call objs,$(SHIM_SRCS)): $(SHIM_GEN)/gx_syms.h

$(BUILD)/obj/shim/lazy.o: shim/lazy.S
	$(call msg,AS,$<)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -c $< -o $@

$(BUILD)/obj/shim/launch_fast.o: shim/launch_fast.S $(SHIM_GEN)/.stamp
	$(call msg,AS,$<)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -Wa,-I$(SHIM_GEN) -c $< -o $@

$(SHIM_GEN)/gx_tramp.o: $(SHIM_GEN)/gx_tramp.S
	$(call msg,AS,$<)
	$(Q)$(CC) -c $< -o $@

# -Bsymbolic: our own references bind to our definitions (never interposed).
# The version script only limits exports: the real driver has no symbol
# versions, so neither do we.
$(SHIM_LIB): $(SHIM_OBJS) shim/libcuda.map $(PTX_LIB) $(COMMON_LIB) $(IMAGE_LIB) $(SHIM_HOSTEXEC_LIBS) $(MAPS_LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -shared -o $@ -Wl,-soname,libcuda.so.1 -Wl,-Bsymbolic -Wl,-z,now \
		-Wl,--version-script=shim/libcuda.map $(SHIM_OBJS) $(IMAGE_LIB) $(PTX_LIB) \
		$(SHIM_HOSTEXEC_LIBS) $(MAPS_LIB) $(COMMON_LIB) -lelf \
		$(LDFLAGS) $(IMAGE_LDLIBS) -ldl -lpthread
	$(Q)ln -sf libcuda.so.1 $(BUILD)/lib/libcuda.so

LIBS_ALL += $(SHIM_LIB)

include shim/tests.mk

# gpuext-run --audit: LD_AUDIT module redirecting absolute-path libcuda opens.
SHIM_AUDIT := $(BUILD)/lib/gpuext-audit.so
$(SHIM_AUDIT): shim/audit.c
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -shared -o $@ $< -ldl
LIBS_ALL += $(SHIM_AUDIT)

# gpuext run / gpuext-run
CLI_SRCS += cli/run.c
GPUEXT_RUN := $(BUILD)/bin/gpuext-run
$(GPUEXT_RUN): $(call objs,cli/run.c cli/run_main.c cli/run_tool.c) $(COMMON_LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $^ $(LDFLAGS)
BINS_ALL += $(GPUEXT_RUN)
