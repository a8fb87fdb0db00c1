#!/usr/bin/env bash
# GPU: several tenants on one GPU, LC protected from BE by policy, no kernel
# module (issue 19, docs/tenants.md). Run by tests/gpu/run.sh or alone from
# the repository root after `make gpu-prep`; about 3 minutes on an H200.
#  1. Microbenchmark (bench/tenants.cu), the gpu_ext paper's setup: 2 LC
#     processes, one small kernel each every TENANTS_PERIOD_US (10 ms),
#     latency = launch call to completion; 4 BE processes, compute kernels of
#     TENANTS_BE_US (100 µs, calibrated) back to back on 4 streams each (at
#     most 8 in flight per stream: the program's own bound).
#     Configurations, TENANTS_SECS (10 s) each: LC alone, native (no gpuext),
#     an emulation of XSched's Level 1 with its defaults (BE suspended while
#     LC has work, 16 commands in flight per queue, which the program's own
#     bound of 8 never reaches: gx_lcfirst with no guard and no window — its
#     mechanism on our runtime, not XSched itself), gx_lcfirst, gx_tbucket,
#     gx_lcslo, and gx_lcslo with other knobs: TENANTS_LCSLO_VARIANTS="NAME:KNOBS
#     ..." (e.g. "t0:turn_ms=0 w2:max_window=2", added to the row's knobs).
#     Table rows "| ..."; goals: LC p99 >= 95 % below
#     native with BE >= 95 % of native; gx_lcslo better than the XSched
#     emulation.
#  2. Reliability: kill -9 of a BE and an LC tenant mid-run (the others
#     finish, the dead are reaped, nothing left in /dev/shm/gpuext-$UID); a
#     policy that errs on every launch is disabled with one line and launches
#     pass.
#  3. PyTorch pair (bench/tenants_torch.py): LC inference (MLP, batch 1,
#     every 10 ms) alone, next to a BE training loop natively, and under
#     gx_lcslo; goal: LC p99 within 1.5x of LC alone.
# Logs under $OUT/tenants/ (packed into $OUT/tenants-logs.tgz at the end).
# TENANTS_SKIP=micro,reliability,torch skips sections.
set -u
ROOT=${GX_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
B=${GX_BUILD:-$ROOT/build}
OUT=${OUT:-$B/gpu-out}
L=$OUT/tenants
SECS=${TENANTS_SECS:-10}
TSECS=${TENANTS_TORCH_SECS:-10}
BE_US=${TENANTS_BE_US:-100}
PERIOD=${TENANTS_PERIOD_US:-10000}
NLC=${TENANTS_LC:-2}
NBE=${TENANTS_BE:-4}
SKIP=${TENANTS_SKIP:-}
PY=${PYTHON:-python3}
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
# A maps folder of its own: what other GPU scripts' processes keep there
# (device policies' maps outlive their process for the tools) is not ours.
SHMDIR=${GPUEXT_SHM_DIR:-/dev/shm/gpuext-tenants-$$}
export GPUEXT_SHM_DIR=$SHMDIR
RUN=$B/bin/gpuext-run
GX=$B/bin/gpuext
HB=$B/hostbpf
mkdir -p "$L"
W=$(mktemp -d)
kids=()
cleanup() {
	for p in "${kids[@]}"; do kill -9 "$p" 2>/dev/null; done
	tar czf "$OUT/tenants-logs.tgz" -C "$OUT" tenants 2>/dev/null
	rm -rf "$W"
	[ "$SHMDIR" = "/dev/shm/gpuext-tenants-$$" ] && rm -rf "$SHMDIR"
}
trap cleanup EXIT
: >"$L/summary.txt"
ok() { echo "ok - tenants: $*" | tee -a "$L/summary.txt"; }
nok() { echo "not ok - tenants: $*" | tee -a "$L/summary.txt"; }
bench() { echo "bench: tenants: $*" | tee -a "$L/summary.txt"; }
row() { echo "| $*" | tee -a "$L/table.md"; }
: >"$L/table.md"

# The program: built by `make gpu-prep` (SASS only, so the shim passes its
# module through and both sides run the same code), else here.
BIN=${TENANTS_BIN:-$B/tests/gpu/tenants}
if [ ! -x "$BIN" ]; then
	BIN=$W/tenants
	timeout 120 "$NVCC" -O2 -I"$ROOT" -gencode arch=compute_90,code=sm_90 -o "$BIN" "$ROOT/bench/tenants.cu" \
		>"$L/build.log" 2>&1 || nok "bench/tenants.cu: nvcc failed (see $L/build.log)"
fi
for f in "$RUN" "$GX" "$HB/gx_lcfirst.bpf.o" "$HB/gx_tbucket.bpf.o" "$HB/gx_lcslo.bpf.o"; do
	[ -e "$f" ] || nok "$f missing (run make gpu-prep here)"
done
# Native policy code needs libLLVM-19, absent there: the packed libraries of
# `make gpu-prep` when present, else the interpreter (one info line each).
if ls "$B/share/jitlibs"/*.xz >/dev/null 2>&1; then
	mkdir -p "$W/jitlibs"
	for f in "$B/share/jitlibs"/*.xz; do xz -dc "$f" >"$W/jitlibs/$(basename "${f%.xz}")"; done
	export LD_LIBRARY_PATH="$W/jitlibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
# What decides the native baseline: time slices between processes (no MPS).
{
	nvidia-smi -q 2>&1 | grep -iE -A1 'compute mode|timeslice|mig mode' | head -20
	echo "mps: $(pgrep -l nvidia-cuda-mps 2>/dev/null | head -1)"
} >"$L/gpu-info.txt" 2>&1
if [ -n "$(ls -A "$SHMDIR" 2>/dev/null)" ]; then
	echo "# $SHMDIR not empty before the run: $(ls "$SHMDIR" | tr '\n' ' ')"
	"$GX" tenant gc >/dev/null 2>&1
fi

shm_clean() { # NAME: nothing of ours left in the maps folder
	local left
	left=$(ls -A "$SHMDIR" 2>/dev/null | tr '\n' ' ')
	if [ -z "$left" ]; then ok "$1: nothing left in $SHMDIR"; else nok "$1: left in $SHMDIR: $left"; fi
}

# group NAME SECS CMD... (each CMD one string): start them, release them
# together once all are ready, wait. Sets G_PIDS; rc files per process.
group() {
	local name=$1 secs=$2
	shift 2
	local bar=$W/bar.$name i=0
	rm -rf "$bar"
	mkdir -p "$bar"
	G_PIDS=()
	rm -f "$L/$name".*
	for c in "$@"; do
		c=${c//@BAR@/$bar}
		( # its stderr: only the shell's note when the kill test kills it
			timeout -k 5 $((secs + 45)) bash -c "$c" >"$L/$name.$i.out" 2>"$L/$name.$i.err"
			echo $? >"$L/$name.$i.rc"
		) 2>/dev/null &
		G_PIDS+=($!)
		kids+=($!)
		i=$((i + 1))
	done
	local n=$# t=0
	# all ready, or some gave up before they were (their rc file is there)
	while [ $(($(ls "$bar" | grep -c '^ready\.') + $(ls "$L" | grep -c "^$name\.[0-9]*\.rc\$"))) -lt "$n" ] &&
		[ $t -lt 600 ]; do
		sleep 0.1
		t=$((t + 1))
	done
	if [ $t -ge 600 ]; then
		nok "$name: only $(ls "$bar" | grep -c '^ready\.') of $n processes ready after 60 s"
	fi
	G_START=$(($(date +%s%N) + 500000000))
	echo "$G_START" >"$bar/go.tmp" && mv "$bar/go.tmp" "$bar/go"
	G_BAR=$bar
	G_N=$n
}
group_wait() { # NAME: wait, check every process printed RESULT and exited 0
	local name=$1 bad=0
	wait "${G_PIDS[@]}" 2>/dev/null
	for ((i = 0; i < G_N; i++)); do
		if [ "$(cat "$L/$name.$i.rc" 2>/dev/null)" != 0 ] || ! grep -q '^RESULT ' "$L/$name.$i.out"; then
			bad=$((bad + 1))
			echo "# $name.$i: rc $(cat "$L/$name.$i.rc" 2>/dev/null), $(tail -n 3 "$L/$name.$i.err" | tr '\n' ' ')"
		fi
	done
	if [ $bad = 0 ]; then ok "$name: $G_N processes finished"; else nok "$name: $bad of $G_N processes failed"; fi
}
# LC quantiles over every LC process's latencies: "p50 p99 p999 n"
lc_stats() {
	cat "$L/$1".*.lat 2>/dev/null | sort -n | awk '{a[NR] = $1} END {
		if (!NR) { print "0 0 0 0"; exit }
		i50 = int(0.5 * NR) + 1; i99 = int(0.99 * NR) + 1; i999 = int(0.999 * NR) + 1
		if (i99 > NR) i99 = NR; if (i999 > NR) i999 = NR
		printf "%.1f %.1f %.1f %d\n", a[i50], a[i99], a[i999], NR }'
}
be_sum() { # NAME FIELD: the sum of FIELD over BE results
	cat "$L/$1".*.out 2>/dev/null | sed -n "s/^RESULT role=be .*$2=\([0-9.]*\).*/\1/p" | awk '{s += $1} END {printf "%.1f\n", s}'
}
pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f", 100 * a / b; else print "nan" }'; }

