# tests/attach: the policy description and its cache, and the shim's attach
# path end to end against the fake driver with device memory (fakedev.c).
T_ATT := $(BUILD)/tests/attach
$(T_ATT)/test_pcache: $(call objs,tests/attach/test_pcache.c) $(ATTACH_LIB) $(COMMON_LIB)
	$(link)
$(T_ATT)/test_lt_sample: $(call objs,tests/attach/test_lt_sample.c attach/launches.c) $(COMMON_LIB)
	$(link)

# The shim's fake driver plus fakedev.c (device memory semantics).
ATTACH_FAKE := $(T_ATT)/fakecuda/libcuda.so.1
$(ATTACH_FAKE): tests/shim/fakecuda/fake.c $(BUILD)/gen/fakecuda/fake_gen.c tests/attach/fakedev.c tests/shim/fakecuda/fake_launch.h
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -Wno-unused-parameter -shared -o $@ -Wl,-soname,libcuda.so.1 $(filter %.c,$^) -ldl -lpthread
$(T_ATT)/attach_app: $(call objs,tests/attach/attach_app.c) $(COMMON_LIB)
	$(call link,-L$(STUB_LDIR) -lcuda -ldl)

$(T_ATT)/graph_app: $(call objs,tests/attach/graph_app.c) $(COMMON_LIB)
	$(call link,-L$(STUB_LDIR) -lcuda -ldl)

TEST_BINS += $(T_ATT)/test_pcache $(T_ATT)/test_lt_sample $(ATTACH_FAKE) $(T_ATT)/attach_app $(T_ATT)/graph_app
TESTS     += $(T_ATT)/test_pcache $(T_ATT)/test_lt_sample tests/attach/test_attach.sh tests/attach/test_attach_cache.sh \
             tests/attach/test_graphs.sh \
             tests/attach/test_trust.sh

# The policy cache's entries under libFuzzer (`make test` runs it a few
# seconds; `make fuzz` for GX_FUZZ_TIME).
FUZZ_PDESC := $(BUILD)/fuzz/fuzz_pdesc
$(FUZZ_PDESC): tests/attach/fuzz_pdesc.c attach/pcache.c attach/pmerge.c common/gx_util.c common/gx_log.c common/gx_trust.c \
		attach/gx_attach.h
	$(call link_fuzz,)
fuzz: fuzz-pdesc
.PHONY: fuzz-pdesc
fuzz-pdesc: $(FUZZ_PDESC)
	$(Q)BUILD=$(BUILD) GX_FUZZ_TIME=$(GX_FUZZ_TIME) tests/attach/test_pdesc_fuzz.sh
TEST_BINS += $(FUZZ_PDESC)
TESTS     += tests/attach/test_pdesc_fuzz.sh

# gpuext attach / detach of a running process (the shim's live.c), against
# the attach fake driver: live_app runs until told to stop.
$(T_ATT)/live_app: $(call objs,tests/attach/live_app.c) $(COMMON_LIB)
	$(call link,-L$(STUB_LDIR) -lcuda -ldl)
TEST_BINS += $(T_ATT)/live_app
# the launch sample's switch under launching threads (test_launch_sample.sh)
$(T_ATT)/threads_app: $(call objs,tests/attach/threads_app.c) $(COMMON_LIB)
	$(call link,-L$(STUB_LDIR) -lcuda -ldl -lpthread)
TEST_BINS += $(T_ATT)/threads_app
TESTS     += tests/attach/test_live.sh tests/attach/test_live_kinds.sh tests/attach/test_live_sched.sh tests/attach/test_live_state.sh tests/attach/test_jit_async.sh tests/attach/test_launch_sample.sh

# The control messages under libFuzzer.
FUZZ_CTL := $(BUILD)/fuzz/fuzz_ctl
$(FUZZ_CTL): tests/attach/fuzz_ctl.c common/gx_ctl.c common/gx_ctl.h common/gx_util.c common/gx_log.c
	$(call link_fuzz,)
fuzz: fuzz-ctl
.PHONY: fuzz-ctl
fuzz-ctl: $(FUZZ_CTL)
	$(Q)BUILD=$(BUILD) GX_FUZZ_TIME=$(GX_FUZZ_TIME) tests/attach/test_ctl_fuzz.sh
TEST_BINS += $(FUZZ_CTL)
TESTS     += tests/attach/test_ctl_fuzz.sh
