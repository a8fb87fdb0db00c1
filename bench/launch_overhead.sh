#!/usr/bin/env bash
# Launch overhead and first-load time of the shim (identity rewrite) against
# the driver alone, on a GPU.
#  1. In one process (build/bench/launch_ab): the real driver's launch entry
#     points and the shim's (dlsym and cuGetProcAddress_v2, _ptsz, Ex) on the
#     same rewritten CUfunction, many alternating rounds: median per-round
#     difference and throughput ratio. This resolves a few ns; the pass/fail
#     checks (<= 50 ns added, >= 0.99 launches/s) use it.
#  2. Process level (bench/launch_overhead.cu, drv and cudart): REPS runs
#     alternating direct/shim, medians with their spread (p25..p75, min..max).
#     A launch costs 3.6-4.9 us depending on the process, so this cannot
#     resolve 50 ns; it is reported, not checked.
#  3. First load of a 64-kernel PTX module, JIT cache off, direct vs shim.
# Prints "| " table lines, "bench:" summaries and ok/not ok; writes
# $OUT/shim/bench.txt and the raw runs under $OUT/shim/bench-raw/.
#   bench/launch_overhead.sh [REPS] (default 11); N=launches per run (100000),
#   AB_ROUNDS (500), LOAD_REPS (5)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=${GX_BUILD:-$ROOT/build}
OUT=${OUT:-$B/gpu-out}
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
REPS=${1:-11}
N=${N:-100000}
AB_ROUNDS=${AB_ROUNDS:-500}
LOAD_REPS=${LOAD_REPS:-5}
mkdir -p "$OUT/shim"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
res=$OUT/shim/bench.txt
: >"$res"
if ! timeout 120 "$NVCC" -O2 -arch=sm_90 -o "$W/lo" "$ROOT/bench/launch_overhead.cu" -lcuda 2>"$W/nvcc.err"; then
	echo "not ok - bench: nvcc failed: $(head -3 "$W/nvcc.err" | tr '\n' ' ')"
	exit 1
fi
# A PTX module big enough for the JIT to take a while: 64 kernels.
{
	for i in $(seq 1 64); do
		echo "extern \"C\" __global__ void k$i(float *x, int n) { int t = blockIdx.x * blockDim.x + threadIdx.x;"
		echo "  float a = x[t % n]; for (int j = 0; j < $((i % 7 + 3)); j++) a = a * 1.0001f + sinf(a) * $i.0f;"
		echo "  x[t % n] = a; }"
	done
} >"$W/big.cu"
timeout 120 "$NVCC" -ptx -arch=compute_90 -o "$W/big.ptx" "$W/big.cu" 2>>"$W/nvcc.err" ||
	echo "not ok - bench: nvcc -ptx failed"

median() { sort -g | awk '{a[NR]=$1} END {if (NR) print (NR % 2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2); else print "nan"}'; }
# Command prefixes (timeout cannot run shell functions): direct = the
# environment as given, shim = the shim's folder first.
SHIM_ENV=(env "LD_LIBRARY_PATH=$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" GPUEXT_LOG=warn)
export GPUEXT_CACHE_DIR=${GPUEXT_CACHE_DIR:-$W/mcache}
runwho() { # WHO TIMEOUT CMD...
	local who=$1 t=$2
	shift 2
	if [ "$who" = shim ]; then
		timeout "$t" "${SHIM_ENV[@]}" "$@"
	else
		timeout "$t" "$@"
	fi
}

# ---- 1. one process: real vs shim entry points, same CUfunction ----
printf 'extern "C" __global__ void empty() {}\n' >"$W/empty.cu"
AB=$B/bench/launch_ab
if ! timeout 120 "$NVCC" -fatbin -gencode arch=compute_90,code=[sm_90,compute_90] -o "$W/empty.fatbin" "$W/empty.cu" 2>>"$W/nvcc.err"; then
	echo "not ok - bench: nvcc -fatbin failed: $(tail -2 "$W/nvcc.err" | tr '\n' ' ')"
elif [ ! -x "$AB" ]; then
	echo "not ok - bench: $AB not built (make)"
