# tests/hostexec: the user-space executor runs the hostbpf policies on
# simulated events (native and interpreted), refuses the unsafe corpus with
# the message each object's GX_EXPECT names, and replays recorded event
# streams under every policy (test_replay.sh).
T_HX := $(BUILD)/tests/hostexec
HX_TEST_OBJS   := $(HB_DIR)/hx_unsafe.bpf.o $(HB_DIR)/hx_loop.bpf.o $(HB_DIR)/hx_prioset.bpf.o $(HB_DIR)/hx_ordinary.bpf.o \
                  $(HB_DIR)/hx_cfgknob.bpf.o
HX_UNSAFE_OBJS := $(patsubst tests/hostexec/unsafe/%.bpf.c,$(HB_DIR)/unsafe/%.bpf.o,$(wildcard tests/hostexec/unsafe/*.bpf.c))
$(HB_DIR)/hx_%.bpf.o: tests/hostexec/hx_%.bpf.c $(HB_BPF_DEPS)
	$(call bpf_compile,$(HB_BPF_FLAGS))
# Each unsafe object must be refused with the message its GX_EXPECT names;
# each safe one must pass and decide the same interpreted and native.
HX_SAFE_OBJS   := $(patsubst tests/hostexec/safe/%.bpf.c,$(HB_DIR)/safe/%.bpf.o,$(wildcard tests/hostexec/safe/*.bpf.c))
$(HB_DIR)/unsafe/%.bpf.o: tests/hostexec/unsafe/%.bpf.c tests/hostexec/unsafe/hx_expect.h $(HB_BPF_DEPS)
	$(call bpf_compile,$(HB_BPF_FLAGS) -Itests/hostexec/unsafe)
$(HB_DIR)/safe/%.bpf.o: tests/hostexec/safe/%.bpf.c tests/hostexec/unsafe/hx_expect.h $(HB_BPF_DEPS)
	$(call bpf_compile,$(HB_BPF_FLAGS) -Itests/hostexec/unsafe)
.SECONDARY: $(HX_TEST_OBJS) $(HX_UNSAFE_OBJS) $(HX_SAFE_OBJS)

# The native back end dlopens libgxjit.so (build/lib, next to ../tests).
$(T_HX)/test_hostexec: $(call objs,tests/hostexec/test_hostexec.c) $(HOSTEXEC_LIB) $(ATTACH_LIB) $(BPF_LIB) \
		$(COMMON_LIB) | $(HB_OBJS) $(HB_DIR)/gx_bad.bpf.o $(HX_TEST_OBJS) $(HX_UNSAFE_OBJS) $(HX_SAFE_OBJS) $(JITSO)
	$(call link,-lelf -lz -ldl)

# No policy crashes the application: constant knobs, faults (test_hostsafety.c).
$(T_HX)/test_hostsafety: $(call objs,tests/hostexec/test_hostsafety.c) $(HOSTEXEC_LIB) $(ATTACH_LIB) $(BPF_LIB) \
		$(COMMON_LIB) | $(HB_DIR)/hx_cfgknob.bpf.o $(JITSO)
	$(call link,-lelf -lz -ldl)

# Recorded event streams: record_app under the shim records one.
$(T_HX)/record_app: $(call objs,tests/hostexec/record_app.c)
	$(call link,-L$(STUB_LDIR) -lcuda)

# tests/gpu/hostpolicy.sh uses hx_prioset on the GPU machine (stream priorities).
LIBS_ALL  += $(HB_DIR)/hx_prioset.bpf.o
TEST_BINS += $(T_HX)/test_hostexec $(T_HX)/record_app $(T_HX)/test_hostsafety
TESTS     += $(T_HX)/test_hostexec "$(T_HX)/test_hostsafety $(HB_DIR)" tests/hostexec/test_replay.sh
