# hostkmod/ — libgxkmod.a, the user-space side of gpuext.ko's ioctl channel
# (hostkmod/gx_kmod_client.h): the shim registers its address space and
# sends prefetch hints over /dev/gpuext when the module is loaded
# (shim/hostkmod.c). Speaks include/gpuext/gpuext_uapi.h only; needs no
# kernel headers.
KCLIENT_LIB := $(BUILD)/lib/libgxkmod.a

$(KCLIENT_LIB): $(call objs,hostkmod/gx_kmod_client.c)
	$(archive)
LIBS_ALL += $(KCLIENT_LIB)
