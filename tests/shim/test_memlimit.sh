#!/usr/bin/env bash
# Per-tenant memory limits (docs/limits.md) through the shim and the fake
# driver: every allocation path, 16 threads racing the limit, two processes
# of one tenant, `gpuext tenant set NAME mem-limit` on a running tenant,
# kill -9 giving the budget back within 1 s, gpuext-run's flags.
set -u
B=${BUILD:-build}
FAKE=$PWD/$B/tests/shim/fakecuda/libcuda.so.1
APP=$B/tests/shim/test_memlimit
tmp=$(mktemp -d)
export GPUEXT_SHM_DIR=$tmp/shm
trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
check() { if eval "$2"; then echo "ok - $1"; else echo "not ok - $1: $2"; fi; }
# not a function: a background job is then the program itself (env execs it), so kill -9 reaches it
run=(env LD_LIBRARY_PATH="$PWD/$B/lib" GPUEXT_REAL_LIBCUDA="$FAKE" GPUEXT_CACHE=0)
M=$((1 << 20))

"${run[@]}" timeout 60 "$APP" none || echo "not ok - test_memlimit none exited $?"
"${run[@]}" GPUEXT_TENANT=paths GPUEXT_TENANT_MEM_LIMIT=64M timeout 60 "$APP" paths $((64 * M)) ||
	echo "not ok - test_memlimit paths exited $?"
"${run[@]}" GPUEXT_TENANT=race GPUEXT_TENANT_MEM_LIMIT=64M timeout 120 "$APP" race $((64 * M)) ||
	echo "not ok - test_memlimit race exited $?"

# Two processes of one tenant share the budget.
export GPUEXT_TENANT=mp GPUEXT_TENANT_MEM_LIMIT=64M
"${run[@]}" "$APP" hold $((40 * M)) >"$tmp/hold.out" 2>"$tmp/hold.err" &
hold=$!
for _ in $(seq 100); do grep -q held "$tmp/hold.out" && break; sleep 0.05; done
check "a process of tenant mp holds 40 MiB of 64" "grep -q held '$tmp/hold.out'"
"${run[@]}" timeout 20 "$APP" try $((32 * M)) >/dev/null 2>&1
check "another process of mp cannot take 32 MiB more" "[ $? -eq 2 ]"
"${run[@]}" timeout 20 "$APP" try $((16 * M)) >/dev/null 2>&1
check "but 16 MiB fit" "[ $? -eq 0 ]"
list=$(env -u GPUEXT_TENANT "$B/bin/gpuext" --json tenant list)
check "gpuext tenant list: limit, usage, high-water" \
	"echo '$list' | grep -q '\"mem_limit\":$((64 * M)),\"mem_used\":$((40 * M)),\"mem_hiwater\":$((56 * M))'"
check "gpuext tenant (table): MEM columns" "env -u GPUEXT_TENANT '$B/bin/gpuext' tenant | grep -q 'MEM(MiB)'"
check "gpuext tenant set mp mem-limit 32M" "env -u GPUEXT_TENANT '$B/bin/gpuext' tenant set mp mem-limit 32M"
"${run[@]}" timeout 20 "$APP" try $((1 * M)) >/dev/null 2>&1
check "lowered below usage: a new allocation fails" "[ $? -eq 2 ]"
check "and the holder still runs (nothing freed)" "kill -0 $hold"
env -u GPUEXT_TENANT "$B/bin/gpuext" tenant set mp mem-limit 64M
"${run[@]}" timeout 20 "$APP" wait $((32 * M)) >"$tmp/wait.out" 2>"$tmp/wait.err" &
waiter=$!
sleep 0.3
kill -9 $hold
wait $waiter
rc=$?
ms=$(head -1 "$tmp/wait.out")
check "kill -9 of the holder: its 40 MiB back for the other (waited ${ms:-?} ms after 300)" \
	"[ $rc -eq 0 ] && [ ${ms:-9999} -le 1300 ]"
unset GPUEXT_TENANT GPUEXT_TENANT_MEM_LIMIT

# gpuext-run's flags set the same.
"${run[@]}" timeout 60 "$B/bin/gpuext-run" --tenant cli --mem-limit 64M -- "$APP" paths $((64 * M)) >"$tmp/cli.out" 2>&1
check "gpuext-run --tenant cli --mem-limit 64M: the limit in force ($(grep -c '^ok' "$tmp/cli.out") checks)" \
	"! grep -q '^not ok' '$tmp/cli.out' && grep -q '^ok - cuMemGetInfo_v2: total 64 MiB' '$tmp/cli.out'"
check "gpuext-run --gpu-share 101 refused" \
	"! '$B/bin/gpuext-run' --tenant cli --gpu-share 101 -- true 2>/dev/null"
check "gpuext-run --mem-limit 4X refused" "! '$B/bin/gpuext-run' --tenant cli --mem-limit 4X -- true 2>/dev/null"
check "nothing left in the maps folder" "[ -z \"\$(ls -A '$tmp/shm' 2>/dev/null)\" ]"
