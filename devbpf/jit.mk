# devbpf JIT (eBPF -> LLVM IR -> PTX / native) and the maps runtime.
#  libgxmaps.a: maps runtime + host helpers (no LLVM; shim, interpreter, CLI)
#  libgxjit.a:  the JIT (links libLLVM-19.so dynamically)
MAPS_SRCS := devbpf/maps.c devbpf/maps_dev.c devbpf/ring.c devbpf/gx_hosthelpers.c \
             devbpf/helpers/gx_helpers.c
MAPS_LIB  := $(BUILD)/lib/libgxmaps.a
JIT_SRCS  := devbpf/jit.c devbpf/jit_llvm.c devbpf/jit_ptx.c devbpf/jit_native.c devbpf/jit_object.c
JIT_LIB   := $(BUILD)/lib/libgxjit.a
HELPERS_BC := $(BUILD)/devbpf/gx_helpers.bc
HELPERS_BC_OBJ := $(BUILD)/obj/devbpf/helpers/helpers_bc.o

LLVM_INCDIR := $(shell $(LLVM_CONFIG) --includedir)
JIT_LDLIBS  := $(shell $(LLVM_CONFIG) --ldflags) \
               $(shell $(LLVM_CONFIG) --link-shared --libs core nvptxcodegen x86codegen orcjit passes bitreader linker) \
               -lpthread

$(call objs,$(JIT_SRCS)): CFLAGS += -isystem $(LLVM_INCDIR)

# Device helpers: C -> NVPTX bitcode, embedded with .incbin.
$(HELPERS_BC): devbpf/helpers/gx_helpers.c devbpf/helpers/gx_mapimpl.h devbpf/gx_devrt.h devbpf/gdev_ctx.h
	$(call msg,BC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CLANG) -target nvptx64-nvidia-cuda -march=sm_90 -O2 -Wall -Wextra -Werror \
		-ffreestanding -I. -Icommon -emit-llvm -c $< -o $@

