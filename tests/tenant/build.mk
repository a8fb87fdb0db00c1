# tests/tenant: the tenant table (test_tenant: processes joining, dying by
# kill -9, the robust lock, the lease, the control plane), the tenant
# policies in the executor (test_tenant_policy: decisions, native =
# interpreter, a misbehaving policy disabled), and several processes under
# the shim with the fake driver's timed kernels (test_tenant_shim.sh: holds,
# windows, kill -9, nothing left in the maps folder, gpuext tenant);
# planted files of the maps folder refused (test_shm_trust); limits: memory
# budgets raced by threads and processes, kill -9, shares (test_limits).
T_TN := $(BUILD)/tests/tenant
# Policies that misbehave (the executor disables them; the shim passes launches).
T_TN_OBJS := $(HB_DIR)/tn_bad.bpf.o $(HB_DIR)/tn_forever.bpf.o
$(HB_DIR)/tn_%.bpf.o: tests/tenant/tn_%.bpf.c $(HB_BPF_DEPS)
	$(call bpf_compile,$(HB_BPF_FLAGS))
.SECONDARY: $(T_TN_OBJS)
$(T_TN)/test_tenant: $(call objs,tests/tenant/test_tenant.c) $(TENANT_LIB) $(BPF_LIB) $(COMMON_LIB)
	$(call link,-lpthread)
$(T_TN)/test_limits: $(call objs,tests/tenant/test_limits.c) $(TENANT_LIB) $(BPF_LIB) $(COMMON_LIB)
	$(call link,-lpthread)
$(T_TN)/test_shm_trust: $(call objs,tests/tenant/test_shm_trust.c) $(TENANT_LIB) $(BPF_LIB) $(COMMON_LIB)
	$(call link,-lpthread)
$(T_TN)/test_tenant_policy: $(call objs,tests/tenant/test_tenant_policy.c) $(HOSTEXEC_LIB) $(ATTACH_LIB) \
		$(BPF_LIB) $(COMMON_LIB) | $(HB_OBJS) $(T_TN_OBJS) $(JITSO)
	$(call link,-lelf -lz -ldl)
$(T_TN)/tn_app: $(call objs,tests/tenant/tn_app.c)
	$(call link,-L$(STUB_LDIR) -lcuda -lpthread)

TEST_BINS += $(T_TN)/test_tenant $(T_TN)/test_limits $(T_TN)/test_shm_trust $(T_TN)/test_tenant_policy $(T_TN)/tn_app $(T_TN_OBJS)
TESTS     += $(T_TN)/test_tenant $(T_TN)/test_limits $(T_TN)/test_shm_trust $(T_TN)/test_tenant_policy tests/tenant/test_tenant_shim.sh \
             tests/tenant/test_share_graph.sh
