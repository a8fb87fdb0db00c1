#!/usr/bin/env bash
# Tenants across processes through the shim and the fake driver, whose
# kernels take FAKECUDA_KERNEL_US each and whose launch log
# (FAKECUDA_LAUNCH_LOG: pid, submit, start, end) shows the schedule:
#  - no tenant settings and no launch policy: nothing happens (no table);
#  - a window caps a tenant's launches in flight;
#  - gx_lcfirst: no best-effort launch is submitted while a latency-critical
#    kernel is in flight (checked on the log, with 1 ms of slack after each
#    LC submission; the same pair without the policy does it often);
#  - gpuext tenant list/set (--json) on running tenants;
#  - kill -9 of an LC tenant whose kernel is in flight: the held BE tenant
#    goes on; of a BE tenant: the LC tenant goes on; nothing is left in the
#    maps folder; gpuext tenant gc after everybody died;
#  - a misbehaving policy is disabled with one line and launches pass; a
#    policy that holds forever meets GPUEXT_TENANT_MAX_HOLD_MS.
set -u
B=${BUILD:-build}
ROOT=$PWD
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	[ -n "${GX_KEEP_TMP:-}" ] && echo "# kept $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT
ok() { echo "ok - tenant-shim: $*"; }
nok() { echo "not ok - tenant-shim: $*"; }
check() { if eval "$1"; then ok "$2"; else nok "$2${3:+: $3}"; fi; }
APP=$B/tests/tenant/tn_app
HB=$ROOT/$B/hostbpf
GX=$B/bin/gpuext
SHM=$tmp/shm

run() { # run NAME ENV... -- ARGS: tn_app under the shim, output in $tmp/NAME.{out,err}
	local name=$1
	shift
	local envs=()
	while [ "$1" != "--" ]; do envs+=("$1"); shift; done
	shift
	env LD_LIBRARY_PATH="$ROOT/$B/lib" GPUEXT_REAL_LIBCUDA="$ROOT/$B/tests/shim/fakecuda/libcuda.so.1" \
		GPUEXT_CACHE_DIR="$tmp/cache" GPUEXT_SHM_DIR="$SHM" GPUEXT_LOG=info "${envs[@]}" \
		timeout 60 "$APP" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
}
result_ok() { grep -q "^RESULT role=$2 launches=$3 " "$tmp/$1.out"; }
exitline() { grep "tenant: '.*) on device" "$tmp/$1.err"; }
field() { exitline "$1" | sed -n "s/.* \([0-9]*\) $2.*/\1/p" | head -1; }
gxt() { GPUEXT_SHM_DIR=$SHM "$GX" "$@"; }
shm_empty() { [ -z "$(ls -A "$SHM" 2>/dev/null)" ]; }

# Violations: BE launches submitted while an LC kernel was in flight, from
# 1 ms after the LC submission (the decision may have been taken just before)
# to the LC kernel's end.
violations() { # LOG LCPID BEPID
	awk -v lc="$2" -v be="$3" '
		$1 == lc { s[n] = $2; e[n] = $4; n++ }
		$1 == be { b[m++] = $2 }
		END {
			v = 0
			for (i = 0; i < m; i++)
				for (j = 0; j < n; j++)
					if (b[i] > s[j] + 1000000 && b[i] < e[j]) { v++; break }
			print v + 0, m + 0
		}' "$1"
}

# ---- 1. not a tenant: nothing ----
run inert FAKECUDA_KERNEL_US=100 -- be 40 4
check 'result_ok inert be 40 && ! grep -q "tenant:" "$tmp/inert.err" && shm_empty' \
	"no tenant settings, no launch policy: no tenant line, no table" "$(grep tenant: "$tmp/inert.err" | head -2)"

# ---- 2. a window ----
run win GPUEXT_TENANT=w1 GPUEXT_TENANT_WINDOW=2 FAKECUDA_KERNEL_US=2000 -- be 40 4
check 'result_ok win be 40 && [ "$(field win "in flight")" = 2 ] && [ "$(field win complete)" = 40 ]' \
	"--window 2: at most 2 launches in flight (4 streams), all 40 complete" "$(exitline win)"
check 'shm_empty' "the last tenant out removes the table" "$(ls "$SHM")"

