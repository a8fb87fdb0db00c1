# tests/devbpf: the interpreter, the verifier's annotated corpus (built for
# the default cpu and for v4), the loader on good and malformed objects, the
# JIT (differential: interpreter vs native vs PTX through ptxas), the maps
# runtime and rings (also under ASan), the CLI, the fuzzer run briefly, and
# the inputs of the GPU differential test (tests/gpu/devbpf.sh).
T_BPF := $(BUILD)/tests/devbpf
$(T_BPF)/test_interp $(T_BPF)/test_verifier $(T_BPF)/test_loader: \
$(T_BPF)/%: $(BUILD)/obj/tests/devbpf/%.o $(BPF_LIB) $(COMMON_LIB)
	$(call link,$(BPF_LDLIBS))
$(T_BPF)/test_jit: $(call objs,tests/devbpf/test_jit.c) $(JIT_LIB) $(BPF_LIB) $(COMMON_LIB)
	$(call link,$(JIT_LDLIBS) $(BPF_SO_LDLIBS))
$(T_BPF)/test_maps $(T_BPF)/test_ring: $(T_BPF)/%: $(BUILD)/obj/tests/devbpf/%.o $(BPF_LIB) $(COMMON_LIB)
	$(call link,-lpthread)
# The maps runtime and the ring protocol under ASan + UBSan.
$(T_BPF)/test_maps_asan $(T_BPF)/test_ring_asan: \
$(T_BPF)/%_asan: tests/devbpf/%.c $(BPF_MAPS_SRCS) $(COMMON_SRCS) $(wildcard devbpf/*.h devbpf/helpers/*.h)
	$(call link_asan,-lpthread)

# Verifier corpus: annotated programs; the same built for cpu v4 (ALU32/
# JMP32, sign extension, gotol): every verdict must hold there too.
VCORPUS_SRCS := $(wildcard tests/devbpf/verifier/*.bpf.c)
VCORPUS_OBJS := $(patsubst tests/devbpf/%.bpf.c,$(T_BPF)/%.bpf.o,$(VCORPUS_SRCS))
VCORPUS_V4   := $(patsubst tests/devbpf/verifier/%.bpf.c,$(T_BPF)/verifier-v4/%.bpf.o,$(VCORPUS_SRCS))
$(T_BPF)/verifier/%.bpf.o: tests/devbpf/verifier/%.bpf.c tests/devbpf/verifier/gx_test_bpf.h $(GDEV_HDRS)
	$(call bpf_compile,-Itests/devbpf/verifier)
$(T_BPF)/verifier-v4/%.bpf.o: tests/devbpf/verifier/%.bpf.c tests/devbpf/verifier/gx_test_bpf.h $(GDEV_HDRS)
	$(call bpf_compile,-Itests/devbpf/verifier -mcpu=v4)

# Loader: one good object and the malformed variants of bad.bpf.c.
LDR_DIR   := $(T_BPF)/loader
LDR_BAD_N := 1 2 3 4 5 6 7 8 9 10 11 12 13
LDR_OBJS  := $(LDR_DIR)/good.bpf.o $(foreach n,$(LDR_BAD_N),$(LDR_DIR)/bad-$(n).bpf.o)
$(LDR_DIR)/good.bpf.o: tests/devbpf/loader/good.bpf.c $(GDEV_HDRS)
	$(bpf_compile)
$(LDR_DIR)/bad-%.bpf.o: tests/devbpf/loader/bad.bpf.c $(GDEV_HDRS)
	$(call bpf_compile,-DVARIANT=$*)

$(T_BPF)/progs/%.bpf.o: tests/devbpf/progs/%.bpf.c $(GDEV_HDRS)
	$(bpf_compile)

# Objects small on disk and huge once flattened, generated, never committed
# (tests/devbpf/bpf_bomb.h: test_bpf_cli.sh, the fuzzer's seeds).
$(T_BPF)/gen_bpf_bomb: $(call objs,tests/devbpf/gen_bpf_bomb.c)
	$(link)

# libFuzzer target for loader + verifier + interpreter (clang, ASan+UBSan).
# `make test` runs it for a few seconds; `make fuzz` for GX_FUZZ_TIME (300 s).
FUZZ_BPF     := $(BUILD)/fuzz/fuzz_bpf_loader
GX_FUZZ_TIME ?= 300
$(FUZZ_BPF): tests/devbpf/fuzz_loader.c $(BPF_SRCS) $(COMMON_SRCS) $(wildcard devbpf/*.h)
	$(call link_fuzz,$(BPF_LDLIBS))
fuzz: fuzz-bpf-loader
.PHONY: fuzz-bpf-loader
fuzz-bpf-loader: $(FUZZ_BPF) $(VCORPUS_OBJS) $(LDR_OBJS) $(HB_OBJS)
	$(Q)BUILD=$(BUILD) GX_FUZZ_TIME=$(GX_FUZZ_TIME) tests/devbpf/fuzz_bpf_loader.sh

# GPU differential test inputs (tests/gpu/devbpf.sh runs them on the H200):
# policy/bench PTX, map specs and the interpreter's expected state (gpu_ref),
# the kernels' PTX (nvcc -rdc) and the driver-API harness (gcc, stub libcuda).
GPUT_DIR  := $(T_BPF)/gpu
GPUT_REF  := $(GPUT_DIR)/gpu_ref
GPUT_OUT  := $(GPUT_DIR)/expected.txt
GPUT_HARN := $(GPUT_DIR)/devbpf_harness
GPUT_KPTX := $(GPUT_DIR)/kernels_check.ptx $(GPUT_DIR)/kernels_bench.ptx
GPUT_PROGS := $(T_BPF)/progs/gpu_policies.bpf.o $(T_BPF)/progs/jit_count.bpf.o
$(GPUT_REF): $(call objs,tests/devbpf/gpu/gpu_ref.c tests/devbpf/gpu/gpu_common.c) $(JIT_LIB) $(BPF_LIB) $(COMMON_LIB)
	$(call link,$(JIT_LDLIBS) $(BPF_SO_LDLIBS))
$(GPUT_OUT): $(GPUT_REF) $(GPUT_PROGS)
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(GPUT_REF) $(GPUT_PROGS) $(GPUT_DIR) > $(GPUT_DIR)/gpu_ref.log
$(GPUT_DIR)/kernels_%.ptx: tests/gpu/devbpf_kernels.cu tests/devbpf/gpu/gpu_common.h include/gpuext/gdev_ctx.h
	$(call msg,NVCC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(NVCC) -arch=sm_90 -rdc=true -ptx -I. -Iinclude -DGX_KERNELS_$(shell echo $* | tr a-z A-Z) $< -o $@
$(GPUT_HARN): $(call objs,tests/gpu/devbpf_harness.c tests/devbpf/gpu/gpu_common.c) $(BPF_LIB) $(COMMON_LIB)
	$(call link,-L$(STUB_LDIR) -lcuda -lpthread)
BINS_ALL  += $(GPUT_OUT)
ifneq ($(wildcard $(NVCC)),) # the kernels and the harness need the CUDA toolkit
BINS_ALL  += $(GPUT_KPTX) $(GPUT_HARN)
endif

TEST_BINS += $(T_BPF)/test_interp $(T_BPF)/test_verifier $(T_BPF)/test_loader $(T_BPF)/test_jit \
             $(T_BPF)/test_maps $(T_BPF)/test_ring $(T_BPF)/test_maps_asan $(T_BPF)/test_ring_asan \
             $(VCORPUS_OBJS) $(VCORPUS_V4) $(LDR_OBJS) $(FUZZ_BPF) $(T_BPF)/progs/jit_count.bpf.o \
             $(T_BPF)/progs/cfg_knob.bpf.o $(T_BPF)/gen_bpf_bomb
TESTS     += $(T_BPF)/test_interp "$(T_BPF)/test_verifier $(T_BPF)/verifier" \
             "$(T_BPF)/test_verifier $(T_BPF)/verifier-v4" "$(T_BPF)/test_loader $(LDR_DIR)" \
             tests/devbpf/fuzz_bpf_loader.sh tests/devbpf/test_bpf_cli.sh $(T_BPF)/test_jit $(T_BPF)/test_maps \
             $(T_BPF)/test_ring tests/devbpf/test_bpf_jit_cli.sh "$(GPUT_REF) $(GPUT_PROGS) $(GPUT_DIR)" \
             $(T_BPF)/test_maps_asan $(T_BPF)/test_ring_asan
