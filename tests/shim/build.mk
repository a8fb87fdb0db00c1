# tests/shim: the shim against a fake driver built here (tests/shim/fakecuda,
# its entry points generated from the shim's symbol list): interposition,
# cuGetProcAddress, events, module loading and the module cache, -rdc
# programs, gpuext-run and --audit, several
# devices and contexts; plus real nvcc programs (static cudart).
T_SHIM   := $(BUILD)/tests/shim
FAKE_LIB := $(T_SHIM)/fakecuda/libcuda.so.1

$(BUILD)/gen/fakecuda/fake_gen.c: tests/shim/fakecuda/gen.sh $(SHIM_GEN)/syms.list
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)tests/shim/fakecuda/gen.sh $(SHIM_GEN)/syms.list >$@.tmp && mv $@.tmp $@

$(FAKE_LIB): tests/shim/fakecuda/fake.c $(BUILD)/gen/fakecuda/fake_gen.c tests/shim/fakecuda/fake_launch.h
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -Wno-unused-parameter -shared -o $@ -Wl,-soname,libcuda.so.1 $(filter %.c,$^) -ldl -lpthread

# Driver-API programs, linked against the toolkit's stub (the shim or the
# fake driver comes in through LD_LIBRARY_PATH at run time).
SHIM_TEST_PROGS := test_shim test_nodriver test_disable test_audit test_multi test_multi_tool \
                   test_rdc mcache_load test_memlimit
$(addprefix $(T_SHIM)/,$(SHIM_TEST_PROGS)): $(T_SHIM)/%: $(BUILD)/obj/tests/shim/%.o
	$(call link,-L$(STUB_LDIR) -lcuda -ldl -lpthread)

# A real nvcc program with static cudart (the CUDA 13 default).
$(T_SHIM)/cudart_probe: tests/shim/cudart_probe.cu
	$(call msg,NVCC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(NVCC) -arch=sm_80 -o $@ $<
# -rdc: a two-unit program (also in the GPU corpus).
$(T_SHIM)/rdc_app: tests/gpu/shim/rdc_a.cu tests/gpu/shim/rdc_b.cu tests/gpu/shim/common.h
	$(call msg,NVCC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(NVCC) -rdc=true -gencode arch=compute_80,code=[sm_80,compute_80] -o $@ tests/gpu/shim/rdc_a.cu \
		tests/gpu/shim/rdc_b.cu

TEST_BINS += $(FAKE_LIB) $(addprefix $(T_SHIM)/,$(SHIM_TEST_PROGS)) $(T_SHIM)/cudart_probe $(T_SHIM)/rdc_app \
             $(ATTACH_FAKE) $(T_ATT)/attach_app
# The handle tables alone (their per-thread name cache).
$(call objs,tests/shim/test_tables.c): CFLAGS += -I$(SHIM_GEN)
$(call objs,tests/shim/test_tables.c): $(SHIM_GEN)/gx_syms.h
$(T_SHIM)/test_tables: $(call objs,tests/shim/test_tables.c shim/tables.c common/gx_tls.c)
	$(call link,-lpthread)
TEST_BINS += $(T_SHIM)/test_tables
TESTS     += $(T_SHIM)/test_tables
TESTS     += tests/shim/run.sh tests/shim/test_run.sh tests/shim/test_mcache.sh tests/shim/test_cubin_cache.sh tests/shim/test_multi.sh tests/shim/test_tls.sh \
             tests/shim/test_memlimit.sh tests/shim/test_memlimit_gpus.sh

# The cached-cubin header parser's fuzz target (shim/cubin_entry.c).
FUZZ_CUBIN_ENTRY := $(BUILD)/fuzz/fuzz_cubin_entry
$(FUZZ_CUBIN_ENTRY): tests/shim/fuzz_cubin_entry.c shim/cubin_entry.c shim/cubin_entry.h
	$(call link_fuzz,)
TEST_BINS += $(FUZZ_CUBIN_ENTRY)
TESTS     += tests/shim/test_cubin_entry_fuzz.sh
fuzz: fuzz-cubin-entry
.PHONY: fuzz-cubin-entry
fuzz-cubin-entry: $(FUZZ_CUBIN_ENTRY)
	$(Q)BUILD=$(BUILD) GX_FUZZ_TIME=$(GX_FUZZ_TIME) tests/shim/test_cubin_entry_fuzz.sh