# ---- 1. microbenchmark ----
declare -A P50 P99 P999 NS KPS
micro() { # NAME SECS NLC NBE [POLICY]  (POLICY empty: native)
	local name=$1 secs=$2 nlc=$3 nbe=$4 pol=${5:-} cmds=() i
	for ((i = 0; i < nlc; i++)); do
		local c="$BIN --role lc --period-us $PERIOD --secs $secs --barrier @BAR@ --lat-file $L/$name.$i.lat"
		[ -n "$pol" ] && c="$RUN --log info --tenant lc$i --class lc --policy $pol -- $c"
		cmds+=("$c")
	done
	for ((i = 0; i < nbe; i++)); do
		local c="$BIN --role be --iters $ITERS --streams 4 --secs $secs --barrier @BAR@"
		[ -n "$pol" ] && c="$RUN --log info --tenant be$i --class be --policy $pol -- $c"
		cmds+=("$c")
	done
	group "$name" "$secs" "${cmds[@]}"
	if [ -n "$pol" ]; then # the tenants as gpuext sees them, mid-run
		sleep $(awk -v s="$secs" 'BEGIN { print s / 2 + 0.5 }')
		"$GX" --json tenant list >"$L/$name.tenants.json" 2>&1
	fi
	group_wait "$name"
	read -r P50[$name] P99[$name] P999[$name] NS[$name] < <(lc_stats "$name")
	KPS[$name]=$(be_sum "$name" kps)
	[ -n "$pol" ] && shm_clean "$name"
}
report() { # NAME LABEL
	local n=$1
	row "$2 | ${P50[$n]} | ${P99[$n]} | ${P999[$n]} | ${NS[$n]} | ${KPS[$n]} | $(pct "${KPS[$n]}" "${KPS[native]:-0}") % | $(pct "${P99[$n]}" "${P99[native]:-0}") % |"
}