else
	timeout 240 "${SHIM_ENV[@]}" "$AB" "$W/empty.fatbin" empty "$AB_ROUNDS" 256 >"$W/ab.out" 2>"$W/ab.err"
	abrc=$?
	grep -E '^(\||#)' "$W/ab.out" | tee "$W/ab.table"
	if [ $abrc -ne 0 ] || ! grep -q '^ab cuLaunchKernel ' "$W/ab.out"; then
		echo "not ok - bench: launch_ab exited $abrc: $(tail -3 "$W/ab.err" | tr '\n' ' ')"
	else
		# Every entry point: <= 50 ns added (median of per-round differences)
		# and >= 0.99 of the direct launches/s.
		# "ab NAME direct_ns X shim_ns Y added_ns D p25 .. p75 .. ratio R ..."
		abv() { awk -v want="$1" '$1 == "ab" && $3 == "direct_ns" { delete v; for (i = 3; i < NF; i += 2) v[$i] = $(i + 1); '"$2"' }' "$W/ab.out"; }
		bad=$(abv x 'if (v["added_ns"] > 50 || v["ratio"] < 0.99) printf "%s: %+.1f ns, ratio %.4f; ", $2, v["added_ns"], v["ratio"]')
		worst=$(abv x 'if (w == "" || v["added_ns"] > w) w = v["added_ns"] } END { printf "%.1f", w')
		minr=$(abv x 'if (m == "" || v["ratio"] < m) m = v["ratio"] } END { printf "%.4f", m')
		rt=$(abv x 'if ($2 == "gpa:cuLaunchKernel/ptds") printf "%+.1f ns, ratio %.4f", v["added_ns"], v["ratio"]')
		echo "bench: in one process, shim vs real entry point: worst added $worst ns, lowest launches/s ratio $minr (cudart's per-thread path: $rt)"
		[ -z "$bad" ] && echo "ok - launch through the shim adds <= 50 ns and keeps >= 0.99 of launches/s on every entry point (worst $worst ns, $minr)" ||
			echo "not ok - launch overhead over budget (want <= 50 ns, >= 0.99): $bad"
		awk '$1 == "ab" && $2 ~ /^code:/ { printf "# rewritten (identity, JIT) vs original (SASS) code through the real entry point: %+.1f ns/launch, launches/s ratio %.4f\n", $8, $14 }' "$W/ab.out"
	fi
fi

# ---- 2. process level, alternating runs ----
for mode in drv rt; do
	for r in $(seq 1 "$REPS"); do
		for who in direct shim; do
			runwho $who 60 "$W/lo" $mode "$N" >>"$W/$mode.$who" 2>>"$W/err.$who" ||
				echo "# $who $mode run $r failed: $(tail -1 "$W/err.$who")"
		done
	done
done
# ---- 3. first load ----
# JIT cache off (CUDA_CACHE_DISABLE=1): direct; shim with an empty module
# cache (cold: parse + rewrite + JIT); shim again on that cache (warm: JIT
# only). Then a second start as users see it, the driver's JIT cache on
# (primed once each): direct vs shim with both caches warm.
for r in $(seq 1 "$LOAD_REPS"); do
	CUDA_CACHE_DISABLE=1 runwho direct 120 "$W/lo" load "$W/big.ptx" >>"$W/load.direct" 2>>"$W/err.direct" ||
		echo "# direct load run $r failed: $(tail -1 "$W/err.direct")"
	for c in shim shimwarm; do
		CUDA_CACHE_DISABLE=1 GPUEXT_CACHE_DIR=$W/mcache$r runwho shim 120 "$W/lo" load "$W/big.ptx" >>"$W/load.$c" 2>>"$W/err.shim" ||
			echo "# $c load run $r failed: $(tail -1 "$W/err.shim")"
	done
done
export CUDA_CACHE_PATH=$W/nvcache
runwho direct 120 "$W/lo" load "$W/big.ptx" >/dev/null 2>&1
GPUEXT_CACHE_DIR=$W/mcachejit runwho shim 120 "$W/lo" load "$W/big.ptx" >/dev/null 2>&1
wall() { # FILE CMD...: run, append the command's output and "wall_ms N" (the whole process)
	local f=$1 t0 t1
	shift
	t0=$(date +%s%N)
	"$@" >>"$f"
	t1=$(date +%s%N)
	awk -v n=$((t1 - t0)) 'BEGIN { printf "wall_ms %.2f\n", n / 1e6 }' >>"$f"
}
for r in $(seq 1 "$LOAD_REPS"); do
	wall "$W/load.directjit" runwho direct 120 "$W/lo" load "$W/big.ptx" 2>>"$W/err.direct"
	GPUEXT_CACHE_DIR=$W/mcachejit wall "$W/load.shimjit" runwho shim 120 "$W/lo" load "$W/big.ptx" 2>>"$W/err.shim"
done
unset CUDA_CACHE_PATH

