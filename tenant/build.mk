# tenant/ — libgxtenant.a: tenants sharing GPUs across processes, the table
# in the maps folder (/dev/shm/gpuext-$UID/tenants.tab) that the shim's
# launch gating reads and writes and `gpuext tenant` inspects. No CUDA.
# Public header: tenant/gx_tenant.h.
TENANT_SRCS := $(sort $(wildcard tenant/*.c))
TENANT_LIB  := $(BUILD)/lib/libgxtenant.a

$(TENANT_LIB): $(call objs,$(TENANT_SRCS))
	$(archive)

LIBS_ALL += $(TENANT_LIB)
