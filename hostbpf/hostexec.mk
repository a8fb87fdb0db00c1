# hostexec: the user-space executor of hostbpf struct_ops policies
# (libgxhostexec.a, used by the shim) and its CPU test.
HOSTEXEC_SRCS := hostbpf/hx_btf.c hostbpf/hx_load.c hostbpf/hx_verify.c hostbpf/hx_maps.c hostbpf/hx_run.c \
                 hostbpf/hx_native.c hostbpf/hx_guard.c
HOSTEXEC_LIB  := $(BUILD)/lib/libgxhostexec.a
LIBS_ALL      += $(HOSTEXEC_LIB)

$(HOSTEXEC_LIB): $(call objs,$(HOSTEXEC_SRCS))
	$(call msg,AR,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)rm -f $@ && ar rcs $@ $^

TEST_BINS += $(BUILD)/tests/test_hostexec
TESTS     += $(BUILD)/tests/test_hostexec
# jitlib_open.o: the native back end dlopens libgxjit.so (build/lib, next to ../tests).
$(BUILD)/tests/test_hostexec: $(call objs,tests/hostbpf/test_hostexec.c devbpf/tools/jitlib_open.c) $(HOSTEXEC_LIB) $(MAPS_LIB) $(DEVBPF_LIB) $(COMMON_LIB) $(HB_OBJS) $(HB_DIR)/gx_bad.bpf.o $(JITSO)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $(filter %.o,$(filter-out %.bpf.o,$^)) $(HOSTEXEC_LIB) $(MAPS_LIB) $(DEVBPF_LIB) $(COMMON_LIB) -lelf -lz -ldl $(LDFLAGS)

# No policy crashes the application: constant knobs, faults (test_hostsafety.c).
TEST_BINS += $(BUILD)/tests/test_hostexec_safety
TESTS     += "$(BUILD)/tests/test_hostexec_safety $(HB_DIR)"
$(BUILD)/tests/test_hostexec_safety: $(call objs,tests/hostbpf/test_hostsafety.c devbpf/tools/jitlib_open.c) $(HOSTEXEC_LIB) $(MAPS_LIB) $(DEVBPF_LIB) $(COMMON_LIB) $(HB_DIR)/hx_cfgknob.bpf.o $(JITSO)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $(filter %.o,$(filter-out %.bpf.o,$^)) $(HOSTEXEC_LIB) $(MAPS_LIB) $(DEVBPF_LIB) $(COMMON_LIB) -lelf -lz -ldl $(LDFLAGS)

HX_TEST_OBJS := $(HB_DIR)/hx_unsafe.bpf.o $(HB_DIR)/hx_loop.bpf.o $(HB_DIR)/hx_prioset.bpf.o \
                $(HB_DIR)/hx_cfgknob.bpf.o
$(HB_DIR)/hx_%.bpf.o: tests/hostbpf/hx_%.bpf.c $(HB_BPF_DEPS)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(HB_BPF_FLAGS) -c $< -o $@
$(BUILD)/tests/test_hostexec: $(HX_TEST_OBJS)
.SECONDARY: $(HX_TEST_OBJS)
SHIM_HOSTEXEC_LIBS := $(HOSTEXEC_LIB) $(KCLIENT_LIB) $(MAPS_LIB) $(DEVBPF_LIB)

# End to end through the shim and the fake driver (shim/tests.mk).
$(BUILD)/tests/hostbpf/test_hostpolicy_shim: tests/hostbpf/test_hostpolicy_shim.c tests/gx_test.h
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< -L$(dir $(CUDA_STUB)) -lcuda -ldl -lpthread
$(BUILD)/tests/hostbpf/test_hostpolicy.sh: tests/hostbpf/test_hostpolicy.sh $(BUILD)/tests/hostbpf/test_hostpolicy_shim $(HB_DIR)/gx_seq.bpf.o
	$(Q)mkdir -p $(dir $@) && cp $< $@ && chmod +x $@
