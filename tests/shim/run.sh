#!/usr/bin/env bash
# Shim CPU tests: exports vs the driver stub, the full interposition test
# against the fake driver, the no-driver cases, and a quick pass under
# valgrind (no definite leaks, no invalid accesses).
set -u
B=${BUILD:-build}
SHIM=$B/lib/libcuda.so.1
FAKE=$PWD/$B/tests/shim/fakecuda/libcuda.so.1
STUB=${CUDA_HOME:-/usr/local/cuda}/lib64/stubs/libcuda.so
PTXAS=${PTXAS:-/usr/local/cuda/bin/ptxas}
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Exports: every name of the stub, SONAME, the libcuda.so link, no versions.
nm -D --defined-only "$STUB" | awk '{print $3}' | sort >"$tmp/stub"
nm -D --defined-only "$SHIM" | awk '$3 ~ /^cu/ {print $3}' | sort >"$tmp/shim"
missing=$(comm -23 "$tmp/stub" "$tmp/shim" | wc -l)
[ "$missing" -eq 0 ] && ok "shim exports all $(wc -l <"$tmp/stub") driver-stub symbols" ||
	nok "shim lacks $missing stub symbols: $(comm -23 "$tmp/stub" "$tmp/shim" | head -5 | tr '\n' ' ')"
extra=$(nm -D --defined-only "$SHIM" | awk '$3 !~ /^(cu|gx_events_|gx_shim_|gpuext_shim_marker)/' | wc -l)
[ "$extra" -eq 0 ] && ok "no stray exports" || nok "stray exports: $(nm -D --defined-only "$SHIM" | awk '$3 !~ /^(cu|gx_events_|gx_shim_|gpuext_)/ {print $3}' | head -5 | tr '\n' ' ')"
# Names the real driver exports beyond the stub and headers (shim/driver-extra.syms).
xmiss=$(grep -vE '^[[:space:]]*(#|$)' shim/driver-extra.syms | sort | comm -23 - "$tmp/shim" | tr '\n' ' ')
[ -z "$xmiss" ] && ok "shim exports the $(grep -cvE '^[[:space:]]*(#|$)' shim/driver-extra.syms) extra driver names of shim/driver-extra.syms" ||
	nok "shim lacks extra driver names: $xmiss"
readelf -d "$SHIM" | grep -q 'SONAME.*\[libcuda.so.1\]' && ok "SONAME libcuda.so.1" || nok "SONAME is not libcuda.so.1"
[ "$(readlink "$B/lib/libcuda.so")" = libcuda.so.1 ] && ok "libcuda.so -> libcuda.so.1" || nok "libcuda.so link missing"
if readelf -V "$STUB" | grep -q 'No version'; then
	readelf -V "$SHIM" | grep -q 'Version definition' && nok "shim defines symbol versions, the driver has none" ||
		ok "no symbol versions, like the driver stub"
fi
nf=$(nm -D --defined-only "$FAKE" | awk '$3 ~ /^cu/' | wc -l)
[ "$nf" -gt 300 ] && ok "fake driver exports $nf driver names" || nok "fake driver exports only $nf names"

# Inputs: a PTX file and a real cubin made from it.
printf '.version 8.0\n.target sm_80\n.address_size 64\n.visible .entry kern_a()\n{\n\tret;\n}\n.visible .entry kern_b()\n{\n\tret;\n}\n' >"$tmp/k.ptx"
if ! "$PTXAS" -arch=sm_80 "$tmp/k.ptx" -o "$tmp/k.cubin" 2>"$tmp/ptxas.err"; then
	nok "ptxas builds the test cubin: $(head -3 "$tmp/ptxas.err")"
	exit 1
fi

printf 'extern "C" __global__ void fat_kernel(float *x) { x[threadIdx.x] *= 2.0f; }\n' >"$tmp/f.cu"
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
if ! "$NVCC" -fatbin -gencode arch=compute_80,code=[sm_80,compute_80] -o "$tmp/f.fatbin" "$tmp/f.cu" 2>"$tmp/nvcc.err"; then
	nok "nvcc builds the test fatbin: $(head -3 "$tmp/nvcc.err")"
	exit 1
fi