$(HELPERS_BC_OBJ): devbpf/helpers/helpers_bc.S $(HELPERS_BC)
	$(call msg,AS,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -c -DGX_HELPERS_BC='"$(HELPERS_BC)"' $< -o $@

$(MAPS_LIB): $(call objs,$(MAPS_SRCS))
	$(call msg,AR,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(JIT_LIB): $(call objs,$(JIT_SRCS)) $(HELPERS_BC_OBJ)
	$(call msg,AR,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)rm -f $@ && ar rcs $@ $^

LIBS_ALL += $(MAPS_LIB) $(JIT_LIB)

# CLI: gpuext bpf jit, gpuext map list|dump
CLI_SRCS   += cli/map.c

# `gpuext bpf jit` is a plugin the CLI dlopens (cli/bpf.c), so the gpuext
# binary itself needs no LLVM (machines that run applications often lack it).
# It calls back into the executable (p_err, gx_json): gpuext links -rdynamic.
BPFJIT_PLUGIN := $(BUILD)/lib/gpuext-bpfjit.so
$(BPFJIT_PLUGIN): $(call objs,cli/bpf_jit.c) $(JIT_LIB) $(MAPS_LIB) $(DEVBPF_LIB) $(COMMON_LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -shared -o $@ $^ $(LDFLAGS) $(JIT_LDLIBS) $(DEVBPF_SO_LDLIBS)
LIBS_ALL += $(BPFJIT_PLUGIN)
CLI_LIBS   += $(MAPS_LIB) $(DEVBPF_LIB)

# Tests
JIT_TEST_LIBS = $(JIT_LIB) $(DEVBPF_LIB) $(MAPS_LIB) $(COMMON_LIB)
$(BUILD)/tests/test_jit: $(call objs,tests/devbpf/test_jit.c) $$(JIT_TEST_LIBS)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $^ $(LDFLAGS) $(JIT_LDLIBS) $(DEVBPF_SO_LDLIBS)
$(BUILD)/tests/test_maps: $(call objs,tests/devbpf/test_maps.c) $(MAPS_LIB) $(COMMON_LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $^ $(LDFLAGS) -lpthread
$(BUILD)/tests/test_ring: $(call objs,tests/devbpf/test_ring.c) $(MAPS_LIB) $(COMMON_LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $^ $(LDFLAGS) -lpthread
$(BUILD)/tests/devbpf/progs/%.bpf.o: tests/devbpf/progs/%.bpf.c devbpf/gdev_helpers.h devbpf/gdev_ctx.h
	$(call msg,CLANG,$<)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CLANG) -target bpf -O2 -g -Wall -Werror -Idevbpf -c $< -o $@
$(BUILD)/tests/test_bpf_jit_cli.sh: tests/devbpf/test_bpf_jit_cli.sh
	$(Q)mkdir -p $(dir $@) && cp $< $@ && chmod +x $@
TEST_BINS += $(BUILD)/tests/test_jit $(BUILD)/tests/test_maps $(BUILD)/tests/test_ring $(BUILD)/tests/test_bpf_jit_cli.sh \
             $(BUILD)/tests/devbpf/progs/jit_count.bpf.o $(BUILD)/tests/devbpf/progs/cfg_knob.bpf.o
TESTS     += $(BUILD)/tests/test_jit $(BUILD)/tests/test_maps $(BUILD)/tests/test_ring $(BUILD)/tests/test_bpf_jit_cli.sh

# GPU differential test inputs (tests/gpu/devbpf.sh runs them on the H200):
# policy/bench PTX, map specs and the interpreter's expected state (gpu_ref),
# the kernels' PTX (nvcc -rdc) and the driver-API harness (gcc, stub libcuda).
GPUT_DIR  := $(BUILD)/tests/devbpf/gpu
GPUT_REF  := $(BUILD)/tests/devbpf_gpu_ref
GPUT_OUT  := $(GPUT_DIR)/expected.txt
GPUT_HARN := $(GPUT_DIR)/devbpf_harness
GPUT_KPTX := $(GPUT_DIR)/kernels_check.ptx $(GPUT_DIR)/kernels_bench.ptx
$(GPUT_REF): $(call objs,tests/devbpf/gpu/gpu_ref.c tests/devbpf/gpu/gpu_common.c) $$(JIT_TEST_LIBS)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $^ $(LDFLAGS) $(JIT_LDLIBS) $(DEVBPF_SO_LDLIBS)
$(GPUT_OUT): $(GPUT_REF) $(BUILD)/tests/devbpf/progs/gpu_policies.bpf.o $(BUILD)/tests/devbpf/progs/jit_count.bpf.o
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(GPUT_REF) $(BUILD)/tests/devbpf/progs/gpu_policies.bpf.o \
		$(BUILD)/tests/devbpf/progs/jit_count.bpf.o $(GPUT_DIR) > $(GPUT_DIR)/gpu_ref.log
$(GPUT_DIR)/kernels_%.ptx: tests/gpu/devbpf_kernels.cu tests/devbpf/gpu/gpu_common.h devbpf/gdev_ctx.h
	$(call msg,NVCC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(NVCC) -arch=sm_90 -rdc=true -ptx -I. -DGX_KERNELS_$(shell echo $* | tr a-z A-Z) $< -o $@
$(GPUT_HARN): $(call objs,tests/gpu/devbpf_harness.c tests/devbpf/gpu/gpu_common.c) $(MAPS_LIB) $(COMMON_LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $^ $(LDFLAGS) -L$(CUDA_HOME)/lib64/stubs -lcuda -lpthread
BINS_ALL  += $(GPUT_OUT)
ifneq ($(wildcard $(NVCC)),) # the kernels and the harness need the CUDA toolkit
BINS_ALL  += $(GPUT_KPTX) $(GPUT_HARN)
endif
TESTS     += "$(GPUT_REF) $(BUILD)/tests/devbpf/progs/gpu_policies.bpf.o $(BUILD)/tests/devbpf/progs/jit_count.bpf.o $(GPUT_DIR)"

# The maps runtime under ASan + UBSan (leaks, overflows in the shm/ring code).
MAPS_ASAN := $(BUILD)/tests/test_maps_asan
$(MAPS_ASAN): tests/devbpf/test_maps.c $(MAPS_SRCS) $(COMMON_SRCS) $(wildcard devbpf/*.h devbpf/helpers/*.h)
	$(call msg,ASAN,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -std=gnu11 -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined \
		-fno-omit-frame-pointer -D_GNU_SOURCE -I. -Icommon -o $@ tests/devbpf/test_maps.c \
		$(MAPS_SRCS) $(COMMON_SRCS) -lpthread
TEST_BINS += $(MAPS_ASAN)
TESTS     += $(MAPS_ASAN)
# The ring protocol under ASan + UBSan too (consumers' copies, wrap, PADs).
RING_ASAN := $(BUILD)/tests/test_ring_asan
$(RING_ASAN): tests/devbpf/test_ring.c $(MAPS_SRCS) $(COMMON_SRCS) $(wildcard devbpf/*.h devbpf/helpers/*.h)
	$(call msg,ASAN,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -std=gnu11 -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined \
		-fno-omit-frame-pointer -D_GNU_SOURCE -I. -Icommon -o $@ tests/devbpf/test_ring.c \
		$(MAPS_SRCS) $(COMMON_SRCS) -lpthread
TEST_BINS += $(RING_ASAN)
TESTS     += $(RING_ASAN)
