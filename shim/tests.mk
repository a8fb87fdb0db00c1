# CPU tests of the shim, against a fake driver built here (test-only).
FAKE_DIR   := $(BUILD)/tests/fakecuda
FAKE_LIB   := $(FAKE_DIR)/libcuda.so.1
STUB_LDIR  := $(dir $(CUDA_STUB))

$(BUILD)/gen/fakecuda/fake_gen.c: tests/shim/fakecuda/gen.sh $(SHIM_GEN)/syms.list
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)tests/shim/fakecuda/gen.sh $(SHIM_GEN)/syms.list >$@.tmp && mv $@.tmp $@

$(FAKE_LIB): tests/shim/fakecuda/fake.c $(BUILD)/gen/fakecuda/fake_gen.c
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -Wno-unused-parameter -shared -o $@ -Wl,-soname,libcuda.so.1 $^ -ldl -lpthread

SHIM_TEST_BINS := $(BUILD)/tests/shim/test_shim $(BUILD)/tests/shim/test_nodriver $(BUILD)/tests/shim/test_disable \
                  $(BUILD)/tests/shim/test_persist

$(BUILD)/tests/shim/%: tests/shim/%.c shim/gx_events.h tests/gx_test.h tests/image/bomb.h
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< -L$(STUB_LDIR) -lcuda -ldl -lpthread

$(BUILD)/tests/shim/run.sh: tests/shim/run.sh
	$(Q)mkdir -p $(dir $@) && cp $< $@ && chmod +x $@

TEST_BINS += $(FAKE_LIB) $(SHIM_TEST_BINS) $(BUILD)/tests/shim/run.sh
TESTS     += $(BUILD)/tests/shim/run.sh

SHIM_TEST_BINS += $(BUILD)/tests/shim/test_audit
$(BUILD)/tests/shim/test_run.sh: tests/shim/test_run.sh
	$(Q)mkdir -p $(dir $@) && cp $< $@ && chmod +x $@
TEST_BINS += $(BUILD)/tests/shim/test_audit $(BUILD)/tests/shim/test_run.sh
TESTS     += $(BUILD)/tests/shim/test_run.sh

# A real nvcc program with static cudart (the CUDA 13 default).
$(BUILD)/tests/shim/cudart_probe: tests/shim/cudart_probe.cu
	$(call msg,NVCC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(NVCC) -arch=sm_80 -o $@ $<
TEST_BINS += $(BUILD)/tests/shim/cudart_probe

# The rewritten-module cache (shim/mcache.c).
$(BUILD)/tests/shim/test_mcache.sh: tests/shim/test_mcache.sh
	$(Q)mkdir -p $(dir $@) && cp $< $@ && chmod +x $@
TEST_BINS += $(BUILD)/tests/shim/mcache_load $(BUILD)/tests/shim/test_mcache.sh
TESTS     += $(BUILD)/tests/shim/test_mcache.sh

# -rdc: a two-unit program (also in the GPU corpus) and the wrapper test.
$(BUILD)/tests/shim/rdc_app: tests/gpu/shim/rdc_a.cu tests/gpu/shim/rdc_b.cu tests/gpu/shim/common.h
	$(call msg,NVCC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(NVCC) -rdc=true -gencode arch=compute_80,code=[sm_80,compute_80] -o $@ tests/gpu/shim/rdc_a.cu tests/gpu/shim/rdc_b.cu
TEST_BINS += $(BUILD)/tests/shim/rdc_app $(BUILD)/tests/shim/test_rdc

# Several devices and contexts (tests/shim/test_multi.c, issue 7).
SHIM_TEST_BINS += $(BUILD)/tests/shim/test_multi $(BUILD)/tests/shim/test_multi_tool
$(BUILD)/tests/shim/test_multi.sh: tests/shim/test_multi.sh
	$(Q)mkdir -p $(dir $@) && cp $< $@ && chmod +x $@
TEST_BINS += $(BUILD)/tests/shim/test_multi $(BUILD)/tests/shim/test_multi_tool $(BUILD)/tests/shim/test_multi.sh
TESTS     += $(BUILD)/tests/shim/test_multi.sh
# The tools' reports with several GPUs (synthetic data, tests/tools/mkmulti.c).
$(BUILD)/tests/tools/mkmulti: $(call objs,tests/tools/mkmulti.c) $(MAPS_LIB) $(COMMON_LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $^ $(LDFLAGS)
$(BUILD)/tests/tools/test_tools_multi.sh: tests/tools/test_tools_multi.sh
	$(Q)mkdir -p $(dir $@) && cp $< $@ && chmod +x $@
TEST_BINS += $(BUILD)/tests/tools/mkmulti $(BUILD)/tests/tools/test_tools_multi.sh
TESTS     += $(BUILD)/tests/tools/test_tools_multi.sh
# Host policies with several GPUs: prefetch to the launch's device.
$(BUILD)/tests/hostbpf/test_hostpolicy_multi: tests/hostbpf/test_hostpolicy_multi.c tests/gx_test.h shim/gx_events.h
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< -L$(STUB_LDIR) -lcuda -ldl -lpthread
$(BUILD)/tests/hostbpf/test_hostpolicy_multi.sh: tests/hostbpf/test_hostpolicy_multi.sh
	$(Q)mkdir -p $(dir $@) && cp $< $@ && chmod +x $@
TEST_BINS += $(BUILD)/tests/hostbpf/test_hostpolicy_multi $(BUILD)/tests/hostbpf/test_hostpolicy_multi.sh
TESTS     += $(BUILD)/tests/hostbpf/test_hostpolicy_multi.sh