run() { env LD_LIBRARY_PATH="$PWD/$B/lib" GPUEXT_REAL_LIBCUDA="$FAKE" GPUEXT_LOG=info GPUEXT_CACHE_DIR="$tmp/cache" "$@"; }
run timeout 120 "$B/tests/shim/test_shim" "$tmp/k.cubin" "$tmp/k.ptx" "$tmp/f.fatbin"
rc=$?
[ $rc -eq 0 ] || nok "test_shim exited $rc"

# Under a tool (or a policy) an image with SASS for the device whose PTX the
# rewrite leaves as it was (no hook site: memtrace on a kernel without a
# memory access) loads as it came, NVIDIA's SASS rather than the driver's
# JIT of the PTX, which can use more registers (a library sizing launches by
# them changes its plans). Without a tool the identity reload stays
# (test_shim above).
printf 'extern "C" __global__ void nop_kernel() {}\n' >"$tmp/nop.cu"
if "$NVCC" -fatbin -gencode arch=compute_90,code=[sm_90,compute_90] -o "$tmp/nop.fatbin" "$tmp/nop.cu" 2>>"$tmp/nvcc.err"; then
	run env GPUEXT_TOOL=memtrace GPUEXT_TOOLS_DIR="$PWD/$B/share/gpuext/tools" GPUEXT_CACHE=0 \
		timeout 60 "$B/tests/shim/mcache_load" "$tmp/nop.fatbin" nop_kernel >"$tmp/keep.out" 2>"$tmp/keep.err"
	grep -q 'passed through: has SASS for sm_90 and nothing to change in its PTX' "$tmp/keep.err" &&
		! grep -q 'rewritten' "$tmp/keep.err" &&
		ok "under a tool, a fatbin with nothing to hook: its SASS loads as it came" ||
		nok "a fatbin with nothing to hook under a tool: $(grep 'gpuext: module' "$tmp/keep.err" | head -2 | tr '\n' ' ')"
	run env GPUEXT_CACHE=0 timeout 60 "$B/tests/shim/mcache_load" "$tmp/nop.fatbin" nop_kernel >/dev/null 2>"$tmp/keep0.err"
	grep -q 'rewritten (identity)' "$tmp/keep0.err" && ok "without a tool the same fatbin is reloaded from its PTX (identity)" ||
		nok "without a tool: $(grep 'gpuext: module' "$tmp/keep0.err" | head -2 | tr '\n' ' ')"
else
	nok "nvcc builds the empty-kernel fatbin: $(tail -2 "$tmp/nvcc.err")"
fi

# No usable real driver.
env LD_LIBRARY_PATH="$PWD/$B/lib" GPUEXT_REAL_LIBCUDA=/nonexistent/libcuda.so.1 "$B/tests/shim/test_nodriver" "missing driver" 2>"$tmp/nd.err"
grep -q 'could not be loaded' "$tmp/nd.err" && ok "missing driver: the log says so" || nok "missing driver: no log line"
env LD_LIBRARY_PATH="$PWD/$B/lib" GPUEXT_REAL_LIBCUDA="$PWD/$SHIM" "$B/tests/shim/test_nodriver" "driver path is the shim" 2>"$tmp/self.err"
grep -q 'is the shim itself' "$tmp/self.err" && ok "GPUEXT_REAL_LIBCUDA pointing at the shim is refused, no recursion" ||
	nok "self path not detected: $(head -2 "$tmp/self.err")"
cp "$SHIM" "$tmp/libcuda.so.1"
env LD_LIBRARY_PATH="$PWD/$B/lib" GPUEXT_REAL_LIBCUDA="$tmp/libcuda.so.1" "$B/tests/shim/test_nodriver" "driver path is a copy of the shim" 2>"$tmp/copy.err"
grep -q 'copy of the gpuext shim' "$tmp/copy.err" && ok "a copy of the shim is recognised by its marker" ||
	nok "copy not detected: $(head -2 "$tmp/copy.err")"

