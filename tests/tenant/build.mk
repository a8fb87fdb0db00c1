# tests/tenant: the tenant table (test_tenant: processes joining, dying by
# kill -9, the robust lock, the lease, the control plane).
T_TN := $(BUILD)/tests/tenant
$(T_TN)/test_tenant: $(call objs,tests/tenant/test_tenant.c) $(TENANT_LIB) $(BPF_LIB) $(COMMON_LIB)
	$(call link,-lpthread)

TEST_BINS += $(T_TN)/test_tenant
TESTS     += $(T_TN)/test_tenant
