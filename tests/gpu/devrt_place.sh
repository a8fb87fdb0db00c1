#!/usr/bin/env bash
# Where a device policy's runtime block should live (bench/devrt_place.cu):
# threadhist's probe emulated on a µs-long saxpy with the block placed six
# ways, built here with nvcc (no gpuext involved). Prints its table, bench
# lines and one ok line (every probed block counted). About 10 s.
set -u
cd "${GX_ROOT:-$(dirname "$0")/../..}"
OUT=${OUT:-build/gpu-out}
mkdir -p "$OUT"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin=$tmp/devrt_place
if ! nvcc -O3 -arch=sm_90 bench/devrt_place.cu -o "$bin" >"$OUT/devrt_place.build.txt" 2>&1; then
	echo "not ok - devrt_place: nvcc failed: $(head -2 "$OUT/devrt_place.build.txt" | tr '\n' ' ')"
	exit 0
fi
timeout -k 5 120 "$bin" "${GX_REPEATS:-21}" || echo "not ok - devrt_place exited $?"