if [[ ",$SKIP," != *,micro,* ]]; then
	timeout 30 "$BIN" --role calib --be-us "$BE_US" >"$L/calib.out" 2>&1
	ITERS=$(sed -n 's/^CALIB iters=\([0-9]*\) .*/\1/p' "$L/calib.out")
	if [ -n "$ITERS" ]; then ok "calibration: $(cat "$L/calib.out")"; else nok "calibration failed: $(tail -n 3 "$L/calib.out")"; ITERS=20000; fi
	half=$((SECS / 2 > 6 ? SECS / 2 : 6))
	micro lc-alone "$half" "$NLC" 0
	micro lc-alone-shim "$half" "$NLC" 0 "$HB/gx_lcslo.bpf.o"
	micro native "$SECS" "$NLC" "$NBE"
	# what the adaptive policy aims at: the goal (5 % of native p99) where
	# reachable, else 1.3x LC alone
	TARGET=$(awk -v a="${P99[lc-alone]}" -v n="${P99[native]}" 'BEGIN { t = 0.04 * n; m = 1.3 * a;
		if (t < m) t = m; if (t < 15) t = 15; printf "%d", t }')
	micro xsched-l1 "$SECS" "$NLC" "$NBE" "$HB/gx_lcfirst.bpf.o,guard_us=0,be_window=0,max_hold_ms=1000"
	micro lcfirst "$SECS" "$NLC" "$NBE" "$HB/gx_lcfirst.bpf.o,guard_us=20,be_window=2,max_hold_ms=100"
	micro tbucket "$SECS" "$NLC" "$NBE" "$HB/gx_tbucket.bpf.o,share_pct=80,burst_us=1000,be_window=4"
	LCSLO="$HB/gx_lcslo.bpf.o,target_us=$TARGET,guard_us=20,max_window=4,margin_us=50,adjust_ms=500,max_hold_ms=100"
	micro lcslo "$SECS" "$NLC" "$NBE" "$LCSLO"
	VARIANTS=()
	for v in ${TENANTS_LCSLO_VARIANTS:-}; do
		VARIANTS+=("lcslo-${v%%:*}")
		micro "lcslo-${v%%:*}" "$SECS" "$NLC" "$NBE" "$LCSLO,${v#*:}"
	done
	echo "# microbenchmark: $NLC LC (one small kernel every $PERIOD us) + $NBE BE (kernels of ~$BE_US us, 4 streams), $SECS s each" |
		tee -a "$L/table.md"
	row "config | LC p50 us | LC p99 us | LC p99.9 us | LC samples | BE kernels/s | BE vs native | LC p99 vs native |"
	row "---|---|---|---|---|---|---|---|"
	report lc-alone "LC alone (native)"
	report lc-alone-shim "LC alone under gpuext (gx_lcslo, no BE: the runtime's cost)"
	report native "native (no gpuext)"
	report xsched-l1 "XSched Level-1 emulation (BE suspended while LC has work)"
	report lcfirst "gx_lcfirst (strict LC priority, window 2, guard 20 us)"
	report tbucket "gx_tbucket (BE 80 % of GPU time)"
	report lcslo "gx_lcslo (p99 target $TARGET us)"
	for v in ${TENANTS_LCSLO_VARIANTS:-}; do report "lcslo-${v%%:*}" "gx_lcslo, ${v#*:}"; done
	for n in xsched-l1 lcfirst tbucket lcslo "${VARIANTS[@]}"; do
		bench "$n: LC p99 ${P99[$n]} us vs native ${P99[native]} us ($(pct "${P99[$n]}" "${P99[native]}") %), BE $(pct "${KPS[$n]}" "${KPS[native]}") % of native"
	done
	goal=$(awk -v p="${P99[lcslo]}" -v n="${P99[native]}" -v k="${KPS[lcslo]}" -v kn="${KPS[native]}" \
		'BEGIN { print (p > 0 && n > 0 && p <= 0.05 * n && k >= 0.95 * kn) ? "yes" : "no" }')
	msg="goal: gx_lcslo LC p99 ${P99[lcslo]} us, $(pct "${P99[lcslo]}" "${P99[native]}") % of native ${P99[native]} us (<= 5 %), BE $(pct "${KPS[lcslo]}" "${KPS[native]}") % of native (>= 95 %)"
	if [ "$goal" = yes ]; then ok "$msg"; else nok "$msg"; fi
	best=""
	for n in xsched-l1 lcfirst tbucket lcslo "${VARIANTS[@]}"; do
		awk -v p="${P99[$n]}" -v nn="${P99[native]}" -v k="${KPS[$n]}" -v kn="${KPS[native]}" \
			'BEGIN { exit !(p > 0 && nn > 0 && p <= 0.05 * nn && k >= 0.95 * kn) }' && best="$best $n"
	done
	bench "configurations meeting both goals:${best:- none}"
	beat=$(awk -v a="${P99[lcslo]}" -v b="${P99[xsched-l1]}" -v k="${KPS[lcslo]}" -v kb="${KPS[xsched-l1]}" \
		'BEGIN { print (a > 0 && a < b && k >= 0.99 * kb) ? "yes" : "no" }')
	msg="goal: gx_lcslo beats the XSched Level-1 emulation: LC p99 ${P99[lcslo]} vs ${P99[xsched-l1]} us, BE ${KPS[lcslo]} vs ${KPS[xsched-l1]} kernels/s"
	if [ "$beat" = yes ]; then ok "$msg"; else nok "$msg"; fi