# Valgrind: a quick pass (no threads/fork/matrix), errors and definite leaks fail.
if command -v valgrind >/dev/null; then
	run timeout 300 valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
		--show-leak-kinds=definite "$B/tests/shim/test_shim" "$tmp/k.cubin" "$tmp/k.ptx" "$tmp/f.fatbin" quick \
		>"$tmp/vg.out" 2>"$tmp/vg.err"
	vrc=$?
	if [ $vrc -eq 0 ] && ! grep -q '^not ok' "$tmp/vg.out"; then
		ok "valgrind: no invalid access, no definite leak ($(grep -c '^ok' "$tmp/vg.out") checks)"
	else
		nok "valgrind exited $vrc: $(grep -E '^==|not ok' "$tmp/vg.out" "$tmp/vg.err" | head -8 | tr '\n' ' ')"
	fi
fi

# A real nvcc-built program (static cudart) reaches the shim the way
# applications do: dlopen("libcuda.so.1"), cuGetProcAddress_v2 for ~440 names.
if [ -x "$B/tests/shim/cudart_probe" ]; then
	: >"$tmp/trace"
	FAKECUDA_TRACE="$tmp/trace" run timeout 60 "$B/tests/shim/cudart_probe" >"$tmp/probe.out" 2>"$tmp/probe.err"
	prc=$?
	n=$(grep -c '^cuGetProcAddress_v2$' "$tmp/trace")
	[ "$n" -ge 300 ] && grep -q 'shim active' "$tmp/probe.err" &&
		ok "static-cudart program: cuInit and $n cuGetProcAddress_v2 queries through the shim" ||
		nok "static-cudart program: $n cuGetProcAddress_v2 queries, log: $(head -3 "$tmp/probe.err" | tr '\n' ' ')"
	[ $prc -lt 128 ] && ok "static-cudart program ends cleanly against the fake driver (exit $prc)" ||
		nok "static-cudart program crashed (exit $prc)"
	# cudart dlcloses libcuda.so.1 at exit, maybe while a thread of the shim
	# is inside it: one start in ~20 crashed before the shim was made
	# undeletable, so check the flag and run the program 20 times more.
	readelf -d "$SHIM" | grep -q 'FLAGS_1.*NODELETE' && ok "the shim is never unmapped by dlclose (DF_1_NODELETE)" ||
		nok "the shim lacks DF_1_NODELETE: a dlclose at exit unmaps it under its own threads"
	crashed=0
	for _ in $(seq 20); do
		run timeout 60 "$B/tests/shim/cudart_probe" >/dev/null 2>&1
		[ $? -ge 128 ] && crashed=$((crashed + 1))
	done
	[ $crashed -eq 0 ] && ok "static-cudart program: 20 more starts, none crashed" ||
		nok "static-cudart program: $crashed of 20 more starts crashed"
fi

# GPUEXT_DISABLE=1: forward only.
env LD_LIBRARY_PATH="$PWD/$B/lib" GPUEXT_REAL_LIBCUDA="$FAKE" GPUEXT_DISABLE=1 GPUEXT_LOG=info \
	"$B/tests/shim/test_disable" 2>"$tmp/dis.err"
grep -q 'rewritten' "$tmp/dis.err" && nok "GPUEXT_DISABLE: a module was still rewritten" ||
	ok "GPUEXT_DISABLE: no module rewritten"
grep -q 'forwarding only' "$tmp/dis.err" && ok "GPUEXT_DISABLE: cuInit's line says forwarding only" ||
	nok "GPUEXT_DISABLE: no 'forwarding only' line"