# Stand-in for gpuext.ko's ioctl channel (LD_PRELOAD), for the kmod-mode checks.
$(BUILD)/tests/hostbpf/fake_gpuext.so: tests/hostbpf/fake_gpuext.c kmod/gpuext_uapi.h
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -shared -fPIC -o $@ $< -ldl
$(BUILD)/tests/hostbpf/test_hostpolicy.sh: $(BUILD)/tests/hostbpf/fake_gpuext.so
# Device requests (gdev_mem_prefetch records) into the host policy, on the
# tools' fake driver with a device tool attached.
$(BUILD)/tests/hostbpf/devreq_app: tests/hostbpf/devreq_app.c devbpf/gx_devrt.h tests/gx_test.h $(COMMON_LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< -L$(STUB_LDIR) $(COMMON_LIB) -lcuda -ldl
$(BUILD)/tests/hostbpf/test_hostpolicy.sh: $(BUILD)/tests/hostbpf/devreq_app $(TOOLS_FAKE) $(HB_DIR)/devprefetch.bpf.o $(JITSO)
TEST_BINS += $(BUILD)/tests/hostbpf/devreq_app
TEST_BINS += $(BUILD)/tests/hostbpf/test_hostpolicy_shim $(BUILD)/tests/hostbpf/test_hostpolicy.sh \
             $(BUILD)/tests/hostbpf/fake_gpuext.so
TESTS     += $(BUILD)/tests/hostbpf/test_hostpolicy.sh

# A device policy that sends gdev_mem_prefetch requests (tests/gpu/hostpolicy.sh):
# JIT'd here into the GPU machine's cache by `make gpu-prep` (no LLVM there).
HB_DEVPF := $(HB_DIR)/devprefetch.bpf.o
$(HB_DEVPF): tests/hostbpf/devprefetch.bpf.c devbpf/gdev_helpers.h devbpf/gdev_ctx.h
	$(call msg,CLANG,$<)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CLANG) -target bpf -O2 -g -Wall -Werror -I. -c $< -o $@
LIBS_ALL += $(HB_DEVPF)
GPU_PREP_POLICIES += $(HB_DEVPF)
gpu-prep: $(HB_DEVPF) gpu-jitlibs

# The libraries of the native back end the GPU machine lacks, packed for the
# native check of tests/gpu/hostpolicy.sh (scripts/pack-jit-libs.sh).
.PHONY: gpu-jitlibs
gpu-jitlibs: $(BUILD)/lib/libgxjit.so
	$(Q)GX_JITLIB=$(BUILD)/lib/libgxjit.so scripts/pack-jit-libs.sh $(BUILD)/share/jitlibs

# CPU cost of the executor per event, interpreter vs native (bench/hostexec_cost.c).
BENCH_HX := $(BUILD)/bench/hostexec_cost
$(BENCH_HX): $(call objs,bench/hostexec_cost.c devbpf/tools/jitlib_open.c) $(HOSTEXEC_LIB) $(MAPS_LIB) $(DEVBPF_LIB) $(COMMON_LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $(filter %.o,$^) $(HOSTEXEC_LIB) $(MAPS_LIB) $(DEVBPF_LIB) $(COMMON_LIB) -lelf -lz -ldl $(LDFLAGS)
BINS_ALL += $(BENCH_HX)

# Unsafe-policy corpus: each object must be refused by the user-space
# verifier with the message its GX_EXPECT names (test_hostexec).
HX_UNSAFE_OBJS := $(patsubst tests/hostbpf/unsafe/%.bpf.c,$(HB_DIR)/unsafe/%.bpf.o,$(wildcard tests/hostbpf/unsafe/*.bpf.c))
$(HB_DIR)/unsafe/%.bpf.o: tests/hostbpf/unsafe/%.bpf.c tests/hostbpf/unsafe/hx_expect.h $(HB_BPF_DEPS)
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CLANG) $(HB_BPF_FLAGS) -Itests/hostbpf/unsafe -c $< -o $@
$(BUILD)/tests/test_hostexec: $(HX_UNSAFE_OBJS)
.SECONDARY: $(HX_UNSAFE_OBJS)
$(BUILD)/tests/hostbpf/test_hostpolicy.sh: $(HX_UNSAFE_OBJS)
$(BUILD)/tests/hostbpf/test_hostpolicy.sh: $(HB_DIR)/hx_prioset.bpf.o
# tests/gpu/hostpolicy.sh uses it on the GPU machine (stream priorities)
LIBS_ALL += $(HB_DIR)/hx_prioset.bpf.o

# Recorded event streams: record_app under the shim records one; replayed
# under every policy, native vs interpreted (tests/hostbpf/test_replay.sh).
$(BUILD)/tests/hostbpf/record_app: tests/hostbpf/record_app.c
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< -L$(dir $(CUDA_STUB)) -lcuda
$(BUILD)/tests/hostbpf/test_replay.sh: tests/hostbpf/test_replay.sh $(BUILD)/tests/hostbpf/record_app $(BUILD)/tests/test_hostexec \
		$(HB_OBJS) $(HB_DIR)/hx_prioset.bpf.o $(JITSO)
	$(Q)mkdir -p $(dir $@) && cp $< $@ && chmod +x $@
TEST_BINS += $(BUILD)/tests/hostbpf/record_app $(BUILD)/tests/hostbpf/test_replay.sh
TESTS     += $(BUILD)/tests/hostbpf/test_replay.sh
