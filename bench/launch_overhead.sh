#!/usr/bin/env bash
# Launch overhead and first-load time of the shim (identity rewrite) against
# the driver alone, on a GPU. Builds bench/launch_overhead.cu with nvcc, runs
# each case REPS times alternating direct/shim runs, prints a table of
# medians ("| " lines) and a "bench:" summary; writes $OUT/shim/bench.txt.
#   bench/launch_overhead.sh [REPS] (default 7); N=launches per run (200000)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=${GX_BUILD:-$ROOT/build}
OUT=${OUT:-$B/gpu-out}
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
REPS=${1:-7}
N=${N:-200000}
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
runwho() { # WHO TIMEOUT CMD...
	local who=$1 t=$2
	shift 2
	if [ "$who" = shim ]; then
		timeout "$t" "${SHIM_ENV[@]}" "$@"
	else
		timeout "$t" "$@"
	fi
}

for mode in drv rt; do
	for r in $(seq 1 "$REPS"); do
		for who in direct shim; do
			runwho $who 60 "$W/lo" $mode "$N" >>"$W/$mode.$who" 2>>"$W/err.$who" ||
				echo "# $who $mode run $r failed: $(tail -1 "$W/err.$who")"
		done
	done
done
for r in $(seq 1 "$REPS"); do
	for who in direct shim; do
		CUDA_CACHE_DISABLE=1 runwho $who 120 "$W/lo" load "$W/big.ptx" >>"$W/load.$who" 2>>"$W/err.$who" ||
			echo "# $who load run $r failed: $(tail -1 "$W/err.$who")"
	done
done

col() { awk -v k="$1" '{for (i = 1; i < NF; i++) if ($i == k) print $(i+1)}' "$2" | median; }
{
	echo "| case | direct | shim | shim/direct | added |"
	echo "|---|---|---|---|---|"
	for mode in drv rt; do
		d=$(col call_ns "$W/$mode.direct"); s=$(col call_ns "$W/$mode.shim")
		echo "| launch call ($mode), ns | $d | $s | $(awk -v a="$s" -v b="$d" 'BEGIN{printf "%.3f", a/b}') | $(awk -v a="$s" -v b="$d" 'BEGIN{printf "%+.1f ns", a-b}') |"
		d=$(col launches_per_s "$W/$mode.direct"); s=$(col launches_per_s "$W/$mode.shim")
		echo "| launches/s ($mode) | $d | $s | $(awk -v a="$s" -v b="$d" 'BEGIN{printf "%.4f", a/b}') | $(awk -v a="$s" -v b="$d" 'BEGIN{printf "%+.1f ns/launch", 1e9/a-1e9/b}') |"
	done
	d=$(col load_ms "$W/load.direct"); s=$(col load_ms "$W/load.shim")
	echo "| first load, 64-kernel PTX, JIT cache off (ms) | $d | $s | $(awk -v a="$s" -v b="$d" 'BEGIN{printf "%.3f", a/b}') | $(awk -v a="$s" -v b="$d" 'BEGIN{printf "%+.2f ms", a-b}') |"
} | tee "$res"
echo "# medians of $REPS alternating runs, $N launches each; raw runs in $OUT/shim/bench-raw/"
mkdir -p "$OUT/shim/bench-raw" && cp "$W"/*.direct "$W"/*.shim "$OUT/shim/bench-raw/" 2>/dev/null
ratio=$(awk -v a="$(col launches_per_s "$W/rt.shim")" -v b="$(col launches_per_s "$W/rt.direct")" 'BEGIN{printf "%.4f", a/b}')
added=$(awk -v a="$(col call_ns "$W/rt.shim")" -v b="$(col call_ns "$W/rt.direct")" 'BEGIN{printf "%.1f", a-b}')
echo "bench: shim launch throughput ratio (cudart) $ratio, call cost added $added ns"
# A number or nothing: "nan" (no successful run) must fail, not compare true.
num() { [[ "$1" =~ ^-?[0-9]+(\.[0-9]+)?$ ]]; }
if num "$ratio" && awk -v r="$ratio" 'BEGIN{exit !(r >= 0.99)}'; then
	echo "ok - launch throughput through the shim >= 0.99 of direct ($ratio)"
else
	echo "not ok - launch throughput through the shim is $ratio of direct (want >= 0.99); errors: $(tail -2 "$W/err.shim" "$W/err.direct" 2>/dev/null | tr '\n' ' ')"
fi
if num "$added" && awk -v a="$added" 'BEGIN{exit !(a <= 50)}'; then
	echo "ok - launch call cost added <= 50 ns ($added ns)"
else
	echo "not ok - launch call cost added $added ns (want <= 50)"
fi
lr=$(awk -v a="$(col load_ms "$W/load.shim")" -v b="$(col load_ms "$W/load.direct")" 'BEGIN{printf "%.3f", a/b}')
num "$lr" && echo "ok - first load with identity rewrite measured: $lr x direct" || echo "not ok - first-load benchmark did not run"