# Bench line: the shim's added launch cost on the CPU, against the fake
# driver (no GPU noise): the same CUfunction through the fake's entry points
# and the shim's, alternating rounds in one process (bench/launch_ab.c).
if [ -x "$B/bench/launch_ab" ]; then
	run "$B/bench/launch_ab" "$tmp/k.ptx" kern_a 200 256 >"$tmp/ab.out" 2>"$tmp/ab.err"
	abrc=$?
	line=$(awk '$1 == "ab" && $3 == "direct_ns" { delete v; for (i = 3; i < NF; i += 2) v[$i] = $(i + 1);
		printf "%s %+.1f ns (%.1f -> %.1f); ", $2, v["added_ns"], v["direct_ns"], v["shim_ns"];
		if (v["added_ns"] > w || w == "") w = v["added_ns"] } END { printf "| %.1f", w }' "$tmp/ab.out")
	echo "# bench: shim launch cost on the CPU (fake driver), median added per call: ${line%|*}"
	worst=${line##*| }
	[ $abrc -eq 0 ] && [ -n "$worst" ] && awk -v w="$worst" 'BEGIN { exit !(w <= 50) }' &&
		ok "CPU launch cost through the shim: worst entry point adds $worst ns per call (<= 50)" ||
		nok "CPU launch cost through the shim (exit $abrc): worst ${worst:-?} ns; $(tail -2 "$tmp/ab.err" | tr '\n' ' ')"
fi

# -rdc: the units' PTX JIT-linked through the real driver (tests/shim/test_rdc.c
# on the sections of an nvcc -rdc program), and the fallback when linking fails.
if [ -x "$B/tests/shim/rdc_app" ]; then
	objcopy -O binary --only-section=.nv_fatbin "$B/tests/shim/rdc_app" "$tmp/linked.bin" &&
		objcopy -O binary --only-section=__nv_relfatbin "$B/tests/shim/rdc_app" "$tmp/rel.bin"
	run env GPUEXT_CACHE_DIR="$tmp/rdccache" "$B/tests/shim/test_rdc" "$tmp/linked.bin" "$tmp/rel.bin" ok 2>"$tmp/rdc.err"
	grep -q 'module 2 (cuModuleLoadData): rewritten (identity), reloaded from sm_80 PTX of 2 -rdc units, JIT-linked' "$tmp/rdc.err" &&
		ok "-rdc: the log says the 2 units were rewritten and JIT-linked" || nok "-rdc log: $(grep gpuext "$tmp/rdc.err" | tail -2 | tr '\n' ' ')"
	grep -q 'module 1 (cuLibraryLoadData): passed through: -rdc: devices of several archs' "$tmp/rdc.err" &&
		ok "-rdc library on devices of two major archs: passed through, said why" || nok "-rdc mixed archs log: $(grep 'module 1' "$tmp/rdc.err")"
	# A second start with the same cache: the linked cubin is reused.
	run env GPUEXT_CACHE_DIR="$tmp/rdccache" "$B/tests/shim/test_rdc" "$tmp/linked.bin" "$tmp/rel.bin" cached 2>"$tmp/rdc2.err"
	grep -q 'module 2 (cuModuleLoadData): rewritten (identity), reloaded from sm_80 PTX of 2 -rdc units, JIT-linked ([0-9]* bytes of cubin, from the module cache)' "$tmp/rdc2.err" &&
		ok "-rdc second start: the log says the linked cubin came from the module cache" ||
		nok "-rdc second start log: $(grep gpuext "$tmp/rdc2.err" | tail -2 | tr '\n' ' ')"
	FAKECUDA_LINK_FAIL=1 run env GPUEXT_CACHE=0 "$B/tests/shim/test_rdc" "$tmp/linked.bin" "$tmp/rel.bin" fail 2>"$tmp/rdcf.err"
	[ "$(grep -c 'passed through: -rdc: cuLinkComplete: CUDA_ERROR_INVALID_PTX' "$tmp/rdcf.err")" = 1 ] &&
		ok "-rdc link failure: one log line, the original loaded" || nok "-rdc fallback log: $(grep gpuext "$tmp/rdcf.err" | tail -2 | tr '\n' ' ')"
	if command -v valgrind >/dev/null; then
		run env GPUEXT_CACHE_DIR="$tmp/rdcvgcache" valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite \
			"$B/tests/shim/test_rdc" "$tmp/linked.bin" "$tmp/rel.bin" ok >"$tmp/rdcvg.out" 2>"$tmp/rdcvg.err"
		[ $? -eq 0 ] && ! grep -q '^not ok' "$tmp/rdcvg.out" && ok "-rdc path under valgrind: no invalid access, no definite leak" ||
			nok "-rdc under valgrind: $(grep -E '^==|not ok' "$tmp/rdcvg.out" "$tmp/rdcvg.err" | head -4 | tr '\n' ' ')"
	fi
else
	nok "-rdc: $B/tests/shim/rdc_app not built"
fi