# threads: 8 launching at once through one window, with a policy asking
# about every launch; all complete, the window holds within the threads'
# overshoot (each may pass the check at the same moment)
run mt GPUEXT_POLICY="$HB/gx_lcfirst.bpf.o" GPUEXT_TENANT=mt GPUEXT_TENANT_WINDOW=3 FAKECUDA_KERNEL_US=200 -- mt 200 8
check 'result_ok mt mt 1600 && [ "$(field mt complete)" = 1600 ] && [ "$(field mt "in flight")" -le 10 ]' \
	"8 threads, 1600 launches through a window of 3: all complete, at most $(field mt "in flight") in flight" "$(exitline mt)"

# ---- 3. strict LC priority: the schedule ----
pair() { # NAME POLICY-ENV...
	local name=$1
	shift
	: >"$tmp/$name.log"
	run "$name-lc" "$@" GPUEXT_TENANT=lc1 GPUEXT_TENANT_CLASS=lc FAKECUDA_KERNEL_US=5000 \
		FAKECUDA_LAUNCH_LOG="$tmp/$name.log" -- lc 25 12000 &
	local lp=$!
	run "$name-be" "$@" GPUEXT_TENANT=be1 GPUEXT_TENANT_CLASS=be FAKECUDA_KERNEL_US=1000 \
		FAKECUDA_LAUNCH_LOG="$tmp/$name.log" -- be 600 4 &
	local bp=$!
	pids+=("$lp" "$bp")
	if [ "$name" = strict ]; then
		for _ in $(seq 100); do
			gxt --json tenant list >"$tmp/list.json"
			grep -q lc1 "$tmp/list.json" && grep -q be1 "$tmp/list.json" && break
			sleep 0.02
		done
		gxt tenant set be1 window 3 >/dev/null
		gxt tenant list --json >"$tmp/list2.json"
		gxt tenant set nosuch class lc 2>"$tmp/set.err"
		echo $? >"$tmp/set.rc"
	fi
	wait "$lp" "$bp"
}
pair strict GPUEXT_POLICY="$HB/gx_lcfirst.bpf.o,be_window=2,guard_us=0"
pair open GPUEXT_TENANT_WINDOW=0
pair slo GPUEXT_POLICY="$HB/gx_lcslo.bpf.o,guard_us=0,target_us=4000"
pair bucket GPUEXT_POLICY="$HB/gx_tbucket.bpf.o,share_pct=50,be_window=0"
for n in strict open slo; do
	# the LC process is the one with 5 ms kernels
	lcpid=$(awk '($4-$3) > 4000000 {print $1; exit}' "$tmp/$n.log")
	bepid=$(awk -v l="$lcpid" '$1 != l {print $1; exit}' "$tmp/$n.log")
	read -r v m < <(violations "$tmp/$n.log" "$lcpid" "$bepid")
	eval "v_$n=$v m_$n=$m"
done
check 'result_ok strict-lc lc 25 && result_ok strict-be be 600' "gx_lcfirst: both tenants finish" \
	"$(tail -n 2 "$tmp/strict-lc.err" "$tmp/strict-be.err")"
check '[ "$m_strict" -ge 500 ] && [ "$v_strict" -le $((m_strict / 100)) ]' \
	"gx_lcfirst: no BE launch submitted while an LC kernel runs ($v_strict of $m_strict)"
check '[ "$v_open" -gt 10 ]' "without the policy BE launches go during LC kernels ($v_open of $m_open): the check can fail"
check '[ "$(field strict-be held)" -gt 0 ] && [ "$(field strict-lc held)" = 0 ]' \
	"gx_lcfirst: BE launches held, LC launches never" "$(exitline strict-be) / $(exitline strict-lc)"
check 'result_ok slo-lc lc 25 && result_ok slo-be be 600 && [ "$(field slo-be held)" -gt 0 ] && [ "$v_slo" -le $((m_slo / 100)) ]' \
	"gx_lcslo: both finish, BE held, none submitted during an LC kernel ($v_slo of $m_slo)" "$(exitline slo-be)"
check 'result_ok bucket-be be 600 && [ "$(field bucket-be held)" -gt 0 ] && [ "$(field bucket-lc held)" = 0 ]' \
	"gx_tbucket (50 %): BE held for tokens, LC never, both finish" "$(exitline bucket-be) / $(exitline bucket-lc)"
check 'grep -q "\"name\":\"lc1\",\"class\":\"lc\"" "$tmp/list.json" && grep -q "\"name\":\"be1\",\"class\":\"be\",\"window\":0,\"procs\":1" "$tmp/list.json"' \
	"gpuext --json tenant list: both running tenants with class and processes" "$(cat "$tmp/list.json")"
