#!/usr/bin/env bash
# --gpu-share holds CUDA graph launches too (docs/limits.md), through the
# shim and the fake driver (kernels of FAKECUDA_KERNEL_US each, a graph
# launch runs its kernel nodes): a tenant that only replays a graph, beside
# one that launches kernels, both with a share, has its graph launches
# tracked (counted as launches, complete) and held in the other's turns;
# alone, or without a share, it is never held.
set -u
B=${BUILD:-build}
ROOT=$PWD
tmp=$(mktemp -d)
trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
check() { if eval "$1"; then echo "ok - share-graph: $2"; else echo "not ok - share-graph: $2${3:+: $3}"; fi; }
APP=$B/tests/tenant/tn_app
run() { # NAME ENV... -- ARGS
	local name=$1
	shift
	local envs=()
	while [ "$1" != "--" ]; do envs+=("$1"); shift; done
	shift
	env LD_LIBRARY_PATH="$ROOT/$B/lib" GPUEXT_REAL_LIBCUDA="$ROOT/$B/tests/shim/fakecuda/libcuda.so.1" \
		GPUEXT_CACHE_DIR="$tmp/cache" GPUEXT_SHM_DIR="$tmp/shm" GPUEXT_LOG=info FAKECUDA_KERNEL_US=2000 \
		"${envs[@]}" timeout 60 "$APP" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
}
# "tenant: 'NAME' (be) on device 0: N launches, N complete, max M in flight, H held for T ms; ..."
exitline() { grep "tenant: '.*) on device" "$tmp/$1.err"; }
field() { exitline "$1" | sed -n "s/.* \([0-9][0-9]*\) $2.*/\1/p" | head -1; }

run alone GPUEXT_TENANT=g GPUEXT_TENANT_GPU_SHARE=50 -- graph 100
check "[ \"\$(field alone launches)\" = 100 ] && [ \"\$(field alone complete)\" = 100 ]" \
	"a graph-only tenant with a share: its 100 graph launches tracked" "$(exitline alone)"
check "[ \"\$(field alone held)\" = 0 ]" "alone with a share: never held" "$(exitline alone)"

run k GPUEXT_TENANT=k GPUEXT_TENANT_GPU_SHARE=50 -- be 300 1 &
k=$!
run g GPUEXT_TENANT=g GPUEXT_TENANT_GPU_SHARE=50 -- graph 300
wait $k
check "grep -q 'RESULT role=graph launches=300 ' '$tmp/g.out' && grep -q 'RESULT role=be launches=300 ' '$tmp/k.out'" \
	"both ran to the end"
held=$(field g held)
check "[ \"\${held:-0}\" -gt 0 ] && [ \"\$(field g launches)\" = 300 ]" \
	"beside a tenant with a share: graph launches held in its turns (${held:-?} held)" "$(exitline g)"

run k2 GPUEXT_TENANT=k2 GPUEXT_TENANT_GPU_SHARE=50 -- be 300 1 &
k=$!
run n GPUEXT_TENANT=n -- graph 300
wait $k
check "[ \"\$(field n held)\" = 0 ] && [ \"\$(field n launches)\" = 0 ]" \
	"a tenant without a share: its graph launches neither held nor tracked" "$(exitline n)"
check "[ -z \"\$(ls -A '$tmp/shm' 2>/dev/null)\" ]" "nothing left in the maps folder"
