# tests/cli: the gpuext command's own behaviour (flags, errors, --json).
TESTS += tests/cli/test_cli.sh tests/cli/test_ptxas.sh
