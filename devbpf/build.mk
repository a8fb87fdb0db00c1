# devbpf/ — device eBPF: policy objects (loader, verifier, interpreter), the
# maps runtime and the JIT. Public header: devbpf/gx_bpf.h. Two archives:
#  libgxbpf.a  everything without LLVM (the shim and the CLI link it);
#  libgxjit.a  the JIT (eBPF -> LLVM IR -> PTX / native), which needs
#              libLLVM-19 and reaches the shim only as libgxjit.so (attach/).
BPF_MAPS_SRCS := devbpf/maps.c devbpf/maps_dev.c devbpf/ring.c devbpf/gx_hosthelpers.c \
                 devbpf/helpers/gx_helpers.c
BPF_SRCS := devbpf/sections.c devbpf/object.c devbpf/btf.c devbpf/loader.c devbpf/reloc.c \
            devbpf/verifier.c devbpf/verifier_cfg.c devbpf/verifier_scalar.c \
            devbpf/verifier_mem.c devbpf/verifier_helpers.c devbpf/disasm.c devbpf/interp.c \
            $(BPF_MAPS_SRCS)
BPF_LIB  := $(BUILD)/lib/libgxbpf.a
# What a device policy includes (the shared ABI headers).
GDEV_HDRS := include/gpuext/gdev_helpers.h include/gpuext/gdev_ctx.h
# The loader reads ELF with libelf and BTF itself (btf.c): no libbpf, so the
# shim, which loads host policies through it, runs where libbpf is absent.
BPF_LDLIBS    := -lelf -lz
BPF_SO_LDLIBS := -lelf -lz
# Libraries that link LLVM look for it in gpuext-llvm/ beside them first
# (make dist's JIT add-on ships it there); DT_RPATH, not RUNPATH, so the
# dependencies of libLLVM are searched there too.
LLVM_RPATH    := -Wl,--disable-new-dtags,-rpath,'$$ORIGIN/gpuext-llvm'

JIT_SRCS       := devbpf/jit.c devbpf/jit_llvm.c devbpf/jit_ptx.c devbpf/jit_native.c devbpf/jit_object.c
JIT_LIB        := $(BUILD)/lib/libgxjit.a
HELPERS_BC     := $(BUILD)/devbpf/gx_helpers.bc
HELPERS_BC_OBJ := $(BUILD)/obj/devbpf/helpers/helpers_bc.o
LLVM_INCDIR    := $(shell $(LLVM_CONFIG) --includedir)
JIT_LDLIBS     := $(shell $(LLVM_CONFIG) --ldflags) \
                  $(shell $(LLVM_CONFIG) --link-shared --libs core nvptxcodegen x86codegen orcjit passes bitreader linker) \
                  -lpthread

$(call objs,$(JIT_SRCS)): CFLAGS += -isystem $(LLVM_INCDIR)

$(BPF_LIB): $(call objs,$(BPF_SRCS))
	$(archive)

# Device helpers: C -> NVPTX bitcode, embedded with .incbin.
$(HELPERS_BC): devbpf/helpers/gx_helpers.c devbpf/helpers/mapimpl_internal.h include/gpuext/gx_devrt.h \
		include/gpuext/gdev_ctx.h
	$(call msg,BC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CLANG) -target nvptx64-nvidia-cuda -march=sm_90 -O2 -Wall -Wextra -Werror \
		-ffreestanding -I. -Iinclude -emit-llvm -c $< -o $@

$(HELPERS_BC_OBJ): devbpf/helpers/helpers_bc.S $(HELPERS_BC)
	$(call msg,AS,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -c -DGX_HELPERS_BC='"$(HELPERS_BC)"' $< -o $@

$(JIT_LIB): $(call objs,$(JIT_SRCS)) $(HELPERS_BC_OBJ)
	$(archive)

LIBS_ALL += $(BPF_LIB) $(JIT_LIB)
