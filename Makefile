# gpuext — top-level build, out of tree into $(BUILD).
#
# One folder per part (the part map is docs/DESIGN.md); PART/build.mk builds
# its library and programs, tests/PART/build.mk its tests (tests/README.md).
# Parts are read in dependency order, so a part may name the libraries of
# those before it. Quiet by default; `make V=1` shows commands.

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

# -ffile-prefix-map: debug information and __FILE__ name sources relative to
# the tree, so nothing built here names the folder it was built in (make dist).
PREFIX_MAP  := -ffile-prefix-map=$(CURDIR)=.
CFLAGS_BASE := -std=gnu11 -Wall -Wextra -Werror -O2 -g -fPIC -fvisibility=hidden $(PREFIX_MAP) \
               -D_GNU_SOURCE -I. -Iinclude -I$(CUDA_HOME)/include
CFLAGS      ?=
# UAPI_INC: an include folder searched first (tests/common/test_bpf_isa_headers.sh).
UAPI_INC    ?=
ALL_CFLAGS   = $(UAPI_INC) $(CFLAGS_BASE) $(CFLAGS)
LDFLAGS     ?=
# Device and host eBPF programs (clang -target bpf): the shared ABI headers.
BPF_CFLAGS  := -target bpf -O2 -g -Wall -Werror $(PREFIX_MAP) -I. -Iinclude

# Parts append to these.
LIBS_ALL    :=   # products: libraries, policy objects
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

# ---- rules and recipes every part uses ----
# Objects of a source list: $(call objs,a.c b.c)
objs = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

$(BUILD)/obj/%.o: %.c
	$(call msg,CC,$<)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

# Recipes, used as the whole recipe of a rule. The objects and archives
# among the prerequisites are linked in their order (policy objects,
# *.bpf.o, and headers are skipped), then $(1): extra libraries.
link_inputs = $(filter-out %.bpf.o,$(filter %.o %.a,$^))
define link
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -o $@ $(link_inputs) $(LDFLAGS) $(1)
endef
define link_so
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -shared -o $@ $(link_inputs) $(LDFLAGS) $(1)
endef
define archive
	$(call msg,AR,$@)
	$(Q)mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $(filter %.o,$^)
endef
# A test program under ASan + UBSan, compiled from sources ($(1): extra flags).
SAN_CFLAGS := -std=gnu11 -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined \
              -fno-omit-frame-pointer -D_GNU_SOURCE -I. -Iinclude -I$(CUDA_HOME)/include
define link_asan
	$(call msg,ASAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(SAN_CFLAGS) -o $@ $(filter %.c,$^) $(1)
endef
# A libFuzzer target (clang), compiled from sources ($(1): extra libraries).
FUZZ_CFLAGS := -std=gnu11 -g -O1 -D_GNU_SOURCE -I. -Iinclude -I$(CUDA_HOME)/include \
               -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
define link_fuzz
	$(call msg,FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -o $@ $(filter %.c,$^) $(1)
endef
# A BPF object ($(1): extra flags).
define bpf_compile
	$(call msg,CLANG,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) $(1) -c $< -o $@
endef

# ---- the parts, in dependency order ----
PARTS := common image ptx-rewrite devbpf attach tools blocksched hostexec tenant hostbpf kmod hostkmod shim cli bench
include $(addsuffix /build.mk,$(PARTS))
# Their tests in the same order, then tests/dist (make dist's payload; tests/gpu:
# what the GPU run needs built here).
include $(wildcard $(patsubst %,tests/%/build.mk,$(PARTS) dist gpu))

all: $(LIBS_ALL) $(BINS_ALL)

tests: all $(TEST_BINS)

test: tests
	$(Q)BUILD=$(BUILD) PTXAS=$(PTXAS) NVCC=$(NVCC) CLANG=$(CLANG) scripts/run-tests.sh $(TESTS)

deps:
	$(Q)scripts/deps.sh

# `make dist`: the relocatable tarball, the JIT add-on and the wheel in
# $(BUILD)/dist (scripts/dist.sh, docs/install.md); fails if a binary needs
# more than a stock GPU host has (scripts/dist-check.sh).
GX_VERSION := $(shell sed -n 's/^\#define GX_VERSION "\([^"]*\)".*/\1/p' common/gx_util.h)
.PHONY: dist
dist: all
	$(call msg,DIST,$(BUILD)/dist)
	$(Q)scripts/dist.sh $(BUILD) $(GX_VERSION)
	$(Q)SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct 2>/dev/null || echo 315532800) \
		python3 scripts/wheel.py $(BUILD)/dist/gpuext-$(GX_VERSION) $(GX_VERSION) $(BUILD)/dist

clean:
	$(Q)rm -rf $(BUILD) $(CLEAN_EXTRA)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
