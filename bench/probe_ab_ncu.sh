#!/usr/bin/env bash
# GPU, by hand: probe_ab's kernels under ncu — one launch of KERNEL for each
# named variant (its first, checking launch; bench/probe_ab launches each
# variant once in name order before timing), with the sections that say
# where a short block's cycles go (issue 40, docs/devbpf-perf.md session 30:
# warp instructions, cycles, achieved occupancy, warp state).
#   bench/probe_ab_ncu.sh KERNEL VARIANT...   (nat is always included)
# Writes $OUT/ncu-KERNEL.txt. Needs ncu and a device that allows profiling.
set -u
ROOT=${GX_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
B=${GX_BUILD:-$ROOT/build}
OUT=${OUT:-$B/gpu-out}
K=${1:?kernel}
shift
S=$(mktemp -d)
trap 'rm -rf "$S"' EXIT
for v in nat "$@"; do cp "$B/bench/probe_ab_ptx/$v.ptx" "$S/" || exit 1; done
# nat brings its two linked copies along (bench/probe_ab.c): 3 + the rest
n=$(($# + 3))
export PATH=$PATH:/usr/local/cuda/bin
mkdir -p "$OUT"
timeout 200 ncu --kernel-name "regex:^$K\$" --launch-count "$n" --section SpeedOfLight --section WarpStateStats \
	--section SchedulerStats --section Occupancy --section InstructionStats \
	--metrics smsp__inst_executed.sum,smsp__thread_inst_executed.sum,sm__cycles_active.avg,gpu__time_duration.sum \
	"$B/bench/probe_ab" "$S" 1 1 >"$OUT/ncu-$K.txt" 2>&1
echo "probe_ab_ncu: rc $? (launches in name order: $(cd "$S" && ls *.ptx | sed 's/\.ptx$//' | tr '\n' ' ')+ linked copies of nat)"
