# attach/ — device policies and tools attached to an application: the
# policy description and its JIT cache (pcache.c), several policies joined
# (pmerge.c), the JIT reached lazily (jitlib_open.c), and, inside the shim,
# the objects chosen and their device runtime (policy.c, devrt.c).
# Public header: attach/gx_attach.h. Products:
#  libgxattach.a  linked into the shim and the CLI (no LLVM);
#  libgxjit.so    the one library that links LLVM: verify + JIT an object
#                 into a policy description (jitlib.c), dlopened on a miss.
ATTACH_SRCS := attach/policy.c attach/devrt.c attach/launches.c attach/pcache.c attach/pmerge.c attach/jitlib_open.c
ATTACH_LIB  := $(BUILD)/lib/libgxattach.a
JITSO       := $(BUILD)/lib/libgxjit.so

$(ATTACH_LIB): $(call objs,$(ATTACH_SRCS))
	$(archive)

JITSO_LDLIBS = -Wl,-soname,libgxjit.so -Wl,-z,defs $(LLVM_RPATH) $(JIT_LDLIBS) $(BPF_SO_LDLIBS)
$(JITSO): $(call objs,attach/jitlib.c attach/pcache.c) $(JIT_LIB) $(BPF_LIB) $(COMMON_LIB)
	$(call link_so,$(JITSO_LDLIBS))

LIBS_ALL += $(ATTACH_LIB) $(JITSO)
