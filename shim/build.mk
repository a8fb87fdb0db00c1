# shim/ — the drop-in libcuda.so.1 (docs/shim.md): every driver symbol
# exported (generated from the toolkit's stub and cuda.h), the intercepted
# families, module loading through image/ and ptx-rewrite/, host policies
# through hostexec/ or gpuext.ko (hostkmod/), device policies through
# attach/. Its public interface is the driver API plus the host events,
# include/gpuext/gx_events.h. Also gpuext-audit.so (gpuext-run --audit).
CUDA_STUB   ?= $(CUDA_HOME)/lib64/stubs/libcuda.so
STUB_LDIR   := $(dir $(CUDA_STUB))
SHIM_GEN    := $(BUILD)/gen/shim
SHIM_LIB    := $(BUILD)/lib/libcuda.so.1
SHIM_SRCS   := $(filter-out shim/audit.c,$(sort $(wildcard shim/*.c)))
SHIM_OBJS   := $(call objs,$(SHIM_SRCS)) $(BUILD)/obj/shim/lazy.o $(BUILD)/obj/shim/launch_fast.o \
               $(SHIM_GEN)/gx_tramp.o
# What the shim links, in link order (a library before those it uses).
SHIM_LIBS   := $(IMAGE_LIB) $(PTX_LIB) $(BS_LIB) $(HOSTEXEC_LIB) $(TENANT_LIB) $(ATTACH_LIB) $(KCLIENT_LIB) $(BPF_LIB) $(COMMON_LIB)

# One stamp for the generated files (a multi-target rule would run twice).
$(SHIM_GEN)/.stamp: shim/gen-syms.sh shim/driver-extra.syms $(CUDA_STUB) $(CUDA_HOME)/include/cuda.h
	$(call msg,GEN,$(SHIM_GEN))
	$(Q)shim/gen-syms.sh $(CUDA_STUB) $(CUDA_HOME)/include $(CC) $(SHIM_GEN)
	$(Q)touch $@
$(SHIM_GEN)/gx_syms.h $(SHIM_GEN)/gx_tramp.S $(SHIM_GEN)/syms.list $(SHIM_GEN)/gx_syms.inc: $(SHIM_GEN)/.stamp

$(call objs,$(SHIM_SRCS)): CFLAGS += -I$(SHIM_GEN)
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
# versions, so neither do we. -z nodelete: the shim runs threads (the live
# attach control thread from cuInit, the device runtime's drainer, the
# tenant poller); a program that dlcloses libcuda.so.1 (static cudart at
# exit) must not unmap the code they run (tests/shim/run.sh's cudart_probe
# crashed in 1 of 40 runs on a thread's dlsym).
SHIM_LDLIBS = -Wl,-soname,libcuda.so.1 -Wl,-Bsymbolic -Wl,-z,now -Wl,-z,defs -Wl,-z,nodelete \
              -Wl,--version-script=shim/libcuda.map \
              $(IMAGE_LDLIBS) -lelf -ldl -lpthread
$(SHIM_LIB): $(SHIM_OBJS) $(SHIM_LIBS) shim/libcuda.map
	$(call link_so,$(SHIM_LDLIBS))
	$(Q)ln -sf libcuda.so.1 $(BUILD)/lib/libcuda.so

# gpuext-run --audit: LD_AUDIT module redirecting absolute-path libcuda opens.
SHIM_AUDIT := $(BUILD)/lib/gpuext-audit.so
$(SHIM_AUDIT): $(call objs,shim/audit.c)
	$(call link_so,-ldl)

LIBS_ALL += $(SHIM_LIB) $(SHIM_AUDIT)