check 'grep -q "\"name\":\"be1\",\"class\":\"be\",\"window\":3" "$tmp/list2.json"' \
	"gpuext tenant set be1 window 3: changed while it runs" "$(cat "$tmp/list2.json")"
check '[ "$(cat "$tmp/set.rc")" = 1 ] && grep -q "no tenant .nosuch." "$tmp/set.err"' "gpuext tenant set on an unknown tenant fails with its name" \
	"$(cat "$tmp/set.err")"
check 'shm_empty' "after both: nothing in the maps folder" "$(ls "$SHM")"

# ---- 4. kill -9 of an LC tenant with a kernel in flight ----
(run hang-lc GPUEXT_POLICY="$HB/gx_lcfirst.bpf.o" GPUEXT_TENANT=lc2 GPUEXT_TENANT_CLASS=lc \
	FAKECUDA_KERNEL_US=60000000 -- hang) 2>/dev/null &
hp=$!
pids+=("$hp")
for _ in $(seq 50); do grep -q READY "$tmp/hang-lc.out" 2>/dev/null && break; sleep 0.1; done
lcpid=$(gxt --json tenant list | grep -o '"name":"lc2"[^]]*"pids":\[[0-9]*' | grep -o '[0-9]*$')
ls "$SHM" >"$tmp/before-kill.txt"
run killbe GPUEXT_POLICY="$HB/gx_lcfirst.bpf.o,max_hold_ms=30000" GPUEXT_TENANT_MAX_HOLD_MS=30000 \
	GPUEXT_TENANT=be2 GPUEXT_TENANT_CLASS=be FAKECUDA_KERNEL_US=100 -- be 40 2 &
bp=$!
pids+=("$bp")
sleep 0.5
gxt tenant list >"$tmp/held.txt"
[ -n "$lcpid" ] && kill -9 "$lcpid"
t0=$(date +%s%N)
wait "$bp"
t1=$(date +%s%N)
wait "$hp" 2>/dev/null
check '[ "$(awk '"'"'$1 == "be2" {print $8}'"'"' "$tmp/held.txt")" = 0 ]' \
	"while the LC kernel runs, the BE tenant's first launch is held" "$(cat "$tmp/held.txt")"
check 'result_ok killbe be 40 && [ $(((t1 - t0) / 1000000)) -lt 5000 ]' \
	"kill -9 of the LC tenant: the held BE tenant finishes ($(((t1 - t0) / 1000000)) ms after the kill)" \
	"$(tail -n 3 "$tmp/killbe.err")"
check 'grep -q "process $lcpid of .lc2. is gone with 1 launches in flight; reaped" "$tmp/killbe.err"' \
	"the survivor reaps it with one line" "$(grep reaped "$tmp/killbe.err")"
check 'grep -q "^$lcpid-" "$tmp/before-kill.txt" && shm_empty' \
	"its policy maps ($(grep -c "^$lcpid-" "$tmp/before-kill.txt") files) and the table are gone" "left: $(ls "$SHM")"

# ---- 5. kill -9 of a BE tenant mid-run ----
(run hang-be GPUEXT_POLICY="$HB/gx_lcfirst.bpf.o" GPUEXT_TENANT=be3 GPUEXT_TENANT_CLASS=be \
	FAKECUDA_KERNEL_US=60000000 -- hang) 2>/dev/null &
hp=$!
pids+=("$hp")
for _ in $(seq 50); do grep -q READY "$tmp/hang-be.out" 2>/dev/null && break; sleep 0.1; done
bepid=$(gxt --json tenant list | grep -o '"name":"be3"[^]]*"pids":\[[0-9]*' | grep -o '[0-9]*$')
run killlc GPUEXT_POLICY="$HB/gx_lcfirst.bpf.o" GPUEXT_TENANT=lc3 GPUEXT_TENANT_CLASS=lc FAKECUDA_KERNEL_US=500 \
	-- lc 40 5000 &
lp=$!
pids+=("$lp")
sleep 0.1
[ -n "$bepid" ] && kill -9 "$bepid"
wait "$lp"
wait "$hp" 2>/dev/null
check 'result_ok killlc lc 40 && [ "$(field killlc held)" = 0 ]' "kill -9 of a BE tenant: the LC tenant goes on, never held" \
	"$(exitline killlc)"
