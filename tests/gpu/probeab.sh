#!/usr/bin/env bash
# GPU: the threadhist block probe taken apart on two short barrier kernels
# (issue 40; bench/probe_ab.c, variants from bench/probe_ab_variants.py):
# CuPy's shared-memory stencil and a block reduction, natively and with each
# variant of the probe, in one process, medians of interleaved rounds. Also
# the SASS of the native kernels and of every variant, for reading offline.
# Under 150 s with ncu (bench/probe_ab_ncu.sh, PROBEAB_NCU=0: none).
# Logs in $OUT/probeab/
set -u
ROOT=${GX_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$ROOT" || exit 1
B=${GX_BUILD:-build}
OUT=${OUT:-$B/gpu-out}
L=$OUT/probeab
mkdir -p "$L"
export PATH=$PATH:/usr/local/cuda/bin
D=$B/bench/probe_ab_ptx
if ! [ -x "$B/bench/probe_ab" ] || ! [ -f "$D/nat.ptx" ]; then
	echo "not ok - probeab: $B/bench/probe_ab or $D missing (make gpu-prep)"
	exit 0
fi
for v in $(cd "$D" && ls *.ptx | sed "s/\.ptx$//"); do
	ptxas -arch=sm_90 "$D/$v.ptx" -o "$L/$v.cubin" 2>"$L/$v.ptxas.log" &&
		cuobjdump -sass "$L/$v.cubin" >"$L/$v.sass" 2>&1
	rm -f "$L/$v.cubin"
done
# memtrace's sites, for reading offline (bench/build.mk, BENCH_SASS_IN)
for f in "$B"/bench/sass_in/*.ptx; do
	[ -f "$f" ] || continue
	n=$(basename "$f" .ptx)
	ptxas -arch=sm_90 "$f" -o "$L/$n.cubin" 2>"$L/$n.ptxas.log" && cuobjdump -sass "$L/$n.cubin" >"$L/$n.sass" 2>&1
	rm -f "$L/$n.cubin"
done
CUDA_CACHE_DISABLE=1 timeout -k 5 150 "$B/bench/probe_ab" "$D" 21 50 >"$L/probe_ab.txt" 2>&1
rc=$?
cat "$L/probe_ab.txt"
[ "$rc" -eq 0 ] || echo "not ok - probeab: probe_ab exited $rc"
# ncu on one launch of the stencil for the variants that say where a short
# block's cycles go (docs/devbpf-perf.md, session 30); PROBEAB_NCU=0 skips.
if [ "${PROBEAB_NCU:-1}" != 0 ] && { command -v ncu >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/ncu ]; }; then
	OUT=$L GX_BUILD=$B "$ROOT/bench/probe_ab_ncu.sh" stencil3 th_none th_min th_pentry th_bentry th_pexit th_t0e th_dead
fi