fi

# ---- 2. reliability ----
if [[ ",$SKIP," != *,reliability,* ]]; then
	[ -n "${ITERS:-}" ] || ITERS=20000
	RS=8
	pol="$HB/gx_lcslo.bpf.o,target_us=100,guard_us=20"
	cmds=()
	for i in 0 1; do
		cmds+=("$RUN --tenant klc$i --class lc --policy $pol -- $BIN --role lc --period-us $PERIOD --secs $RS --barrier @BAR@ --lat-file $L/kill.$i.lat")
	done
	for i in 0 1; do
		cmds+=("$RUN --tenant kbe$i --class be --policy $pol -- $BIN --role be --iters $ITERS --secs $RS --barrier @BAR@")
	done
	group kill "$RS" "${cmds[@]}"
	sleep 3.5
	victims=$(ls "$G_BAR" | sed -n 's/^ready\.\(lc\|be\)\.\([0-9]*\)$/\1 \2/p' | sort -u -k1,1 | awk '{print $2}' | tr '\n' ' ')
	"$GX" --json tenant list >"$L/kill.before.json" 2>&1
	for v in $victims; do kill -9 "$v" 2>/dev/null; done
	sleep 1
	"$GX" --json tenant list >"$L/kill.after.json" 2>&1
	wait "${G_PIDS[@]}" 2>/dev/null
	survivors=0 dead=0
	for i in 0 1 2 3; do
		pid=$(grep -o 'pid=[0-9]*' "$L/kill.$i.out" 2>/dev/null | cut -d= -f2)
		if grep -q '^RESULT ' "$L/kill.$i.out" && [ "$(cat "$L/kill.$i.rc")" = 0 ]; then
			survivors=$((survivors + 1))
		else
			dead=$((dead + 1))
		fi
	done
	ntn=$(grep -o '"name":"k[lb][ce][01]"' "$L/kill.after.json" | wc -l)
	if [ "$survivors" = 2 ] && [ "$dead" = 2 ] && [ -n "$victims" ]; then
		ok "kill -9 of one LC and one BE tenant mid-run (pids $victims): the other two finish"
	else
		nok "kill -9 (pids '$victims'): $survivors finished, $dead did not (want 2 and 2)"
	fi
	if [ "$ntn" = 2 ]; then ok "1 s after the kill, gpuext tenant list shows the 2 live tenants"; else
		nok "after the kill gpuext tenant list shows $ntn tenants: $(cat "$L/kill.after.json")"; fi
	n=$(cat "$L"/kill.*.err | grep -c 'reaped' || true)
	bench "kill: 'reaped' lines in the survivors' logs: $n; LC after the kill: $(lc_stats kill)"
	shm_clean "kill -9"
	# a policy that errs on every launch
	group badpolicy 3 "$RUN --tenant bad --class be --policy $HB/tn_bad.bpf.o -- $BIN --role be --iters $ITERS --secs 3 --barrier @BAR@"
	group_wait badpolicy
	nd=$(grep -c 'disabled after 16 errors' "$L/badpolicy.0.err")
	k=$(be_sum badpolicy kernels)
	if [ "$nd" = 1 ] && awk -v k="$k" 'BEGIN { exit !(k > 0) }'; then
		ok "a policy erring on every launch: disabled with one line, launches pass ($k kernels)"
	else
		nok "misbehaving policy: $nd 'disabled' lines, $k kernels: $(head -n 3 "$L/badpolicy.0.err" | tr '\n' ' ')"
	fi
	shm_clean badpolicy
