# tests/cli: the gpuext command's own behaviour (flags, errors, --json);
# gpuext doctor against the fake driver (tests/shim/fakecuda), gpuext cdi.
TESTS += tests/cli/test_cli.sh tests/cli/test_ptxas.sh tests/cli/test_doctor.sh tests/cli/test_cdi.sh \
	tests/cli/test_exporter.sh
