#!/usr/bin/env bash
# Host policies with several GPUs (issue 7): prefetch goes to the device the
# launch runs on. The shim, the fake driver with 3 devices, gx_seq.
set -u
B=${BUILD:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/shm"
env LD_LIBRARY_PATH="$PWD/$B/lib" GPUEXT_REAL_LIBCUDA="$PWD/$B/tests/shim/fakecuda/libcuda.so.1" FAKECUDA_DEVICES=3 GPUEXT_CACHE_DIR="$tmp/cache" \
	GPUEXT_LOG=info GPUEXT_SHM_DIR="$tmp/shm" GPUEXT_POLICY="$PWD/$B/hostbpf/gx_seq.bpf.o" \
	timeout 60 "$B/tests/hostbpf/test_hostpolicy_multi" 2>"$tmp/err" | sed 's/^\(not \)\?ok - /&hostpolicy-multi: /'
grep -q "attached memory policy 'seq'" "$tmp/err" && echo "ok - hostpolicy-multi: seq attached" ||
	{ echo "not ok - hostpolicy-multi: seq not attached: $(head -3 "$tmp/err" | tr '\n' ' ')"; }