fi

# ---- 3. PyTorch pair ----
torch_group() { # NAME POLICY(empty: native) ROLES...
	local name=$1 pol=$2 cmds=() i=0
	shift 2
	for r in "$@"; do
		local c="$PY $ROOT/bench/tenants_torch.py --role $r --secs $TSECS --barrier @BAR@ --lat-file $L/$name.$i.lat"
		[ "$r" = be ] && c="$PY $ROOT/bench/tenants_torch.py --role be --secs $TSECS --barrier @BAR@"
		[ -n "$pol" ] && c="$RUN --log info --tenant t$r --class $r --policy $pol -- $c"
		cmds+=("$c")
		i=$((i + 1))
	done
	group "$name" "$TSECS" "${cmds[@]}"
	group_wait "$name"
	read -r P50[$name] P99[$name] P999[$name] NS[$name] < <(lc_stats "$name")
	KPS[$name]=$(be_sum "$name" ips)
	[ -n "$pol" ] && shm_clean "$name"
}
if [[ ",$SKIP," != *,torch,* ]] && $PY -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
	torch_group torch-alone "" lc
	# under gpuext without BE: the runtime's cost, and the p99 of one LC
	# launch alone (the runtime measures launches, not requests) for the target
	torch_group torch-alone-shim "$HB/gx_lcslo.bpf.o" lc
	lp99=$(sed -n "s/.*tenant: 'tlc' (lc) on device [0-9]*:.* p99 \([0-9.]*\) us.*/\1/p" "$L"/torch-alone-shim.*.err | head -1)
	TT=$(awk -v a="${lp99:-0}" 'BEGIN { t = 1.5 * a; if (t < 30) t = 30; printf "%d", t }')
	bench "torch: one LC launch alone under gpuext: p99 ${lp99:-?} us; gx_lcslo target $TT us"
	torch_group torch-native "" lc be
	TLCSLO="$HB/gx_lcslo.bpf.o,target_us=$TT,guard_us=100,max_window=4,margin_us=200,adjust_ms=500,max_hold_ms=100"
	torch_group torch-lcslo "$TLCSLO" lc be
	TVAR=()
	for v in ${TENANTS_TORCH_VARIANTS:-}; do # NAME:KNOBS, as TENANTS_LCSLO_VARIANTS
		TVAR+=("torch-lcslo-${v%%:*}")
		torch_group "torch-lcslo-${v%%:*}" "$TLCSLO,${v#*:}" lc be
	done
	echo "# PyTorch pair: LC MLP inference, batch 1, every 10 ms; BE MLP training, batch 512; $TSECS s each" | tee -a "$L/table.md"
	row "config | LC p50 us | LC p99 us | LC p99.9 us | requests | BE iterations/s | LC p99 vs alone |"
	row "---|---|---|---|---|---|---|"
	for n in torch-alone torch-alone-shim torch-native torch-lcslo "${TVAR[@]}"; do
		row "$n | ${P50[$n]} | ${P99[$n]} | ${P999[$n]} | ${NS[$n]} | ${KPS[$n]} | $(awk -v a="${P99[$n]}" -v b="${P99[torch-alone]}" 'BEGIN { if (b > 0) printf "%.2fx", a / b }') |"
	done
	r=$(awk -v a="${P99[torch-lcslo]}" -v b="${P99[torch-alone]}" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "nan" }')
	bench "torch: native pair LC p99 ${P99[torch-native]} us, under gx_lcslo ${P99[torch-lcslo]} us, alone ${P99[torch-alone]} us; BE ${KPS[torch-lcslo]} vs ${KPS[torch-native]} it/s"
	msg="goal: PyTorch pair under gx_lcslo: LC p99 ${r}x LC alone (<= 1.5x)"
	if awk -v r="$r" 'BEGIN { exit !(r > 0 && r <= 1.5) }'; then ok "$msg"; else nok "$msg"; fi
elif [[ ",$SKIP," != *,torch,* ]]; then
	nok "PyTorch with CUDA not available to $PY"
fi
cat "$L/table.md" >>"$L/summary.txt"
