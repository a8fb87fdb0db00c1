#!/usr/bin/env bash
# GPU: limits, part 2 (issue 39, docs/limits.md): pools, LC beside shared BE
# tenants, CUDA graphs held to a share, the costs. Run by tests/gpu/run.sh or
# alone from the repository root after `make gpu-prep`; about 3 minutes.
#  1. PyTorch's caching allocator on cudaMallocAsync
#     (PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync) under --mem-limit 4G
#     (tests/gpu/limits_pool.py): memory freed into the pool stays counted,
#     torch.cuda.empty_cache() (a trim) gives it back, OOM at the limit.
#  2. An LC tenant (bench/tenants.cu, one small kernel every 10 ms, policy
#     gx_lcfirst) beside two BE tenants with --gpu-share 30 and 70: LC p99
#     alone, natively beside the two BE, and under gpuext beside them with
#     and without shares; goal: with shares the LC p99 stays within 1.2x
#     (+20 us) of the same without shares (shares do not cost the LC its
#     protection) and far below native; the BE tenants' GPU time split 30/70.
#  3. A BE tenant replaying CUDA graphs (tenants --graph 4) with --gpu-share
#     30 beside a kernel BE tenant with 70: its kernels/s vs alone, goal
#     30 ± 5 % (before graph launches were gated it took half).
#  4. Cost (bench/memlimit_cost): cuMemAllocAsync+cuMemFreeAsync on a pool and
#     cuGraphLaunch, ns: natively, shim without a tenant, tenant with a limit
#     and a share (a table, not checked: benchmarks are not timed tests).
# Logs under $OUT/limits2/. LIMITS2_SKIP=pool,lc,graph,cost skips sections;
# LIMITS2_SECS (8) per measured run.
set -u
ROOT=${GX_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
B=${GX_BUILD:-$ROOT/build}
OUT=${OUT:-$B/gpu-out}
L=$OUT/limits2
SECS=${LIMITS2_SECS:-8}
SKIP=${LIMITS2_SKIP:-}
PY=${PYTHON:-python3}
SHMDIR=/dev/shm/gpuext-limits2-$$
export GPUEXT_SHM_DIR=$SHMDIR PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export GPUEXT_CACHE_DIR=${GPUEXT_CACHE_DIR:-$B/cache}
RUN=$B/bin/gpuext-run
GX=$B/bin/gpuext
TN=${LIMITS2_TENANTS_BIN:-$B/tests/gpu/tenants}
HB=$B/hostbpf
mkdir -p "$L"
W=$(mktemp -d)
kids=()
cleanup() {
	for p in "${kids[@]}"; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$W" "$SHMDIR"
}
trap cleanup EXIT
check() { if eval "$1"; then echo "ok - limits2: $2"; else echo "not ok - limits2: $2${3:+: $3}"; fi; }
bench() { echo "bench: limits2: $*" | tee -a "$L/summary.txt"; }
row() { echo "| $*" | tee -a "$L/summary.txt"; }
skip() { [[ ",$SKIP," == *",$1,"* ]]; }
G=$((1 << 30))
: >"$L/summary.txt"
# Native policy code needs libLLVM-19: the packed libraries of `make gpu-prep`, else the interpreter.
if ls "$B/share/jitlibs"/*.xz >/dev/null 2>&1; then
	mkdir -p "$W/jitlibs"
	for f in "$B/share/jitlibs"/*.xz; do xz -dc "$f" >"$W/jitlibs/$(basename "${f%.xz}")"; done
	export LD_LIBRARY_PATH="$W/jitlibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

# ---- 1. PyTorch's cudaMallocAsync pool under a 4 GiB limit ----
if ! skip pool; then
	if $PY -c "import torch" 2>/dev/null; then
		env GX_LIMIT=$((4 * G)) GX_TENANT=pool GX_BIN="$GX" PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync \
			timeout 120 "$RUN" --tenant pool --mem-limit 4G -- "$PY" "$ROOT/tests/gpu/limits_pool.py" \
			>"$L/pool.out" 2>"$L/pool.err"
		rc=$?
		grep -E '^(ok|not ok|#)' "$L/pool.out" | sed 's/^ok - /ok - limits2: /; s/^not ok - /not ok - limits2: /'
		check "[ $rc -eq 0 ]" "torch (cudaMallocAsync) under --mem-limit 4G exits 0" \
			"exit $rc: $(tail -3 "$L/pool.err" | tr '\n' ' ')"
	else
		echo "# limits2: torch not installed: pool section skipped" | tee -a "$L/summary.txt"
	fi
fi

# Start processes that wait at a barrier folder, release them together.
start_go() { # DIR N
	local d=$1 n=$2
	local r
	for _ in $(seq 600); do
		r=("$d"/ready*)
		[ -e "${r[0]}" ] && [ "${#r[@]}" -ge "$n" ] && break
		sleep 0.05
	done
	echo $(($(date +%s%N) + 300000000)) >"$d/go.tmp" && mv "$d/go.tmp" "$d/go"
}
kps() { sed -n 's/^RESULT role=be .*kps=\([0-9.]*\).*/\1/p' "$1" | tail -1; }
p99() { sed -n 's/^RESULT role=lc .*p99_us=\([0-9.]*\).*/\1/p' "$1" | tail -1; }
pct() { awk -v a="${1:-0}" -v b="${2:-0}" 'BEGIN { if (b > 0) printf "%.1f", 100 * a / b; else print "nan" }'; }
ITERS=20000
if { ! skip lc || ! skip graph; } && [ -x "$TN" ]; then
	ITERS=$(timeout 30 "$TN" --role calib --be-us 100 | sed -n 's/.*iters=\([0-9]*\).*/\1/p')
	ITERS=${ITERS:-20000}
fi
BE=(--role be --streams 4 --iters "$ITERS" --secs "$SECS" --warm 1)
LCA=(--role lc --period-us 10000 --secs "$SECS" --warm 1)
POL="$HB/gx_lcfirst.bpf.o,guard_us=20,be_window=2,max_hold_ms=100"

# trio NAME MODE: one LC and two BE, MODE native | policy | shares
trio() {
	local name=$1 mode=$2 bar=$W/$1
	mkdir -p "$bar"
	local lc=("$TN" "${LCA[@]}" --barrier "$bar") be=("$TN" "${BE[@]}" --barrier "$bar")
	local pre_lc=() pre_a=() pre_b=()
	if [ "$mode" != native ]; then
		pre_lc=("$RUN" --tenant lc --class lc --policy "$POL" --)
		pre_a=("$RUN" --tenant bea --class be --policy "$POL" --)
		pre_b=("$RUN" --tenant beb --class be --policy "$POL" --)
	fi
	if [ "$mode" = shares ]; then
		pre_a=("$RUN" --tenant bea --class be --gpu-share 30 --policy "$POL" --)
		pre_b=("$RUN" --tenant beb --class be --gpu-share 70 --policy "$POL" --)
	fi
	timeout $((SECS + 60)) "${pre_lc[@]}" "${lc[@]}" >"$L/$name.lc.out" 2>"$L/$name.lc.err" &
	local p1=$!
	timeout $((SECS + 60)) "${pre_a[@]}" "${be[@]}" >"$L/$name.a.out" 2>"$L/$name.a.err" &
	local p2=$!
	timeout $((SECS + 60)) "${pre_b[@]}" "${be[@]}" >"$L/$name.b.out" 2>"$L/$name.b.err" &
	local p3=$!
	kids+=("$p1" "$p2" "$p3")
	start_go "$bar" 3
	wait "$p1" "$p2" "$p3"
}

# ---- 2. LC beside two BE tenants with shares ----
if ! skip lc && [ -x "$TN" ]; then
	bar=$W/lcalone && mkdir -p "$bar"
	timeout $((SECS + 60)) "$RUN" --tenant lc --class lc --policy "$POL" -- "$TN" "${LCA[@]}" --barrier "$bar" \
		>"$L/lc-alone.out" 2>"$L/lc-alone.err" &
	p=$!
	kids+=("$p")
	start_go "$bar" 1
	wait "$p"
	trio native native
	trio policy policy
	trio shares shares
	a0=$(p99 "$L/lc-alone.out") an=$(p99 "$L/native.lc.out") ap=$(p99 "$L/policy.lc.out") as=$(p99 "$L/shares.lc.out")
	row "config | LC p99 us | BE a kernels/s | BE b kernels/s | a's part of the BE work |"
	row "---|---|---|---|---|"
	row "LC alone (gpuext, gx_lcfirst) | $a0 | - | - | - |"
	for n in native policy shares; do
		ka=$(kps "$L/$n.a.out") kb=$(kps "$L/$n.b.out")
		row "$n | $(p99 "$L/$n.lc.out") | $ka | $kb | $(pct "$ka" "$(awk -v a="${ka:-0}" -v b="${kb:-0}" 'BEGIN{print a+b}')") % |"
	done
	ka=$(kps "$L/shares.a.out") kb=$(kps "$L/shares.b.out")
	sa=$(pct "$ka" "$(awk -v a="${ka:-0}" -v b="${kb:-0}" 'BEGIN{print a+b}')")
	bench "LC p99: alone $a0 us, native beside 2 BE $an us, gx_lcfirst $ap us, gx_lcfirst + shares 30/70 $as us"
	check "awk -v s='${as:-0}' -v p='${ap:-0}' 'BEGIN { exit !(s > 0 && p > 0 && s <= 1.2 * p + 20) }'" \
		"LC keeps its protection beside BE tenants with shares: p99 $as us vs $ap us without shares (<= 1.2x + 20 us)"
	check "awk -v s='${as:-0}' -v n='${an:-0}' 'BEGIN { exit !(s > 0 && s <= 0.5 * n) }'" \
		"and far below native beside them: $as us vs $an us (<= 50 %)"
	check "awk 'BEGIN { exit !($sa >= 25 && $sa <= 35) }'" "the BE tenants split their GPU time 30/70: a has $sa % (30 ± 5)"
fi

# ---- 3. a graph-replaying BE tenant held to its share ----
if ! skip graph && [ -x "$TN" ]; then
	solo() { # NAME ARGS...
		local name=$1 bar=$W/$1
		shift
		mkdir -p "$bar"
		timeout $((SECS + 60)) "$RUN" --tenant "$name" --gpu-share 30 -- "$TN" "${BE[@]}" "$@" --barrier "$bar" \
			>"$L/$name.out" 2>"$L/$name.err" &
		local p=$!
		kids+=("$p")
		start_go "$bar" 1
		wait "$p"
	}
	solo galone --graph 4
	solo kalone
	bar=$W/gpair && mkdir -p "$bar"
	timeout $((SECS + 60)) "$RUN" --tenant ga --gpu-share 30 -- "$TN" "${BE[@]}" --graph 4 --barrier "$bar" \
		>"$L/gpair.a.out" 2>"$L/gpair.a.err" &
	pa=$!
	timeout $((SECS + 60)) "$RUN" --tenant kb --gpu-share 70 -- "$TN" "${BE[@]}" --barrier "$bar" \
		>"$L/gpair.b.out" 2>"$L/gpair.b.err" &
	pb=$!
	kids+=("$pa" "$pb")
	start_go "$bar" 2
	sleep $((SECS / 2))
	"$GX" tenant list >"$L/gpair.tenants.txt" 2>&1
	wait "$pa" "$pb"
	g0=$(kps "$L/galone.out") k0=$(kps "$L/kalone.out") ga=$(kps "$L/gpair.a.out") kb=$(kps "$L/gpair.b.out")
	sg=$(pct "$ga" "$g0") sk=$(pct "$kb" "$k0")
	row "graph share | alone kernels/s | beside the other | share of GPU time |"
	row "---|---|---|---|"
	row "a: CUDA graphs of 4 kernels, --gpu-share 30 | $g0 | $ga | $sg % |"
	row "b: kernels, --gpu-share 70 | $k0 | $kb | $sk % |"
	bench "graph BE (--gpu-share 30) $sg % of alone, kernel BE (70) $sk %"
	check "awk 'BEGIN { exit !($sg >= 25 && $sg <= 35) }'" "a tenant replaying CUDA graphs is held to its share: $sg % (30 ± 5)"
	check "awk 'BEGIN { exit !($sk >= 65 && $sk <= 75) }'" "and its neighbour gets its own: $sk % (70 ± 5)"
fi

# ---- 4. cost of the pool path and of graph launches ----
if ! skip cost && [ -x "$B/bench/memlimit_cost" ]; then
	C=("$B/bench/memlimit_cost" 20000)
	n=$(timeout 60 "${C[@]}" | tee "$L/cost-native.out")
	s=$(timeout 60 "$RUN" -- "${C[@]}" | tee "$L/cost-shim.out")
	m=$(timeout 60 "$RUN" --tenant cost --mem-limit 8G -- "${C[@]}" | tee "$L/cost-limit.out")
	h=$(timeout 60 "$RUN" --tenant cost --mem-limit 8G --gpu-share 50 -- "${C[@]}" | tee "$L/cost-share.out")
	f() { echo "$1" | sed -n "s/.*$2=\([0-9]*\).*/\1/p"; }
	row "run | cuMemAlloc+cuMemFree ns | cuMemAllocAsync+cuMemFreeAsync ns | cuGraphLaunch ns |"
	row "---|---|---|---|"
	for r in "native:$n" "shim, no tenant:$s" "tenant, --mem-limit 8G:$m" "tenant, --mem-limit 8G --gpu-share 50:$h"; do
		row "${r%%:*} | $(f "${r#*:}" alloc_free_ns) | $(f "${r#*:}" async_free_ns) | $(f "${r#*:}" graph_launch_ns) |"
	done
	bench "pool path: +$(($(f "$m" async_free_ns) - $(f "$s" async_free_ns))) ns per alloc+free pair under a limit;" \
		"graph launch without a tenant: $(f "$s" graph_launch_ns) ns vs native $(f "$n" graph_launch_ns) ns"
	check "echo '$m' | grep -q 'total=$((8 * G))'" "memlimit_cost under --mem-limit 8G sees 8 GiB total"
fi
check "[ -z \"\$(ls -A '$SHMDIR' 2>/dev/null)\" ]" "nothing left in the maps folder"