vals() { awk -v k="$1" '{for (i = 1; i < NF; i++) if ($i == k) print $(i+1)}' "$2"; }
col() { vals "$1" "$2" | median; }
# "p25..p75 (min..max)" of a column
spread() { vals "$1" "$2" | sort -g | awk '{a[NR]=$1} END { if (!NR) { print "-"; exit }
	q1 = a[int((NR - 1) * 0.25) + 1]; q3 = a[int((NR - 1) * 0.75) + 1]; printf "%g..%g (%g..%g)", q1, q3, a[1], a[NR] }'; }
{
	echo "| case | direct | shim | shim/direct | added | direct p25..p75 (min..max) | shim p25..p75 (min..max) |"
	echo "|---|---|---|---|---|---|---|"
	for mode in drv rt; do
		d=$(col call_ns "$W/$mode.direct"); s=$(col call_ns "$W/$mode.shim")
		echo "| launch call ($mode), ns | $d | $s | $(awk -v a="$s" -v b="$d" 'BEGIN{printf "%.3f", a/b}') | $(awk -v a="$s" -v b="$d" 'BEGIN{printf "%+.1f ns", a-b}') | $(spread call_ns "$W/$mode.direct") | $(spread call_ns "$W/$mode.shim") |"
		d=$(col launches_per_s "$W/$mode.direct"); s=$(col launches_per_s "$W/$mode.shim")
		echo "| launches/s ($mode) | $d | $s | $(awk -v a="$s" -v b="$d" 'BEGIN{printf "%.4f", a/b}') | $(awk -v a="$s" -v b="$d" 'BEGIN{printf "%+.1f ns/launch", 1e9/a-1e9/b}') | $(spread launches_per_s "$W/$mode.direct") | $(spread launches_per_s "$W/$mode.shim") |"
	done
	lrow() { # LABEL DIRECT_FILE SHIM_FILE [KEY]
		local d s k=${4:-load_ms}
		d=$(col "$k" "$2"); s=$(col "$k" "$3")
		echo "| $1 | $d | $s | $(awk -v a="$s" -v b="$d" 'BEGIN{printf "%.3f", a/b}') | $(awk -v a="$s" -v b="$d" 'BEGIN{printf "%+.2f ms", a-b}') | $(spread "$k" "$2") | $(spread "$k" "$3") |"
	}
	lrow "first load, 64-kernel PTX, JIT cache off, module cache cold (ms)" "$W/load.direct" "$W/load.shim"
	lrow "first load, 64-kernel PTX, JIT cache off, module cache warm (ms)" "$W/load.direct" "$W/load.shimwarm"
	lrow "second start: load with JIT cache and module cache warm (ms)" "$W/load.directjit" "$W/load.shimjit"
	lrow "second start: whole process (start, cuInit, context, load), caches warm (ms)" "$W/load.directjit" "$W/load.shimjit" wall_ms
	[ -s "$W/ab.table" ] && { echo; echo "In one process ($AB_ROUNDS alternating rounds of 256 launches):"; cat "$W/ab.table"; }
} >"$res"
grep '^| \(launch\|first\|second\|case\||-\)' "$res"
echo "# process level: medians of $REPS alternating runs, $N launches each (a launch costs 3.6-4.9 us depending on the process: informative only); raw runs in $OUT/shim/bench-raw/"
mkdir -p "$OUT/shim/bench-raw" && cp "$W"/*.direct "$W"/*.shim "$W/ab.out" "$OUT/shim/bench-raw/" 2>/dev/null
ratio=$(awk -v a="$(col launches_per_s "$W/rt.shim")" -v b="$(col launches_per_s "$W/rt.direct")" 'BEGIN{printf "%.4f", a/b}')
added=$(awk -v a="$(col call_ns "$W/rt.shim")" -v b="$(col call_ns "$W/rt.direct")" 'BEGIN{printf "%.1f", a-b}')
echo "bench: process level (cudart): launches/s ratio $ratio, call cost added $added ns (spread: direct $(spread call_ns "$W/rt.direct"), shim $(spread call_ns "$W/rt.shim") ns)"
# A number or nothing: "nan" (no successful run) must fail, not compare true.
num() { [[ "$1" =~ ^-?[0-9]+(\.[0-9]+)?$ ]]; }
num "$ratio" && echo "ok - process-level cudart launch benchmark ran ($REPS alternating runs each side)" ||
	echo "not ok - process-level launch benchmark did not run: $(tail -2 "$W/err.shim" "$W/err.direct" 2>/dev/null | tr '\n' ' ')"
lr=$(awk -v a="$(col load_ms "$W/load.shim")" -v b="$(col load_ms "$W/load.direct")" 'BEGIN{printf "%.3f", a/b}')
lw=$(awk -v a="$(col load_ms "$W/load.shimwarm")" -v b="$(col load_ms "$W/load.direct")" 'BEGIN{printf "%.3f", a/b}')
ls2=$(awk -v a="$(col load_ms "$W/load.shimjit")" -v b="$(col load_ms "$W/load.directjit")" 'BEGIN{printf "%.3f", a/b}')
lsw=$(awk -v a="$(col wall_ms "$W/load.shimjit")" -v b="$(col wall_ms "$W/load.directjit")" 'BEGIN{printf "%.3f", a/b}')
echo "bench: first load with identity rewrite, JIT cache off: module cache cold $lr x direct, warm $lw x direct; second start with both caches warm: module load $ls2 x, whole process $lsw x direct"
num "$lr" && num "$lw" && num "$ls2" && echo "ok - first load with identity rewrite measured: cold $lr x, warm module cache $lw x, second start $ls2 x direct" ||
	echo "not ok - first-load benchmark did not run"
# The anchor (DESIGN.md: warm start <= 1.1 x uninstrumented) is about
# starting an application: the whole process, not the one load call.
if num "$lsw" && awk -v r="$lsw" 'BEGIN { exit !(r <= 1.1) }'; then
	echo "ok - second start with warm caches: the process takes $lsw x direct (<= 1.1)"
else
	echo "not ok - second start with warm caches: the process takes $lsw x direct (want <= 1.1)"
fi
