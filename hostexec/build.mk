# hostexec/ — libgxhostexec.a: the shim's user-space executor of host
# (struct_ops) policies when gpuext.ko is absent: load, check as the kernel
# verifier would, run natively (through libgxjit.so) or interpreted.
# Public header: hostexec/gx_hostexec.h.
HOSTEXEC_SRCS := $(sort $(wildcard hostexec/*.c))
HOSTEXEC_LIB  := $(BUILD)/lib/libgxhostexec.a

$(HOSTEXEC_LIB): $(call objs,$(HOSTEXEC_SRCS))
	$(archive)

LIBS_ALL += $(HOSTEXEC_LIB)
