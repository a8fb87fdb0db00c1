#!/usr/bin/env bash
# Several devices and contexts (issue 7): test_multi against the fake driver
# with 3 devices (sm_90, sm_80, sm_90) in strict mode, then a quick pass
# under valgrind (no invalid access, no definite leak).
set -u
B=${BUILD:-build}
FAKE=$PWD/$B/tests/fakecuda/libcuda.so.1
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'extern "C" __global__ void fat_kernel(float *x) { x[threadIdx.x] *= 2.0f; }\n' >"$tmp/f.cu"
if ! "$NVCC" -fatbin -gencode arch=compute_80,code=[sm_80,compute_80] -o "$tmp/f.fatbin" "$tmp/f.cu" 2>"$tmp/nvcc.err"; then
	echo "not ok - test_multi: nvcc builds the test fatbin: $(head -3 "$tmp/nvcc.err")"
	exit 1
fi
run() { env LD_LIBRARY_PATH="$PWD/$B/lib" GPUEXT_REAL_LIBCUDA="$FAKE" FAKECUDA_DEVICES=3 GPUEXT_LOG=info GPUEXT_CACHE_DIR="$tmp/${CACHE:-cache}" "$@"; }
run timeout 120 "$B/tests/shim/test_multi" "$tmp/f.fatbin"
rc=$?
[ $rc -eq 0 ] || echo "not ok - test_multi exited $rc"
if command -v valgrind >/dev/null; then
	CACHE=cache-vg run timeout 300 valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
		--show-leak-kinds=definite "$B/tests/shim/test_multi" "$tmp/f.fatbin" quick >"$tmp/vg.out" 2>"$tmp/vg.err"
	vrc=$?
	if [ $vrc -eq 0 ] && ! grep -q '^not ok' "$tmp/vg.out"; then
		echo "ok - test_multi under valgrind: no invalid access, no definite leak ($(grep -c '^ok' "$tmp/vg.out") checks)"
	else
		echo "not ok - test_multi under valgrind exited $vrc: $(grep -E '^==|not ok' "$tmp/vg.out" "$tmp/vg.err" | head -8 | tr '\n' ' ')"
	fi
fi
