# gpuext — top-level build. Out-of-tree into $(BUILD); each part adds its
# targets in PART/build.mk (so parts never edit this file to grow).
# Quiet by default; `make V=1` shows commands.

BUILD       ?= build
CC          ?= gcc
CLANG       ?= clang-19
LLVM_CONFIG ?= llvm-config-19
BPFTOOL     ?= bpftool
NVCC        ?= /usr/local/cuda/bin/nvcc
PTXAS       ?= /usr/local/cuda/bin/ptxas
CUDA_HOME   ?= /usr/local/cuda

ifeq ($(V),1)
Q :=
msg = @true
else
Q := @
msg = @printf '  %-8s %s\n' $(1) $(2)
endif

CFLAGS_BASE := -std=gnu11 -Wall -Wextra -Werror -O2 -g -fPIC -fvisibility=hidden \
               -D_GNU_SOURCE -I. -Icommon -I$(CUDA_HOME)/include
CFLAGS      ?=
# UAPI_INC: an include folder searched first (tests/common/test_bpf_isa_headers.sh).
UAPI_INC    ?=
ALL_CFLAGS   = $(UAPI_INC) $(CFLAGS_BASE) $(CFLAGS)
LDFLAGS     ?=

# Parts append to these.
LIBS_ALL    :=   # products: shared/static libraries
BINS_ALL    :=   # products: executables
TEST_BINS   :=   # built by `make tests`
TESTS       :=   # commands run by `make test`, each prints ok/not ok lines
CLEAN_EXTRA :=

.SECONDEXPANSION:
.PHONY: all tests test clean deps fuzz
all:

# Before building: one line naming any missing package (scripts/deps.sh
# --check), instead of a compiler error. GX_SKIP_DEPCHECK=1 skips it.
ifeq ($(filter deps clean,$(MAKECMDGOALS))$(GX_SKIP_DEPCHECK),)
DEPCHECK := $(shell scripts/deps.sh --check)
ifneq ($(DEPCHECK),)
$(error $(DEPCHECK))
endif
endif

include mk/common.mk
include $(sort $(wildcard */build.mk))
-include shim/image.mk
-include devbpf/tools/tools.mk

all: $(LIBS_ALL) $(BINS_ALL)

tests: all $(TEST_BINS)

test: tests
	$(Q)BUILD=$(BUILD) PTXAS=$(PTXAS) NVCC=$(NVCC) CLANG=$(CLANG) scripts/run-tests.sh $(TESTS)

deps:
	$(Q)scripts/deps.sh

clean:
	$(Q)rm -rf $(BUILD) $(CLEAN_EXTRA)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
