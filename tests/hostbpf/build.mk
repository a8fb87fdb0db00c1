# tests/hostbpf: host policies in the shim end to end against the fake
# driver: managed allocations become regions, prefetch decisions become
# cuMemPrefetchAsync, the kmod path (a stand-in for /dev/gpuext), device
# policies' gdev_mem_prefetch requests, and several GPUs.
T_HB := $(BUILD)/tests/hostbpf
$(T_HB)/test_hostpolicy_shim $(T_HB)/test_hostpolicy_multi: $(T_HB)/%: $(BUILD)/obj/tests/hostbpf/%.o
	$(call link,-L$(STUB_LDIR) -lcuda -ldl -lpthread)
# Stand-in for gpuext.ko's ioctl channel (LD_PRELOAD), for the kmod-mode checks.
$(T_HB)/fake_gpuext.so: $(call objs,tests/hostbpf/fake_gpuext.c)
	$(call link_so,-ldl)
# Device requests (gdev_mem_prefetch records) into the host policy, on the
# attach test's fake driver with a device tool attached.
$(T_HB)/devreq_app: $(call objs,tests/hostbpf/devreq_app.c) $(COMMON_LIB)
	$(call link,-L$(STUB_LDIR) -lcuda -ldl)
# A device policy that sends gdev_mem_prefetch requests (also used on the
# GPU machine, JIT'd here into its cache by `make gpu-prep`).
HB_DEVPF := $(HB_DIR)/devprefetch.bpf.o
$(HB_DEVPF): tests/hostbpf/devprefetch.bpf.c $(GDEV_HDRS)
	$(bpf_compile)

LIBS_ALL  += $(HB_DEVPF)
TEST_BINS += $(T_HB)/test_hostpolicy_shim $(T_HB)/test_hostpolicy_multi $(T_HB)/fake_gpuext.so $(T_HB)/devreq_app \
             $(HB_OBJS) $(HX_UNSAFE_OBJS) $(HB_DIR)/hx_prioset.bpf.o $(ATTACH_FAKE) $(JITSO)
TESTS     += tests/hostbpf/test_hostpolicy.sh tests/hostbpf/test_hostpolicy_multi.sh
