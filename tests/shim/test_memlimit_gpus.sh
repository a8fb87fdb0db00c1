#!/usr/bin/env bash
# Memory limits per GPU and on pools (docs/limits.md) through the shim and
# the fake driver (two devices, UUIDs 0101.. and 0202..; pools that cache
# what is freed into them until a trim):
#  - --mem-limit holds on each GPU: a tenant holding 40 of 64 MiB on device 0
#    still gets 48 MiB on device 1, not 32 more on device 0;
#  - ORDINAL=SIZE and GPUEXT_TENANT_MEM_LIMIT_<n> give one GPU its own limit,
#    which cuMemGetInfo reports there;
#  - gpuext tenant (table and --json) shows usage and high-water per GPU;
#    gpuext tenant set NAME mem-limit GPU-UUID=SIZE sets one GPU's limit;
#  - 16 threads racing on each of two devices, two processes of one tenant;
#    16 threads racing stream-ordered allocations on a pool: never over,
#    the budget is what the pool holds, a trim gives it back;
#  - a tenant table of another version is refused with one line, and the
#    program runs on unlimited.
set -u
B=${BUILD:-build}
FAKE=$PWD/$B/tests/shim/fakecuda/libcuda.so.1
APP=$B/tests/shim/test_memlimit
tmp=$(mktemp -d)
export GPUEXT_SHM_DIR=$tmp/shm
trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
check() { if eval "$2"; then echo "ok - $1"; else echo "not ok - $1: $2"; fi; }
run=(env LD_LIBRARY_PATH="$PWD/$B/lib" GPUEXT_REAL_LIBCUDA="$FAKE" GPUEXT_CACHE=0 FAKECUDA_DEVICES=2)
gx() { env -u GPUEXT_TENANT -u GPUEXT_TENANT_MEM_LIMIT "$B/bin/gpuext" "$@"; }
M=$((1 << 20))
U0=GPU-01010101-0101-0101-0101-010101010101
U1=GPU-02020202-0202-0202-0202-020202020202

# Per GPU: the same limit on each.
export GPUEXT_TENANT=pg GPUEXT_TENANT_MEM_LIMIT=64M
"${run[@]}" "$APP" hold $((40 * M)) >"$tmp/hold.out" 2>"$tmp/hold.err" &
hold=$!
for _ in $(seq 100); do grep -q held "$tmp/hold.out" && break; sleep 0.05; done
check "tenant pg holds 40 MiB of 64 on device 0" "grep -q held '$tmp/hold.out'"
"${run[@]}" TEST_ML_DEV=0 timeout 20 "$APP" try $((32 * M)) >/dev/null 2>&1
check "on device 0, 32 MiB more are refused" "[ $? -eq 2 ]"
"${run[@]}" TEST_ML_DEV=1 "$APP" hold $((48 * M)) >"$tmp/hold1.out" 2>"$tmp/hold1.err" &
hold1=$!
for _ in $(seq 100); do grep -q held "$tmp/hold1.out" && break; sleep 0.05; done
check "on device 1, 48 MiB fit: the limit holds per GPU" "grep -q held '$tmp/hold1.out'"
gx --json tenant list >"$tmp/pg.json"
check "gpuext --json tenant list: both GPUs, their usage and high-water" \
	"grep -q '\"uuid\":\"$U0\",\"mem_limit\":$((64 * M)),\"mem_used\":$((40 * M)),\"mem_hiwater\":$((40 * M))' '$tmp/pg.json' &&
	 grep -q '\"uuid\":\"$U1\",\"mem_limit\":$((64 * M)),\"mem_used\":$((48 * M)),\"mem_hiwater\":$((48 * M))' '$tmp/pg.json' &&
	 grep -q '\"mem_used\":$((88 * M))' '$tmp/pg.json'"
gx tenant >"$tmp/pg.txt"
check "gpuext tenant: a row per GPU under the tenant's" \
	"grep -q '$U0 *MEM(MiB) 40/64 HIGH(MiB) 40 REFUSED 1' '$tmp/pg.txt' && grep -q '$U1 *MEM(MiB) 48/64' '$tmp/pg.txt'"
check "gpuext tenant set pg mem-limit $U0=48M: one GPU's own limit" "gx tenant set pg mem-limit $U0=48M"
out0=$("${run[@]}" TEST_ML_DEV=0 timeout 20 "$APP" info 2>/dev/null)
out1=$("${run[@]}" TEST_ML_DEV=1 timeout 20 "$APP" info 2>/dev/null)
check "cuMemGetInfo: 8 MiB of 48 free on device 0, 16 of 64 on device 1" \
	"[ '$out0' = 'total=$((48 * M)) free=$((8 * M))' ] && [ '$out1' = 'total=$((64 * M)) free=$((16 * M))' ]"
