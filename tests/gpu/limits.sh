#!/usr/bin/env bash
# GPU: per-tenant limits (issue 39, docs/limits.md). Run by tests/gpu/run.sh
# or alone from the repository root after `make gpu-prep`; about 3-4 minutes.
#  1. Memory, each stack under `gpuext-run --tenant T --mem-limit 4G`
#     (tests/gpu/limits_fw.py): PyTorch's torch.cuda.mem_get_info() total is
#     4 GiB, 5 GiB raises torch.cuda.OutOfMemoryError, then the process frees
#     and goes on; JAX with preallocation on (XLA_PYTHON_CLIENT_MEM_FRACTION
#     0.5: bytes_limit <= 2 GiB) and CuPy the same. Stacks not installed are
#     skipped with a note.
#  2. A killed tenant's memory: a process of tenant k holds 3 GiB of 4, a
#     second one waits for 3 GiB; kill -9 of the first: the second gets it
#     within 1 s.
#  3. Compute shares (bench/tenants.cu BE processes, ~100 µs kernels back to
#     back on 4 streams): kernels/s alone; tenants a (--gpu-share 30) and b
#     (70) together for LIMITS_SECS (25 s): each one's share of GPU time =
#     its kernels/s / alone, goal within ±5 points of 30 and 70; a alone
#     next to an idle b (one small kernel a second): >= 95 % of alone.
#  4. Cost (bench/memlimit_cost): cuMemAlloc+cuMemFree and cuMemGetInfo, ns,
#     natively, under the shim with no tenant, and with a limit (a table,
#     not checked: benchmarks are not timed tests).
# Logs under $OUT/limits/. LIMITS_SKIP=mem,kill,share,cost skips sections.
# Pools, LC beside shared tenants, graph launches under shares:
# tests/gpu/limits2.sh.
set -u
ROOT=${GX_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
B=${GX_BUILD:-$ROOT/build}
OUT=${OUT:-$B/gpu-out}
L=$OUT/limits
SECS=${LIMITS_SECS:-25}
SKIP=${LIMITS_SKIP:-}
PY=${PYTHON:-python3}
SHMDIR=/dev/shm/gpuext-limits-$$
export GPUEXT_SHM_DIR=$SHMDIR PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export GPUEXT_CACHE_DIR=${GPUEXT_CACHE_DIR:-$B/cache}
RUN=$B/bin/gpuext-run
GX=$B/bin/gpuext
TN=$B/tests/gpu/tenants
ML=$B/tests/shim/test_memlimit
mkdir -p "$L"
W=$(mktemp -d)
kids=()
cleanup() {
	for p in "${kids[@]}"; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$W" "$SHMDIR"
}
trap cleanup EXIT
check() { if eval "$1"; then echo "ok - limits: $2"; else echo "not ok - limits: $2${3:+: $3}"; fi; }
skip() { [[ ",$SKIP," == *",$1,"* ]]; }
G=$((1 << 30))
: >"$L/summary.txt"

# ---- 1. the stacks under a 4 GiB limit ----
if ! skip mem; then
	for st in torch jax cupy; do
		mod=$st
		if ! $PY -c "import $mod" 2>/dev/null; then
			echo "# limits: $st not installed: skipped" | tee -a "$L/summary.txt"
			continue
		fi
		env GX_LIMIT=$((4 * G)) XLA_PYTHON_CLIENT_PREALLOCATE=true XLA_PYTHON_CLIENT_MEM_FRACTION=0.5 \
			timeout 120 "$RUN" --tenant "fw-$st" --mem-limit 4G -- $PY "$ROOT/tests/gpu/limits_fw.py" "$st" \
			>"$L/$st.out" 2>"$L/$st.err"
		rc=$?
		grep -E '^(ok|not ok|#)' "$L/$st.out" | sed 's/^ok - /ok - limits: /; s/^not ok - /not ok - limits: /'
		check "[ $rc -eq 0 ]" "$st under --mem-limit 4G exits 0 (no crash)" "exit $rc: $(tail -3 "$L/$st.err" | tr '\n' ' ')"
	done
fi

# ---- 2. kill -9 gives the budget back ----
if ! skip kill; then
	"$RUN" --tenant k --mem-limit 4G -- "$ML" hold $((3 * G)) >"$W/hold.out" 2>"$L/hold.err" &
	hp=$!
	kids+=("$hp")
	for _ in $(seq 200); do grep -q held "$W/hold.out" && break; sleep 0.05; done
	check "grep -q held '$W/hold.out'" "tenant k: a process holds 3 GiB of 4"
	"$GX" tenant list | tee "$L/kill-list.txt" | sed 's/^/# /'
	"$RUN" --tenant k --mem-limit 4G -- "$ML" wait $((3 * G)) >"$W/wait.out" 2>"$L/wait.err" &
	wp=$!
	sleep 0.5
	hpid=$(pgrep -f "test_memlimit hold" | head -1)
	kill -9 "$hpid" 2>/dev/null
	wait "$wp"
	rc=$?
	ms=$(head -1 "$W/wait.out")
	echo "kill: waited ${ms:-?} ms in all, killed at ~500" >>"$L/summary.txt"
	check "[ $rc -eq 0 ] && [ ${ms:-99999} -le 1500 ]" \
		"kill -9 of the holder: the other process of k gets its 3 GiB within 1 s (waited ${ms:-?} ms, from 500)"
fi

# ---- 3. compute shares ----
kps() { sed -n 's/.*kps=\([0-9.]*\).*/\1/p' "$1" | tail -1; }
barrier_go() { # start processes waiting at DIR, once N are ready
	local d=$1 n=$2
	for _ in $(seq 600); do [ "$(ls "$d" | grep -c '^ready')" -ge "$n" ] && break; sleep 0.05; done
	date +%s%N >"$d/go.tmp" && mv "$d/go.tmp" "$d/go"
}
if ! skip share && [ -x "$TN" ]; then
	iters=$("$TN" --role calib --be-us 100 | sed -n 's/.*iters=\([0-9]*\).*/\1/p')
	iters=${iters:-20000}
	BE=(--role be --streams 4 --iters "$iters" --secs "$SECS" --warm 2)
	bar=$W/solo && mkdir -p "$bar"
	"$RUN" --tenant a --gpu-share 30 -- "$TN" "${BE[@]}" --barrier "$bar" >"$L/solo.out" 2>"$L/solo.err" &
	p=$!
	barrier_go "$bar" 1
	wait $p
	solo=$(kps "$L/solo.out")
	bar=$W/pair && mkdir -p "$bar"
	"$RUN" --tenant a --gpu-share 30 -- "$TN" "${BE[@]}" --barrier "$bar" >"$L/a.out" 2>"$L/a.err" &
	pa=$!
	"$RUN" --tenant b --gpu-share 70 -- "$TN" "${BE[@]}" --barrier "$bar" >"$L/b.out" 2>"$L/b.err" &
	pb=$!
	kids+=("$pa" "$pb")
	barrier_go "$bar" 2
	sleep $((SECS / 2))
	"$GX" tenant list | sed 's/^/# /'
	wait $pa $pb
	ka=$(kps "$L/a.out") kb=$(kps "$L/b.out")
	read -r sa sb < <(awk -v a="${ka:-0}" -v b="${kb:-0}" -v s="${solo:-1}" 'BEGIN{printf "%.1f %.1f\n", 100*a/s, 100*b/s}')
	echo "share: alone $solo kernels/s; a (30) $ka = $sa %, b (70) $kb = $sb %" | tee -a "$L/summary.txt"
	check "awk 'BEGIN{exit !($sa >= 25 && $sa <= 35)}'" "--gpu-share 30 next to 70: a's GPU time $sa % (30 ± 5)"
	check "awk 'BEGIN{exit !($sb >= 65 && $sb <= 75)}'" "--gpu-share 70 next to 30: b's GPU time $sb % (70 ± 5)"
	# b idle: a tenant with a share that launches one small kernel a second
	bar=$W/idle && mkdir -p "$bar"
	"$RUN" --tenant b --gpu-share 70 -- "$TN" --role lc --period-us 1000000 --secs $((SECS + 5)) --warm 0 \
		--barrier "$bar" >"$L/idle-b.out" 2>"$L/idle-b.err" &
	pb=$!
	"$RUN" --tenant a --gpu-share 30 -- "$TN" "${BE[@]}" --barrier "$bar" >"$L/idle-a.out" 2>"$L/idle-a.err" &
	pa=$!
	kids+=("$pa" "$pb")
	barrier_go "$bar" 2
	wait $pa
	kill "$pb" 2>/dev/null
	ki=$(kps "$L/idle-a.out")
	pi=$(awk -v a="${ki:-0}" -v s="${solo:-1}" 'BEGIN{printf "%.1f", 100*a/s}')
	echo "share: a (30) next to an idle b: $ki kernels/s = $pi % of alone" | tee -a "$L/summary.txt"
	check "awk 'BEGIN{exit !($pi >= 95)}'" "work-conserving: a (30 %) next to an idle b gets $pi % of alone (>= 95)"
fi

# ---- 4. the allocation path's cost ----
if ! skip cost && [ -x "$B/bench/memlimit_cost" ]; then
	n=$("$B/bench/memlimit_cost" 20000 | tee "$L/cost-native.out")
	s=$("$RUN" -- "$B/bench/memlimit_cost" 20000 | tee "$L/cost-shim.out")
	t=$("$RUN" --tenant cost -- "$B/bench/memlimit_cost" 20000 | tee "$L/cost-tenant.out")
	m=$("$RUN" --tenant cost --mem-limit 8G -- "$B/bench/memlimit_cost" 20000 | tee "$L/cost-limit.out")
	{
		echo "| run | cuMemAlloc+cuMemFree ns | cuMemGetInfo ns |"
		echo "|---|---|---|"
		for r in "native:$n" "shim, no tenant:$s" "tenant, no limit:$t" "tenant, --mem-limit 8G:$m"; do
			echo "| ${r%%:*} | $(echo "${r#*:}" | sed -n 's/.*alloc_free_ns=\([0-9]*\).*/\1/p') |" \
				"$(echo "${r#*:}" | sed -n 's/.*getinfo_ns=\([0-9]*\).*/\1/p') |"
		done
	} | tee -a "$L/summary.txt"
	check "echo '$m' | grep -q 'total=$((8 * G))'" "memlimit_cost under --mem-limit 8G sees 8 GiB total"
fi
check "[ -z \"\$(ls -A '$SHMDIR' 2>/dev/null)\" ]" "nothing left in the maps folder"
