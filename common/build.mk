# common/ — libgxcommon.a: logging, small utilities (common/gx_util.h), where
# NVIDIA's libcuda.so.1 may be (gx_libcuda.h: the shim and gpuext doctor), the
# BPF instruction-set names (gx_bpf_isa.h), the trust rule for files in
# shared places (gx_trust.h), per-thread heap blocks (gx_tls.h)
# and the CUDA check macros of the
# GPU test programs (gx_cu_check.h, header only).
COMMON_SRCS := common/gx_log.c common/gx_util.c common/gx_tls.c common/gx_libcuda.c common/gx_trust.c common/gx_ctl.c
COMMON_LIB  := $(BUILD)/lib/libgxcommon.a

$(COMMON_LIB): $(call objs,$(COMMON_SRCS))
	$(archive)

LIBS_ALL += $(COMMON_LIB)
