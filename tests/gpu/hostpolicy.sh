#!/usr/bin/env bash
# GPU checks of host struct_ops policies in the shim (run by
# tests/gpu/run.sh, or alone from the repo root after `make`):
#  1. bench/uvm_prefetch.sh: one nvcc program over managed memory (seq,
#     stride, random, ping-pong, pipeline), default UVM vs hand-written
#     cudaMemPrefetchAsync vs the unchanged program under the shim with
#     gx_seq / gx_stride / gx_tree; outputs compared across modes, table in
#     $OUT/hostpolicy/uvm_prefetch.md;
#  2. CuPy with its managed-memory allocator and PyTorch with a managed
#     allocator (CUDAPluggableAllocator, .so built here) under the prefetch
#     policies: results identical to runs without the shim.
# Prints ok/not ok lines; logs under $OUT/hostpolicy/. HOSTPOLICY_SKIP=bench,cupy,torch.
# Needs ~5 minutes; under tests/gpu/run.sh use GX_GPU_TIMEOUT=600 to be safe.
set -u
ROOT=${GX_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
B=${GX_BUILD:-$ROOT/build}
OUT=${OUT:-$B/gpu-out}
L=$OUT/hostpolicy
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
SKIP=${HOSTPOLICY_SKIP:-}
mkdir -p "$L"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
ok() { echo "ok - $*" | tee -a "$L/summary.txt"; }
nok() { echo "not ok - $*" | tee -a "$L/summary.txt"; }
: >"$L/summary.txt"
SHIM_LLP="$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
POLICIES=${HOSTPOLICY_POLICIES:-"seq stride tree"}

for p in $POLICIES; do
	[ -f "$B/hostbpf/gx_$p.bpf.o" ] || nok "policy object $B/hostbpf/gx_$p.bpf.o missing"
done

# ---- 1. benchmark ----
if [[ ",$SKIP," != *,bench,* ]]; then
	OUT=$OUT GX_BUILD=$B bash "$ROOT/bench/uvm_prefetch.sh" 2>&1 | tee "$L/bench.log" | grep -E '^(not )?ok - ' |
		tee -a "$L/summary.txt" >/dev/null
	grep -E '^(not )?ok - ' "$L/bench.log" || nok "bench/uvm_prefetch.sh printed no results"
	[ -f "$L/uvm_prefetch.md" ] && cat "$L/uvm_prefetch.md"
fi

# ---- 2. CuPy and PyTorch with managed memory ----
PY=${PYTHON:-python3}
cat >"$W/cupy_managed.py" <<'PYEOF'
import cupy as cp
cp.cuda.set_allocator(cp.cuda.MemoryPool(cp.cuda.malloc_managed).malloc)
n = 1 << 26
x = cp.arange(n, dtype=cp.int64)
y = (x * 3 + 1) % 1000003
z = cp.cumsum(y[::7])
m = cp.arange(1 << 20, dtype=cp.float32).reshape(1024, 1024) % 17
print(int(y.sum()), int(z[-1]), int(z.size), float((m @ m).sum()))
PYEOF
cat >"$W/torch_managed.py" <<'PYEOF'
import sys, torch
alloc = torch.cuda.memory.CUDAPluggableAllocator(sys.argv[1], "gx_alloc", "gx_free")
torch.cuda.memory.change_current_allocator(alloc)
n = 1 << 26
x = torch.arange(n, device="cuda", dtype=torch.int64)
y = (x * 3 + 1) % 1000003
m = (torch.arange(1 << 20, device="cuda", dtype=torch.float32).reshape(1024, 1024) % 17)
print(int(y.sum()), int(y[::7].cumsum(0)[-1]), float((m @ m).sum()))
PYEOF
cat >"$W/managed_alloc.cu" <<'CEOF'
#include <cuda_runtime_api.h>
#include <stddef.h>
extern "C" void *gx_alloc(size_t size, int device, void *stream)
{
	void *p = NULL;
	(void)device, (void)stream;
	return cudaMallocManaged(&p, size ? size : 1, cudaMemAttachGlobal) == cudaSuccess ? p : NULL;
}
extern "C" void gx_free(void *p, size_t size, int device, void *stream)
{
	(void)size, (void)device, (void)stream;
	cudaFree(p);
}
CEOF

py_case() { # name script [args]
	local name=$1
	shift
	timeout 120 "$PY" "$@" >"$L/$name.base.out" 2>"$L/$name.base.err"
	local rb=$?
	if [ $rb -ne 0 ]; then
		nok "$name: runs without the shim (rc $rb, see $L/$name.base.err)"
		return
	fi
	for p in $POLICIES; do
		timeout 120 env LD_LIBRARY_PATH="$SHIM_LLP" GPUEXT_LOG=info GPUEXT_POLICY="$B/hostbpf/gx_$p.bpf.o" \
			"$PY" "$@" >"$L/$name.$p.out" 2>"$L/$name.$p.err"
		local rs=$?
		if [ $rs -eq 0 ] && cmp -s "$L/$name.base.out" "$L/$name.$p.out"; then
			ok "$name under gx_$p: identical results ($(grep -o '[0-9]* prefetch calls' "$L/$name.$p.err" | tail -1))"
		else
			nok "$name under gx_$p: rc $rs or different output (see $L/$name.$p.*)"
		fi
		grep -q "attached memory policy" "$L/$name.$p.err" && ok "$name under gx_$p: policy attached" ||
			nok "$name under gx_$p: no 'attached memory policy' line"
	done
}

if [[ ",$SKIP," != *,cupy,* ]]; then
	if "$PY" -c 'import cupy' 2>/dev/null; then
		py_case cupy "$W/cupy_managed.py"
	else
		ok "# SKIP cupy not importable"
	fi
fi
if [[ ",$SKIP," != *,torch,* ]]; then
	if "$PY" -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
		if timeout 300 "$NVCC" -shared -Xcompiler -fPIC -o "$W/managed_alloc.so" "$W/managed_alloc.cu" \
			>"$L/alloc_build.log" 2>&1; then
			py_case torch "$W/torch_managed.py" "$W/managed_alloc.so"
		else
			nok "torch: building the managed allocator .so failed (see $L/alloc_build.log)"
		fi
	else
		ok "# SKIP torch not importable"
	fi
fi
exit 0
