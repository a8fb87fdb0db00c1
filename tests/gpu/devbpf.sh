#!/usr/bin/env bash
# devbpf on the GPU: JIT'd policies linked by the driver into a test kernel,
# device maps and helpers, compared with the interpreter's run of the same
# events (expected.txt, made at build time by build/tests/devbpf/gpu/gpu_ref);
# then the map-update micro-benchmark (warp-leader aggregated vs per-thread).
# Inputs come from the build tree (make): build/tests/devbpf/gpu/.
set -u
ROOT=${GX_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${GX_BUILD:-$ROOT/build}
OUT=${OUT:-$BUILD/gpu-out}
SRC=$BUILD/tests/devbpf/gpu
W=$OUT/devbpf
mkdir -p "$W"
for f in policy.ptx bench.ptx maps.txt bench_maps.txt expected.txt kernels_check.ptx kernels_bench.ptx devbpf_harness; do
	if [ ! -e "$SRC/$f" ]; then echo "not ok - devbpf: $SRC/$f missing (run make)"; exit 1; fi
	cp "$SRC/$f" "$W/"
done
cd "$ROOT"
# The kernels are compiled here with this machine's nvcc when there is one
# (the prebuilt PTX from the build machine otherwise).
if command -v nvcc >/dev/null 2>&1; then
	for v in check bench; do
		V=$(echo $v | tr a-z A-Z)
		if nvcc -arch=sm_90 -rdc=true -ptx -I. -Iinclude -DGX_KERNELS_$V tests/gpu/devbpf_kernels.cu \
			-o "$W/kernels_$v.ptx" 2>"$W/nvcc_$v.log"; then
			echo "ok - nvcc compiles the $v kernels on this machine"
		else
			echo "not ok - nvcc $v kernels: $(head -3 "$W/nvcc_$v.log")"
			cp "$SRC/kernels_$v.ptx" "$W/"
		fi
	done
fi
H=$W/devbpf_harness
"$H" >/dev/null 2>&1
if [ $? -ne 2 ] && command -v nvcc >/dev/null 2>&1; then # prebuilt one does not run here
	nvcc -o "$H" -I. -Iinclude tests/gpu/devbpf_harness.c tests/devbpf/gpu/gpu_common.c \
		"$BUILD/lib/libgxbpf.a" "$BUILD/lib/libgxcommon.a" -lcuda -lpthread
fi

"$H" check "$W" 2>&1 | tee "$W/check.log"
if [ -f "$W/gpu.txt" ] && diff -u "$W/expected.txt" "$W/gpu.txt" >"$W/diff.txt"; then
	echo "ok - GPU map state equals the interpreter's on the same events ($(wc -l <"$W/gpu.txt") lines)"
else
	echo "not ok - GPU map state differs from the interpreter's (see $W/diff.txt)"
	head -20 "$W/diff.txt"
fi
"$H" bench "$W" 2>&1 | tee "$W/bench.log"
