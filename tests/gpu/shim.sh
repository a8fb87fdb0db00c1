#!/usr/bin/env bash
# GPU checks of the shim (run by tests/gpu/run.sh, or alone from the repo
# root after `make`): builds a corpus with nvcc, runs every program without
# and with the shim, compares outputs bit for bit, and checks the shim's log
# shows each PTX module rewritten (identity) and reloaded. Then CuPy and
# PyTorch (if importable) the same way, then bench/launch_overhead.sh.
# Prints ok/not ok lines; logs, outputs and the bench table go to $OUT/shim/.
# Needs ~4 minutes; run with GX_GPU_TIMEOUT=600 under tests/gpu/run.sh to be
# safe. SHIM_GPU_SKIP=bench,torch,cupy skips parts.
set -u
ROOT=${GX_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
B=${GX_BUILD:-$ROOT/build}
OUT=${OUT:-$B/gpu-out}
L=$OUT/shim
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
CUDA_LIB=${CUDA_LIB:-/usr/local/cuda/lib64}
SKIP=${SHIM_GPU_SKIP:-}
S=$ROOT/tests/gpu/shim
mkdir -p "$L"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
ok() { echo "ok - $*" | tee -a "$L/summary.txt"; }
nok() { echo "not ok - $*" | tee -a "$L/summary.txt"; }
note() { echo "# $*" | tee -a "$L/summary.txt"; }
: >"$L/summary.txt"
SHIM_LLP="$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
with_shim() { env LD_LIBRARY_PATH="$SHIM_LLP" GPUEXT_LOG=info "$@"; }

# ---- 0. the shim, the real driver, inertness ----
if [ ! -e "$B/lib/libcuda.so.1" ]; then
	nok "shim not built: $B/lib/libcuda.so.1 missing (run make)"
	exit 1
fi
real=$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 .*x86-64/ {print $NF; exit}')
[ -n "$real" ] || real=$(ls /usr/lib/x86_64-linux-gnu/libcuda.so.1 /usr/local/nvidia/lib64/libcuda.so.1 /usr/lib64/libcuda.so.1 2>/dev/null | head -1)
note "real driver: ${real:-not found} -> $(readlink -f "$real" 2>/dev/null)"
if [ -n "$real" ]; then
	nm -D --defined-only "$real" 2>/dev/null | awk '$3 ~ /^cu/ {print $3}' | sed 's/@.*//' | sort -u >"$W/real.syms"
	nm -D --defined-only "$B/lib/libcuda.so.1" | awk '$3 ~ /^cu/ {print $3}' | sort -u >"$W/shim.syms"
	comm -23 "$W/real.syms" "$W/shim.syms" >"$L/real-not-in-shim.txt"
	# cudbg*: the debugger's interface (cuda-gdb finds it in the real driver,
	# which stays loaded), not API: listed, not required.
	grep -v '^cudbg' "$L/real-not-in-shim.txt" >"$W/missing.api"
	note "real driver names not in the shim: $(wc -l <"$L/real-not-in-shim.txt") ($(grep -c '^cudbg' "$L/real-not-in-shim.txt") cudbg* debugger symbols)"
	nmiss=$(wc -l <"$W/missing.api")
	[ "$nmiss" -eq 0 ] && ok "shim exports every cu[A-Z]* API name of the real driver ($(grep -vc '^cudbg' "$W/real.syms"))" ||
		nok "real driver exports $nmiss API names the shim lacks (shim/real-not-in-shim.txt): $(head -12 "$W/missing.api" | tr '\n' ' ')"
	if readelf -V "$real" 2>/dev/null | grep -q 'Version definition'; then
		nok "the real driver defines symbol versions (the shim has none): $(readelf -V "$real" | grep -A3 'Version definition' | tr '\n' ' ' | head -c 200)"
	else
		ok "the real driver has no symbol versions, like the shim"
	fi
fi
if command -v nvidia-smi >/dev/null; then
	nvidia-smi -L >"$W/smi.base" 2>&1
	rb=$?
	env LD_LIBRARY_PATH="$SHIM_LLP" GPUEXT_LOG=debug nvidia-smi -L >"$W/smi.shim" 2>"$L/nvidia-smi.shim.err"
	rs=$?
	[ $rb -eq 0 ] && [ $rs -eq 0 ] && cmp -s "$W/smi.base" "$W/smi.shim" && ok "nvidia-smi works unchanged with the shim first in LD_LIBRARY_PATH" ||
		nok "nvidia-smi with the shim: exit $rs (without: $rb); $(head -2 "$L/nvidia-smi.shim.err" | tr '\n' ' ')"
	cp "$W/smi.base" "$L/nvidia-smi.txt"
fi

# ---- 1. corpus ----
build() { # NAME ARGS... (in the background; result checked after wait)
	local n=$1
	shift
	(timeout 240 "$NVCC" "$@" >"$L/build-$n.log" 2>&1 || echo "exit $?" >>"$L/build-$n.log") &
}
RP="-Xlinker -rpath=$CUDA_LIB"
build rt_static -arch=sm_90 -o "$W/rt_static" "$S/rt_basic.cu"
build rt_shared -arch=sm_90 -cudart shared $RP -o "$W/rt_shared" "$S/rt_basic.cu"
build rt_ptds -arch=sm_90 --default-stream per-thread -o "$W/rt_ptds" "$S/rt_basic.cu"
build graph -arch=sm_90 -o "$W/graph" "$S/graph.cu"
build threads16 -arch=sm_90 -o "$W/threads16" "$S/threads16.cu"
build forker -arch=sm_90 -o "$W/forker" "$S/forker.cu"
build drv -arch=sm_90 $RP -o "$W/drv" "$S/drv.cu" -lcuda -lnvrtc
build ptx -ptx -arch=compute_90 -o "$W/kernels.ptx" "$S/kernels_ptx.cu"
build ptx2 -ptx -arch=compute_90 -o "$W/kernels2.ptx" "$S/kernels2_ptx.cu"
build probe -arch=sm_90 -o "$W/probe" "$ROOT/tests/shim/cudart_probe.cu"
build multiarch -gencode arch=compute_80,code=compute_80 -gencode arch=compute_90,code=sm_90 -o "$W/multiarch" "$S/rt_basic.cu"
build rdc -rdc=true -arch=sm_90 -I"$S" -o "$W/rdc" "$S/rdc_a.cu" "$S/rdc_b.cu"
wait
for f in rt_static:rt_static rt_shared:rt_shared rt_ptds:rt_ptds graph:graph threads16:threads16 forker:forker \
	drv:drv kernels.ptx:ptx kernels2.ptx:ptx2 probe:probe multiarch:multiarch rdc:rdc; do
	[ -s "$W/${f%%:*}" ] || nok "build ${f%%:*}: $(tail -3 "$L/build-${f#*:}.log" 2>/dev/null | tr '\n' ' ')"
done

# NAME MIN_REWRITTEN CMD...: run without and with the shim, compare.
run_case() {
	local n=$1 want=$2
	shift 2
	[ -x "$1" ] || { nok "$n: not built"; return; }
	timeout 120 "$@" >"$L/$n.base.out" 2>"$L/$n.base.err"
	local rb=$?
	timeout 180 env LD_LIBRARY_PATH="$SHIM_LLP" GPUEXT_LOG=info "$@" >"$L/$n.shim.out" 2>"$L/$n.shim.err"
	local rs=$?
	if [ $rb -ne 0 ]; then
		nok "$n: fails without the shim too (exit $rb): $(tail -2 "$L/$n.base.err" | tr '\n' ' ')"
		return
	fi
	if [ $rs -eq 0 ] && cmp -s "$L/$n.base.out" "$L/$n.shim.out"; then
		ok "$n: same output with the shim ($(head -c 60 "$L/$n.shim.out" | tr '\n' ' '))"
	else
		nok "$n: with the shim exit $rs, output $(cmp -s "$L/$n.base.out" "$L/$n.shim.out" && echo same || echo differs); $(grep -v '^gpuext: ' "$L/$n.shim.err" | tail -2 | tr '\n' ' ')"
	fi
	local rw bad
	rw=$(grep -c 'rewritten (identity), reloaded' "$L/$n.shim.err")
	bad=$(grep 'passed through' "$L/$n.shim.err" | grep -vc 'SASS only')
	if ! grep -q 'shim active' "$L/$n.shim.err"; then
		nok "$n: the shim was not used (no 'shim active' line)"
	elif [ "$rw" -ge "$want" ] && [ "$bad" -eq 0 ]; then
		ok "$n: $rw PTX module(s) rewritten (identity) and reloaded, none passed through for another reason"
	else
		nok "$n: $rw rewritten (want >= $want), $bad passed through: $(grep 'passed through' "$L/$n.shim.err" | grep -v 'SASS only' | head -2 | tr '\n' ' ')"
	fi
}

run_case rt_static 1 "$W/rt_static"
run_case rt_shared 1 "$W/rt_shared"
run_case rt_ptds 1 "$W/rt_ptds"
run_case graph 1 "$W/graph"
run_case threads16 1 "$W/threads16"
run_case forker 1 "$W/forker"
run_case drv_file 1 "$W/drv" file "$W/kernels.ptx"
run_case drv_link 2 "$W/drv" link "$W/kernels.ptx" "$W/kernels2.ptx"
grep -q 'linked by cuLinkComplete from 2 rewritten' "$L/drv_link.shim.err" 2>/dev/null &&
	ok "drv_link: the linked cubin is reported as built from 2 rewritten PTX inputs" ||
	nok "drv_link: no 'linked by cuLinkComplete from 2 rewritten' line"
run_case drv_nvrtc 1 "$W/drv" nvrtc
grep -q 'jit info log written back' "$L/drv_nvrtc.shim.out" 2>/dev/null &&
	ok "drv_nvrtc: JIT options written back by the driver reach the application" ||
	nok "drv_nvrtc: JIT log size not written back"
run_case cudart_probe 1 "$W/probe"
# PTX for compute_80 only + SASS sm_90: the shim JITs the compute_80 PTX.
run_case multiarch 1 "$W/multiarch"
grep -q 'reloaded from sm_80 PTX' "$L/multiarch.shim.err" 2>/dev/null &&
	ok "multiarch: the compute_80 PTX was picked for the sm_90 device" || nok "multiarch: compute_80 PTX not used"
# -rdc: two units calling each other's device functions; the shim JIT-links
# the units' rewritten PTX instead of passing the device-linked SASS through.
run_case rdc 1 "$W/rdc"
grep -q 'rewritten (identity), reloaded from sm_90 PTX of 2 -rdc units, JIT-linked' "$L/rdc.shim.err" 2>/dev/null &&
	ok "rdc: the 2 relocatable units were rewritten and JIT-linked by the shim" ||
	nok "rdc: no '2 -rdc units, JIT-linked' line: $(grep 'gpuext: module' "$L/rdc.shim.err" | head -2 | tr '\n' ' ')"
# second_start NAME BIN BASE_OUT WHAT LINE_RE: two starts with one
# GPUEXT_CACHE_DIR; the second must take WHAT from the cache (its log line
# matches LINE_RE), the first must not, and the output must be BASE_OUT's.
second_start() {
	local n=$1 bin=$2 base=$3 what=$4 re=$5 i
	for i in 1 2; do
		timeout 120 env LD_LIBRARY_PATH="$SHIM_LLP" GPUEXT_LOG=info GPUEXT_CACHE_DIR="$W/mcache-$n" "$bin" \
			>"$L/$n$i.out" 2>"$L/$n$i.err"
	done
	if cmp -s "$L/${n}2.out" "$base" && ! grep -q 'from the module cache' "$L/${n}1.err" &&
		grep -q "$re" "$L/${n}2.err"; then
		ok "module cache: the second start of $(basename "$bin") loads $what from the cache, same output"
	else
		nok "module cache ($n): second start $(grep -c 'from the module cache' "$L/${n}2.err") hits, output $(cmp -s "$L/${n}2.out" "$base" && echo same || echo differs); $(grep 'gpuext: module' "$L/${n}2.err" | head -2 | tr '\n' ' ')"
	fi
}
# The rewritten-module cache: a second start takes the rewritten PTX from it;
# for -rdc the JIT-linked cubin (no rewrite, no link).
second_start mcache "$W/rt_static" "$L/rt_static.base.out" "the rewritten PTX" \
	'rewritten (identity), reloaded from sm_[0-9]* PTX ([0-9]* bytes, from the module cache)'
second_start rdccache "$W/rdc" "$L/rdc.base.out" "the linked cubin" \
	'of 2 -rdc units, JIT-linked ([0-9]* bytes of cubin, from the module cache)'
# The same programs under gpuext-run.
if [ -x "$B/bin/gpuext-run" ]; then
	timeout 120 "$B/bin/gpuext-run" -v -- "$W/rt_static" >"$L/run.out" 2>"$L/run.err"
	[ $? -eq 0 ] && cmp -s "$L/run.out" "$L/rt_static.base.out" && grep -q 'shim active' "$L/run.err" &&
		ok "gpuext-run -v -- rt_static: same output, shim active" || nok "gpuext-run: $(tail -2 "$L/run.err" | tr '\n' ' ')"
fi
# A program that dlopens the driver by absolute path, with --audit.
CC=${CC:-cc}
TA=$B/tests/shim/test_audit
if [ ! -x "$TA" ]; then
	TA=$W/test_audit
	"$CC" -I"$ROOT" -I/usr/local/cuda/include -o "$TA" "$ROOT/tests/shim/test_audit.c" -L"$CUDA_LIB/stubs" -lcuda -ldl \
		>"$L/build-test_audit.log" 2>&1 || nok "build test_audit: $(tail -2 "$L/build-test_audit.log" | tr '\n' ' ')"
fi
if [ -n "$real" ] && [ -x "$TA" ]; then
	# The versioned file (libcuda.so.580.xx) and the libcuda.so.1 link to it.
	for p in "$(readlink -f "$real")" "$real"; do
		b=$(basename "$p")
		timeout 60 "$B/bin/gpuext-run" --audit -- "$TA" "$p" shim >"$L/audit.$b.out" 2>"$L/audit.$b.err"
		grep -q '^ok - absolute-path dlopen gives the shim' "$L/audit.$b.out" && ! grep -q '^not ok' "$L/audit.$b.out" &&
			ok "gpuext-run --audit redirects dlopen of the real driver's absolute path ($p)" ||
			nok "--audit ($p): $(grep 'not ok' "$L/audit.$b.out" | head -2 | tr '\n' ' ') $(tail -2 "$L/audit.$b.err" | tr '\n' ' ')"
	done
fi

# ---- 1b. events on the real driver: a preloaded subscriber counts them ----
# Proves cudart's launches (via cuGetProcAddress, _ptsz too) reach our
# wrappers, and that outputs stay identical on the slow path.
"$CC" -shared -fPIC -I"$ROOT" -I"$ROOT/include" -I/usr/local/cuda/include -o "$W/count.so" "$S/count_events.c" -L"$B/lib" -lcuda \
	>"$L/build-count.log" 2>&1 || nok "build count_events.so: $(tail -2 "$L/build-count.log" | tr '\n' ' ')"
ev_case() { # NAME WANT_LAUNCHES WANT_NODES CMD...
	local n=$1 wl=$2 wn=$3
	shift 3
	[ -x "$1" ] && [ -s "$W/count.so" ] || return
	timeout 120 env LD_PRELOAD="$W/count.so" LD_LIBRARY_PATH="$SHIM_LLP" "$@" >"$L/$n.ev.out" 2>"$L/$n.ev.err"
	local rc=$? line
	line=$(grep 'gx-count:' "$L/$n.ev.err" | tail -1)
	note "$n with a subscriber: $line"
	local got nm nodes
	got=$(echo "$line" | awk '{print $3}') nm=$(echo "$line" | awk '{print $5}') nodes=$(echo "$line" | awk '{print $7}')
	if [ $rc -eq 0 ] && cmp -s "$L/$n.ev.out" "$L/$n.base.out" && [ "${got:-x}" = "$wl" ] && [ "${nm:-x}" = "$wl" ] &&
		[ "${nodes:-x}" = "$wn" ]; then
		ok "$n: a subscriber sees all $wl launches (named) and $wn graph nodes; output unchanged"
	else
		nok "$n with a subscriber: exit $rc, output $(cmp -s "$L/$n.ev.out" "$L/$n.base.out" && echo same || echo differs), launches ${got:-?}/$wl named ${nm:-?} nodes ${nodes:-?}/$wn"
	fi
}
ev_case rt_static 11 0 "$W/rt_static"
ev_case rt_ptds 11 0 "$W/rt_ptds"
ev_case rt_shared 11 0 "$W/rt_shared"
ev_case graph 1 1 "$W/graph"
ev_case threads16 3232 0 "$W/threads16"
ev_case drv_file 11 0 "$W/drv" file "$W/kernels.ptx"

# ---- 2. Python ----
py_case() { # NAME MIN_REWRITTEN SCRIPT
	local n=$1 want=$2 script=$3
	local c1 c2
	c1=$(mktemp -d) c2=$(mktemp -d)
	timeout 200 env CUPY_CACHE_DIR="$c1" python3 "$script" "$L/$n.base.data" >"$L/$n.base.out" 2>"$L/$n.base.err"
	local rb=$?
	timeout 240 env CUPY_CACHE_DIR="$c2" LD_LIBRARY_PATH="$SHIM_LLP" GPUEXT_LOG=info python3 "$script" "$L/$n.shim.data" \
		>"$L/$n.shim.out" 2>"$L/$n.shim.err"
	local rs=$?
	rm -rf "$c1" "$c2"
	if [ $rb -ne 0 ]; then
		nok "$n: fails without the shim (exit $rb): $(tail -2 "$L/$n.base.err" | tr '\n' ' ')"
		return
	fi
	[ $rs -eq 0 ] && cmp -s "$L/$n.base.out" "$L/$n.shim.out" &&
		ok "$n: identical results with the shim ($(wc -l <"$L/$n.shim.out") hashes)" ||
		nok "$n: with the shim exit $rs, results $(cmp -s "$L/$n.base.out" "$L/$n.shim.out" && echo same || echo differ: $(diff "$L/$n.base.out" "$L/$n.shim.out" | head -4 | tr '\n' ' ')) $(grep -v '^gpuext: ' "$L/$n.shim.err" | tail -2 | tr '\n' ' ')"
	local rw pt bad
	rw=$(grep -c 'rewritten (identity), reloaded' "$L/$n.shim.err")
	pt=$(grep -c 'passed through: SASS only' "$L/$n.shim.err")
	bad=$(grep 'passed through' "$L/$n.shim.err" | grep -vc 'SASS only')
	note "$n: $rw modules rewritten, $pt SASS-only passed through, $bad passed through otherwise"
	grep -q 'shim active' "$L/$n.shim.err" || { nok "$n: the shim was not used"; return; }
	[ "$rw" -ge "$want" ] && [ "$bad" -eq 0 ] && ok "$n: every PTX module rewritten and reloaded ($rw), SASS-only ones passed through ($pt)" ||
		nok "$n: $rw rewritten (want >= $want), $bad passed through: $(grep 'passed through' "$L/$n.shim.err" | grep -v 'SASS only' | head -2 | tr '\n' ' ')"
}
if [[ ",$SKIP," != *,cupy,* ]]; then
	if python3 -c 'import cupy' 2>/dev/null; then
		CUPY_COMPILE_WITH_PTX=1 py_case cupy 1 "$S/cupy_check.py"
	else
		note "skip: cupy not importable"
	fi
fi
if [[ ",$SKIP," != *,torch,* ]]; then
	if python3 -c 'import torch' 2>/dev/null; then
		CUBLAS_WORKSPACE_CONFIG=:4096:8 py_case torch 0 "$S/torch_check.py"
	else
		note "skip: torch not importable"
	fi
fi

# ---- 3. benchmark ----
if [[ ",$SKIP," != *,bench,* ]]; then
	GX_BUILD=$B OUT=$OUT timeout 400 bash "$ROOT/bench/launch_overhead.sh" "${SHIM_BENCH_REPS:-11}" 2>&1 | tee -a "$L/summary.txt" | grep -E '^(ok|not ok|\||bench:|#)'
fi
echo "# logs and outputs: $L"