check 'grep -q "process $bepid of .be3. is gone with 1 launches in flight; reaped" "$tmp/killlc.err" && shm_empty' \
	"reaped by the LC tenant; nothing left in the maps folder" "$(grep reaped "$tmp/killlc.err"; ls "$SHM")"

# ---- 6. everybody dies: gpuext tenant gc ----
(run hang-all GPUEXT_POLICY="$HB/gx_lcfirst.bpf.o" GPUEXT_TENANT=lone FAKECUDA_KERNEL_US=60000000 -- hang) 2>/dev/null &
hp=$!
pids+=("$hp")
for _ in $(seq 50); do grep -q READY "$tmp/hang-all.out" 2>/dev/null && break; sleep 0.1; done
lpid=$(gxt --json tenant list | grep -o '"pids":\[[0-9]*' | grep -o '[0-9]*$')
[ -n "$lpid" ] && kill -9 "$lpid"
wait "$hp" 2>/dev/null
left=$(ls "$SHM" | tr '\n' ' ')
check '[ -n "$left" ] && [ "$(gxt tenant gc)" = "1 dead processes reaped" ] && shm_empty' \
	"kill -9 of the only tenant leaves its files ($left); gpuext tenant gc removes them" "left: $(ls "$SHM")"

# ---- 7. policies that misbehave ----
run bad GPUEXT_POLICY="$HB/tn_bad.bpf.o" GPUEXT_TENANT=bad FAKECUDA_KERNEL_US=50 -- be 60 2
check 'result_ok bad be 60 && [ "$(grep -c "disabled after 16 errors" "$tmp/bad.err")" = 1 ] && [ "$(field bad complete)" = 60 ]' \
	"a policy that errs on every launch: disabled with one line, all 60 launches pass" "$(grep -E "disabled|tenant:" "$tmp/bad.err")"
run forever GPUEXT_POLICY="$HB/tn_forever.bpf.o" GPUEXT_TENANT=forever GPUEXT_TENANT_MAX_HOLD_MS=20 FAKECUDA_KERNEL_US=50 -- be 10 1
check 'result_ok forever be 10 && [ "$(field forever held)" = 10 ] && [ "$(grep -c "passes (GPUEXT_TENANT_MAX_HOLD_MS)" "$tmp/forever.err")" = 1 ]' \
	"a policy that holds forever: each launch passes at GPUEXT_TENANT_MAX_HOLD_MS (one line)" "$(grep tenant: "$tmp/forever.err")"

# ---- 8. one tenant, two processes; gpuext-run's flags ----
run twoa GPUEXT_TENANT=shared GPUEXT_TENANT_CLASS=be FAKECUDA_KERNEL_US=3000 -- be 60 1 &
a=$!
run twob GPUEXT_TENANT=shared FAKECUDA_KERNEL_US=3000 -- be 60 1 &
b=$!
pids+=("$a" "$b")
sleep 0.1
gxt --json tenant list >"$tmp/shared.json"
wait "$a" "$b"
check 'grep -q "\"name\":\"shared\",\"class\":\"be\",\"window\":0,\"procs\":2" "$tmp/shared.json"' \
	"two processes of one tenant: one entry, 2 processes" "$(cat "$tmp/shared.json")"
env_out=$(GPUEXT_LIB_DIR="$ROOT/$B/lib" "$B/bin/gpuext-run" --tenant infer --class lc --window 3 \
	--policy "$HB/gx_lcslo.bpf.o,target_us=150" --print-env true)
check 'echo "$env_out" | grep -qx "GPUEXT_TENANT=infer" && echo "$env_out" | grep -qx "GPUEXT_TENANT_CLASS=lc" &&
	echo "$env_out" | grep -qx "GPUEXT_TENANT_WINDOW=3" && echo "$env_out" | grep -qx "GPUEXT_POLICY=$HB/gx_lcslo.bpf.o,target_us=150"' \
	"gpuext-run --tenant/--class/--window and --policy FILE,KNOB=V" "$env_out"
GPUEXT_LIB_DIR="$ROOT/$B/lib" "$B/bin/gpuext-run" --class urgent true 2>"$tmp/badclass.err"
rc=$?
check '[ $rc = 2 ] && grep -q "unknown --class" "$tmp/badclass.err"' "gpuext-run --class urgent is refused" "$(cat "$tmp/badclass.err")"