check "a GPU the tenant does not use is refused" \
	"! gx tenant set pg mem-limit GPU-03030303-0303-0303-0303-030303030303=1G 2>/dev/null"
check "a malformed GPU-UUID=SIZE is refused" "! gx tenant set pg mem-limit GPU-0101=1G 2>/dev/null"
kill -9 $hold $hold1
wait $hold $hold1 2>/dev/null
unset GPUEXT_TENANT GPUEXT_TENANT_MEM_LIMIT

# One GPU's own limit.
for spec in "GPUEXT_TENANT_MEM_LIMIT=64M,1=16M" "GPUEXT_TENANT_MEM_LIMIT=64M GPUEXT_TENANT_MEM_LIMIT_1=16M"; do
	# shellcheck disable=SC2086 # two variables in one spec
	out1=$("${run[@]}" GPUEXT_TENANT=own $spec TEST_ML_DEV=1 timeout 20 "$APP" info 2>/dev/null)
	# shellcheck disable=SC2086
	out0=$("${run[@]}" GPUEXT_TENANT=own $spec TEST_ML_DEV=0 timeout 20 "$APP" info 2>/dev/null)
	check "$spec: cuMemGetInfo on device 1 reports 16 MiB, on device 0 64 MiB" \
		"[ '$out1' = 'total=$((16 * M)) free=$((16 * M))' ] && [ '$out0' = 'total=$((64 * M)) free=$((64 * M))' ]"
	# shellcheck disable=SC2086
	"${run[@]}" GPUEXT_TENANT=own $spec TEST_ML_DEV=1 timeout 20 "$APP" try $((32 * M)) >/dev/null 2>&1
	check "$spec: 32 MiB on device 1 refused" "[ $? -eq 2 ]"
done
"${run[@]}" timeout 20 "$B/bin/gpuext-run" --tenant cli --mem-limit 0=8M,1=16M -- env TEST_ML_DEV=1 "$APP" info \
	>"$tmp/cli.out" 2>&1
check "gpuext-run --mem-limit 0=8M,1=16M" "grep -q '^total=$((16 * M)) ' '$tmp/cli.out'"
check "gpuext-run --mem-limit 1=4X refused" "! '$B/bin/gpuext-run' --tenant cli --mem-limit 1=4X -- true 2>/dev/null"

# Racing on two GPUs at once (two processes of one tenant), and on a pool.
export GPUEXT_TENANT=race2 GPUEXT_TENANT_MEM_LIMIT=64M
"${run[@]}" TEST_ML_DEV=0 timeout 120 "$APP" race $((64 * M)) >"$tmp/r0.out" 2>&1 &
r0=$!
"${run[@]}" TEST_ML_DEV=1 timeout 120 "$APP" race $((64 * M)) >"$tmp/r1.out" 2>&1 &
r1=$!
wait $r0
rc0=$?
wait $r1
rc1=$?
sed 's/^\(not \)*ok - /&device 0: /' "$tmp/r0.out"
sed 's/^\(not \)*ok - /&device 1: /' "$tmp/r1.out"
check "both racers done" "[ $rc0 -eq 0 ] && [ $rc1 -eq 0 ]"
unset GPUEXT_TENANT GPUEXT_TENANT_MEM_LIMIT
"${run[@]}" GPUEXT_TENANT=pool GPUEXT_TENANT_MEM_LIMIT=64M timeout 120 "$APP" racepool $((64 * M)) ||
	echo "not ok - test_memlimit racepool exited $?"

# A table of another version (another gpuext release still running).
mkdir -p "$tmp/old" && chmod 700 "$tmp/old"
python3 -c 'import struct,sys; open(sys.argv[1],"wb").write(struct.pack("<IIII",0x4e545847,2,4096,0)+bytes(4080))' \
	"$tmp/old/tenants.tab"
chmod 600 "$tmp/old/tenants.tab"
"${run[@]}" GPUEXT_SHM_DIR="$tmp/old" GPUEXT_TENANT=old GPUEXT_TENANT_MEM_LIMIT=1M timeout 20 "$APP" try $((32 * M)) \
	>/dev/null 2>"$tmp/old.err"
rc=$?
check "a table of version 2: refused with one line, the program runs unlimited" \
	"[ $rc -eq 0 ] && grep -q 'is of version 2, made by processes of another gpuext release' '$tmp/old.err'"
check "nothing left in the maps folder" "[ -z \"\$(ls -A '$tmp/shm' 2>/dev/null)\" ]"
