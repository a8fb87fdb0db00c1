#!/usr/bin/env bash
# GPU truth: run on a machine with an NVIDIA GPU (the H200 of the device tool),
# from the repository root, over a tree already built here (`make`, carried
# as build/). Runs every part's GPU script (tests/gpu/<part>.sh), each of which
# prints ok/not ok lines, and collects logs and benchmark tables under $OUT.
#   tests/gpu/run.sh [--only REGEX] [--multi]
# Ends with "N passed, N failed". Part scripts get: GX_ROOT (repo root),
# GX_BUILD (build dir), OUT (log dir), GX_MULTI=1 with --multi.
set -u
cd "$(dirname "$0")/../.." || exit 2
export GX_ROOT=$PWD GX_BUILD=${GX_BUILD:-$PWD/build}
export OUT=${OUT:-$PWD/build/gpu-out}
mkdir -p "$OUT"
only="" multi=0
while [ $# -gt 0 ]; do
	case "$1" in
	--only) only=$2; shift 2 ;;
	--multi) multi=1; shift ;;
	*) echo "usage: tests/gpu/run.sh [--only REGEX] [--multi]" >&2; exit 2 ;;
	esac
done
export GX_MULTI=$multi
# Never let NCCL use NVLink multicast on shared hosts.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PATH=$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1
# Tools run on a sample of launches by default (shim/launch_sample.c); the
# parts check what a tool sees, so they instrument every launch unless told
# otherwise. perf, mlab and firstrun measure the default (they unset it).
export GPUEXT_LAUNCH_SAMPLE=${GPUEXT_LAUNCH_SAMPLE-1}

{
	echo "date: $(date -u +%FT%TZ)"
	# a carried build names its own commit (scripts/gpu-carry.sh)
	echo "commit: $(cat "$GX_BUILD/.gx-commit" 2>/dev/null || cat .gx-commit 2>/dev/null ||
		git rev-parse --short HEAD 2>/dev/null || echo unknown)"
	nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/gpu: /'
	echo "cuda: $(nvcc --version 2>/dev/null | tail -1)"
	echo "python: $(python3 -c 'import sys,torch; print(sys.version.split()[0], "torch", torch.__version__)' 2>&1 | tail -1)"
	echo "kernel: $(uname -r)"
} >"$OUT/env.txt"
cat "$OUT/env.txt"

pass=0 fail=0
for t in tests/gpu/*.sh; do
	[ "$t" = tests/gpu/run.sh ] && continue
	name=$(basename "$t" .sh)
	if [ -n "$only" ] && ! [[ "$name" =~ $only ]]; then continue; fi
	echo "== $name"
	# no process of an earlier part still on the GPU (run 97: one killed
	# by its timeout ran on and made the next part's first round 2x slow)
	for _ in $(seq 20); do
		[ -z "$(nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null)" ] && break
		sleep 1
	done
	busy=$(nvidia-smi --query-compute-apps=pid,process_name --format=csv,noheader 2>/dev/null | tr '\n' ' ')
	[ -n "$busy" ] && echo "# $name: the GPU still runs $busy(after 20 s): its timings are suspect"
	start=$(date +%s)
	# a part's limit: 300 s; ml.sh's five stacks x six configurations 900 s,
	# mlab.sh's alternated processes 600 s
	lim=300
	[ "$name" = ml ] && lim=900
	[ "$name" = mlab ] && lim=600
	timeout -k 10 "${GX_GPU_TIMEOUT:-$lim}" bash "$t" >"$OUT/$name.log" 2>&1
	rc=$?
	p=$(grep -c '^ok - ' "$OUT/$name.log")
	f=$(grep -c '^not ok - ' "$OUT/$name.log")
	grep -E '^(not ok - |\| |bench: )' "$OUT/$name.log"
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "not ok - $name exited $rc"; tail -n 20 "$OUT/$name.log"; f=1
	fi
	echo "   $p ok, $f failed ($(( $(date +%s) - start )) s)"
	pass=$((pass + p)) fail=$((fail + f))
done
echo "$pass passed, $fail failed" | tee "$OUT/summary.txt"
[ "$fail" -eq 0 ]
