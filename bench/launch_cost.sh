#!/usr/bin/env bash
# launch_cost.sh — the shim's own instructions per launch, exact (callgrind),
# on the CPU: what the launch path adds under each tool, without the timing
# noise of this machine (launch_ab's nanoseconds vary by ±50 % here).
#
# bench/launch_ab launches a kernel through the shim against the attach test
# driver (device-memory semantics); callgrind counts only inside the shim's
# launch_event and launch_done (the event, its subscribers: the device
# runtime's handler, the launch record, timing), less what the fake driver
# itself executes when the shim calls it (its cuCtxGetCurrent logs every call:
# not a cost of ours). Two runs of different lengths, and the difference per
# launch, so one-time work (the first launch sets up the context's runtime)
# cancels out.
#   bench/launch_cost.sh [TOOL...]     (default: none threadhist kernelretsnoop)
# Prints one line per tool: "launch_cost TOOL N instructions per launch".
set -eu
B=$(cd "${BUILD:-build}" && pwd)
command -v valgrind >/dev/null || { echo "launch_cost: valgrind is not installed" >&2; exit 2; }
[ -x "$B/bench/launch_ab" ] || { echo "launch_cost: build first ($B/bench/launch_ab)" >&2; exit 2; }
FAKE=$B/tests/attach/fakecuda/libcuda.so.1
PTX=$(cd "$(dirname "$0")/.." && pwd)/tests/ptx-rewrite/golden-passes/vadd.ptx
T=$(mktemp -d)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$T"' EXIT; [ -n "${KEEP:-}" ] && echo "launch_cost: files in $T" >&2

# "INSTRUCTIONS LAUNCHES" inside the two functions, less the fake driver's work
count() { # tool rounds
	local out=$T/cg.$1.$2
	env -u GPUEXT_TOOL -u GPUEXT_POLICY LD_LIBRARY_PATH="$B/lib" GPUEXT_REAL_LIBCUDA="$FAKE" \
		GPUEXT_TOOLS_DIR="$B/share/gpuext/tools" GPUEXT_SHM_DIR="$T" GPUEXT_CACHE_DIR="$T/cache" \
		${1:+GPUEXT_TOOL=$1} GPUEXT_LOG=error \
		valgrind --tool=callgrind --collect-atstart=no --toggle-collect=launch_event \
		--toggle-collect=launch_done --callgrind-out-file="$out" \
		"$B/bench/launch_ab" "$PTX" vadd "$2" 64 >/dev/null 2>"$out.err" ||
		{ echo "launch_cost: launch_ab failed under ${1:-no tool}" >&2; tail -3 "$out.err" >&2; exit 1; }
	python3 "$(dirname "$0")/cg_launch.py" "$out"
}
TOOLS=("$@")
[ $# -gt 0 ] || TOOLS=("" threadhist kernelretsnoop)
for tool in "${TOOLS[@]}"; do
	# command substitution, not < <(...): a failed run stops the script
	a=$(count "$tool" 4)
	b=$(count "$tool" 12)
	read -r ia na <<<"$a"
	read -r ib nb <<<"$b"
	if [ "$nb" -le "$na" ]; then
		echo "launch_cost ${tool:-none} 0 instructions per launch (no launch reached the shim's slow path)"
		continue
	fi
	awk -v a="$ia" -v b="$ib" -v n=$((nb - na)) -v t="${tool:-none}" \
		'BEGIN { printf "launch_cost %s %.0f instructions per launch\n", t, (b - a) / n }'
done
