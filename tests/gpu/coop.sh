#!/usr/bin/env bash
# Cooperative kernels with grid-wide syncs under every tool (issue 20, item
# 9): tests/gpu/coop/gridsync.cu, built with its PTX (so every tool's hooks
# reach it) and sized with the occupancy API, must give the native sum
# under each tool within a time limit (a tool must never stall a program).
set -u
ROOT=${GX_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
B=${GX_BUILD:-$ROOT/build}
OUT=${OUT:-$B/gpu-out}
L=$OUT/coop
mkdir -p "$L"
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
export GPUEXT_CACHE_DIR=${GPUEXT_CACHE_DIR:-$B/cache} GPUEXT_TOOLS_DIR=$B/share/gpuext/tools
APP=$W/gridsync
if ! nvcc -O2 -arch=sm_90 -gencode arch=compute_90,code=compute_90 -o "$APP" "$ROOT/tests/gpu/coop/gridsync.cu" \
	>"$L/nvcc.log" 2>&1; then
	echo "not ok - coop: nvcc gridsync.cu: $(tail -2 "$L/nvcc.log" | tr '\n' ' ')"; exit 0
fi
timeout 60 "$APP" >"$L/native.out" 2>&1 || { echo "not ok - coop: gridsync natively: $(tail -2 "$L/native.out")"; exit 0; }
ref=$(sed -n 's/^sum \([0-9.]*\) bad 0 status no error$/\1/p' "$L/native.out")
echo "# coop native: $(tr '\n' ' ' <"$L/native.out")"
for tool in threadhist kernelretsnoop launchlate memtrace; do
	mkdir -p "$W/shm-$tool"
	t0=$(date +%s)
	GPUEXT_SHM_DIR=$W/shm-$tool timeout 60 "$B/bin/gpuext-run" -v --tool $tool -- "$APP" >"$L/$tool.out" 2>"$L/$tool.err"
	rc=$?
	got=$(sed -n 's/^sum \([0-9.]*\) bad 0 status no error$/\1/p' "$L/$tool.out")
	echo "# coop $tool: rc $rc in $(( $(date +%s) - t0 )) s: $(grep -E '^(sum|blocks)' "$L/$tool.out" | tr '\n' ' ') $(grep -E 'gridsync|reduce_grid|launches:' "$L/$tool.err" | head -3 | tr '\n' ' ')"
	[ $rc = 0 ] && [ -n "$ref" ] && [ "$got" = "$ref" ] && echo "ok - coop: grid-sync kernel under $tool: same sum, within 60 s" ||
		echo "not ok - coop: grid-sync kernel under $tool: rc $rc, sum '$got' vs '$ref'"
done
