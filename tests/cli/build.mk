# tests/cli: the gpuext command's own behaviour (flags, errors, --json);
# gpuext doctor against the fake driver (tests/shim/fakecuda), gpuext cdi.
TESTS += tests/cli/test_cli.sh tests/cli/test_ptxas.sh tests/cli/test_doctor.sh tests/cli/test_cdi.sh \
	tests/cli/test_exporter.sh

# test_exporter.sh: a kernelretsnoop map file with chosen counts.
$(BUILD)/tests/cli/krs_map: $(call objs,tests/cli/krs_map.c) $(BPF_LIB) $(COMMON_LIB)
	$(call link,-lelf -lz)
TEST_BINS += $(BUILD)/tests/cli/krs_map
