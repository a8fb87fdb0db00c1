#!/usr/bin/env bash
# Several devices and contexts (issue 7): test_multi against the fake driver
# with 3 devices (sm_90, sm_80, sm_90) in strict mode, then a quick pass
# under valgrind (no invalid access, no definite leak).
set -u
# these checks look at the instrumented module itself, so every launch runs
# it (tools default to a sample of launches: test_launch_sample.sh)
export GPUEXT_LAUNCH_SAMPLE=1
B=${BUILD:-build}
FAKE=$PWD/$B/tests/shim/fakecuda/libcuda.so.1
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
# A driver without cuCtxGetDevice_v2 (before 12.8): the same answers.
FAKECUDA_NO_GETDEVICE_V2=1 CACHE=cache-v1 run timeout 120 "$B/tests/shim/test_multi" "$tmp/f.fatbin" quick >"$tmp/v1.out"
rc=$?
[ $rc -eq 0 ] && echo "ok - test_multi without cuCtxGetDevice_v2: $(grep -c '^ok' "$tmp/v1.out") checks pass" ||
	echo "not ok - test_multi without cuCtxGetDevice_v2 (exit $rc): $(grep '^not ok' "$tmp/v1.out" | head -3 | tr '\n' ' ')"
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

# A device policy in a process with two GPU archs (sm_90 and sm_80): JIT'd
# once, for the lowest, and linked into a module rewritten for sm_90.
FT=$PWD/$B/tests/attach/fakecuda/libcuda.so.1
PTX=tests/ptx-rewrite/golden-passes/vadd.ptx
if [ -x "$B/tests/attach/attach_app" ] && [ -e "$FT" ] && [ -e "$PTX" ]; then
	K=$(sed -n 's/.*\.entry \([A-Za-z0-9_]*\).*/\1/p' $PTX | head -1)
	env LD_LIBRARY_PATH="$PWD/$B/lib" GPUEXT_REAL_LIBCUDA="$FT" FAKECUDA_DEVICES=3 GPUEXT_LOG=info \
		GPUEXT_TOOL=threadhist GPUEXT_TOOLS_DIR="$PWD/$B/share/gpuext/tools" GPUEXT_CACHE_DIR="$tmp/pcache" \
		GPUEXT_SHM_DIR="$tmp/shm" timeout 120 "$B/tests/attach/attach_app" $PTX "$K" policy >"$tmp/att.out" 2>"$tmp/att.err"
	arc=$?
	grep -q "policy threadhist: verified and JIT'd for sm_80" "$tmp/att.err" &&
		grep -q 'rewritten (1 hooks), reloaded from sm_90 PTX' "$tmp/att.err" && [ $arc -eq 0 ] &&
		echo "ok - test_multi: a policy on sm_90 + sm_80 devices is JIT'd for sm_80 and hooks an sm_90 module" ||
		echo "not ok - test_multi: policy arch with two GPU archs (exit $arc): $(grep 'policy\|module' "$tmp/att.err" | head -3 | tr '\n' ' ')"
fi

# A tool with contexts on two GPUs; a context destroyed from a thread whose
# current context is another one.
if [ -e "$FT" ]; then
	env LD_LIBRARY_PATH="$PWD/$B/lib" GPUEXT_REAL_LIBCUDA="$FT" FAKECUDA_DEVICES=2 GPUEXT_LOG=info \
		GPUEXT_TOOL=threadhist GPUEXT_TOOLS_DIR="$PWD/$B/share/gpuext/tools" GPUEXT_CACHE_DIR="$tmp/pcache" \
		GPUEXT_SHM_DIR="$tmp/shm2" timeout 120 "$B/tests/shim/test_multi_tool" 2>"$tmp/mt.err" | sed 's/^\(not \)\?ok - /&multi-tool: /'
	n=$(ls "$tmp/shm2" 2>/dev/null | grep -c 'threadhist.th_counts')
	[ "$n" = 2 ] && ! grep -q 'running without it' "$tmp/mt.err" &&
		echo "ok - multi-tool: each context got its own threadhist map ($n files)" ||
		echo "not ok - multi-tool: $n threadhist map files: $(ls "$tmp/shm2" 2>/dev/null | tr '\n' ' ') $(grep policy "$tmp/mt.err" | head -2 | tr '\n' ' ')"
fi
