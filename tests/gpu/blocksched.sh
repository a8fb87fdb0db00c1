#!/usr/bin/env bash
# GPU check and benchmark of blocksched (run by tests/gpu/run.sh on the H200,
# or alone from the repository root over a tree built here with `make
# gpu-prep`). About 3 minutes; every step has its own time limit. Prints
# ok/not ok lines, `| ` table rows and `bench: ` lines; logs go to
# $OUT/blocksched/.
#  1. the policies are in the JIT cache (the GPU machine has no LLVM);
#  2. bench/sched_bench: native launch vs each policy on a GEMM-like kernel
#     with moderate imbalance and a clustered heavy tail, each with small
#     blocks (6-8 per SM) and with one 128x128 tile per SM (gemm_tile), a
#     CSR SpMV over a power-law matrix, and the balanced GEMM and vector add:
#     outputs bit for bit, medians, the bounds (ideal order, even work, the
#     oracle's hints in the copy) and the goal lines (>= 15 % / >= 25 % for
#     the best schedule on the one-tile-per-SM kernels, adaptive within 2 %
#     of the best fixed policy and never more than 1 % worse than native,
#     <= 2 % on balanced kernels);
#  3. bench/hook_overhead's persistent rows: the transform's own cost, A/B
#     (static loop alone, full copy, unit barrier forced, 1 unit per claim);
#  4. tests/gpu/sched_app (sequential, 4 concurrent streams, a captured
#     graph) through the shim with each policy and with GPUEXT_PERSISTENT:
#     the same checksums as without the shim, no hang, kernels launched as
#     persistent workers; bench/hook_kernels through the shim (passes_app)
#     with each policy: same outputs; the shim's GPU corpus programs
#     (tests/gpu/shim) under each policy: same outputs;
#  5. gpuext sched on a run's schedule log: text, JSON, Perfetto trace.
set -u
cd "${GX_ROOT:-$(dirname "$0")/../..}"
B=${GX_BUILD:-build}
OUT=${OUT:-$B/gpu-out}
L=$OUT/blocksched
mkdir -p "$L"
L=$(cd "$L" && pwd)
export PATH=$PATH:/usr/local/cuda/bin
export GPUEXT_CACHE_DIR=${GPUEXT_CACHE_DIR:-$B/cache}
# Device policies' maps outlive their process (for the tools' reports):
# keep this script's in a folder of its own, out of the other scripts' way.
if [ -z "${GPUEXT_SHM_DIR:-}" ]; then
	export GPUEXT_SHM_DIR=/dev/shm/gpuext-blocksched-$$
	trap 'rm -rf "$GPUEXT_SHM_DIR"' EXIT
fi
P=$(cd "$B/share/gpuext/sched" 2>/dev/null && pwd)
POLICIES="fixed_work greedy max_steals latency_budget adaptive"
ok() { echo "ok - blocksched: $*"; }
nok() { echo "not ok - blocksched: $*"; }
note() { echo "# $*"; }
T0=$(date +%s)
elapsed() { echo $(($(date +%s) - T0)); }
# The whole script stays under GX_BS_BUDGET seconds (run.sh kills it at
# GX_GPU_TIMEOUT, 300): lim N is N or what is left, whichever is less; a step
# with 5 s or less left is skipped with a not ok line. After one hang the
# shim runs get 20 s each (the next ones would most likely hang too).
BUDGET=${GX_BS_BUDGET:-230}
APP_LIM=60
lim() {
	local left=$((BUDGET - $(elapsed)))
	[ "$left" -gt "$1" ] && echo "$1" || echo "$left"
}
have_time() { [ "$(lim "$1")" -gt 5 ] || { nok "$2: skipped, past the script's $BUDGET s budget"; return 1; }; }
# GPUEXT_SCHED for policy $1 in the correctness runs below: every policy is
# guarded by default, which runs most launches as the original where a copy
# loses; these runs want the copies' code paths (claims, steals, 4 streams,
# graphs), so the fixed policies run unguarded and adaptive as shipped
# (tests/gpu/schedguard.sh measures the guarded ones).
spec() { if [ "$1" = adaptive ]; then echo "$P/$1.bpf.o"; else echo "$P/$1.bpf.o,gx_sched_guard=0"; fi; }

# ---- 1. the JIT cache ----
n=0
for p in $POLICIES; do
	[ -f "$P/$p.bpf.o" ] || { nok "$P/$p.bpf.o missing (make)"; continue; }
	n=$((n + 1))
done
ncache=$(ls "$GPUEXT_CACHE_DIR"/*.gxpol 2>/dev/null | wc -l)
[ "$n" -eq 5 ] && [ "$ncache" -ge 5 ] && ok "5 policies built, $ncache entries in the JIT cache $GPUEXT_CACHE_DIR" ||
	nok "policies $n/5, JIT cache entries $ncache in $GPUEXT_CACHE_DIR (run 'make gpu-prep' before carrying build/)"

# ---- 2. the benchmark ----
if [ -x "$B/bench/sched_bench" ] && [ -f "$B/bench/sched_kernels.ptx" ]; then
	timeout -k 5 "$(lim 150)" env CUDA_CACHE_DISABLE=1 "$B/bench/sched_bench" "$B/bench/sched_kernels.ptx" "$P" \
		"${GX_REPEATS:-11}" >"$L/sched_bench.md" 2>"$L/sched_bench.err"
	rc=$?
	cat "$L/sched_bench.md"
	[ $rc -eq 0 ] && ok "sched_bench ran ($(elapsed) s so far)" ||
		nok "sched_bench exited $rc (124: past its 150 s): $(tail -2 "$L/sched_bench.err" | tr '\n' ' ')"
else
	nok "$B/bench/sched_bench or sched_kernels.ptx not built"
fi

# The heavy tail's other shapes: how much whole-block scheduling can win
# depends on how many heavy tiles share an SM (11 rows, the goal's shape:
# the ideal order gains 26 %; at 12-16 it gains 25 % or less). Reported, with
# outputs still compared: adaptive against the ideal order at each.
for r in 12 14 16; do
	have_time 30 "sched_bench tail_tile at $r rounds" || break
	timeout -k 5 "$(lim 30)" env CUDA_CACHE_DISABLE=1 SCHED_BENCH_ONLY='^tail_tile$' SCHED_BENCH_TAIL_ROUNDS=$r \
		"$B/bench/sched_bench" "$B/bench/sched_kernels.ptx" "$P" "${GX_REPEATS:-11}" >"$L/sched_bench-tail$r.md" 2>&1
	ideal=$(sed -n 's/^| tail_tile | native, heaviest blocks first[^|]*| [0-9.]* | \([-+0-9.]* %\).*/\1/p' "$L/sched_bench-tail$r.md")
	ad=$(sed -n 's/^| tail_tile | adaptive, guarded[^|]*| [0-9.]* | \([-+0-9.]* %\).*/\1/p' "$L/sched_bench-tail$r.md")
	grep -q '^not ok - sched_bench tail_tile .*: output identical' "$L/sched_bench-tail$r.md" &&
		nok "tail_tile at $r rounds: an output differs from native"
	echo "bench: sched tail_tile at $r rounds: adaptive guarded ${ad:-?} vs native, ideal order ${ideal:-?}"
done

# ---- 3. the transform's own cost, A/B ----
if [ -x "$B/bench/hook_overhead" ] && [ -f "$B/bench/hook_kernels.ptx" ] && have_time 90 "hook_overhead (persistent rows)"; then
	timeout -k 5 "$(lim 90)" env CUDA_CACHE_DISABLE=1 GX_HO_ROWS='^persist' "$B/bench/hook_overhead" \
		"$B/bench/hook_kernels.ptx" "${GX_REPEATS:-11}" "$B/bench" >"$L/hook_overhead.md" 2>&1
	rc=$?
	grep -E '^(\| |bench: |not ok|ok)' "$L/hook_overhead.md" | sed 's/^ok - /ok - blocksched: /; s/^not ok - /not ok - blocksched: /'
	[ $rc -eq 0 ] || nok "hook_overhead (persistent rows) exited $rc (124: past 90 s)"
fi

# ---- 4. through the shim ----
SHIM_LLP="$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
app=$B/tests/gpu/sched_app
if [ ! -x "$app" ]; then
	nok "$app not built (make gpu-prep)"
else
	timeout -k 5 "$(lim 60)" "$app" >"$L/app-native.txt" 2>&1
	rc=$?
	if [ $rc -ne 0 ] || ! grep -q '^done' "$L/app-native.txt"; then
		nok "sched_app without the shim: exit $rc: $(tail -1 "$L/app-native.txt")"
	else
		ok "sched_app runs without the shim ($(grep -c '^sum' "$L/app-native.txt") checksums)"
		for p in $POLICIES persistent=1 persistent=static; do
			tag=${p/=/-}
			case $p in
			persistent=*) envs="GPUEXT_PERSISTENT=${p#persistent=}" ;;
			*) envs="GPUEXT_SCHED=$(spec "$p") GPUEXT_SCHED_LOG=$L/$tag.sched.log GPUEXT_SCHED_SAMPLE=4" ;;
			esac
			rm -f "$L/$tag.sched.log"
			have_time "$APP_LIM" "sched_app with $p" || continue
			t=$(lim "$APP_LIM")
			# shellcheck disable=SC2086
			timeout -k 5 "$t" env LD_LIBRARY_PATH="$SHIM_LLP" GPUEXT_LOG=info $envs "$app" \
				>"$L/app-$tag.txt" 2>"$L/app-$tag.log"
			rc=$?
			nl=$(grep -c 'launched as' "$L/app-$tag.log")
			if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
				nok "sched_app with $p: did not finish in $t s (a hang?)"
				APP_LIM=20
			elif [ $rc -ne 0 ]; then
				nok "sched_app with $p: exit $rc: $(tail -1 "$L/app-$tag.txt") $(grep -m1 -i 'error\|warn\|sched_app.cu:' "$L/app-$tag.log")"
			elif ! cmp -s "$L/app-native.txt" "$L/app-$tag.txt"; then
				nok "sched_app with $p: checksums differ: $(diff "$L/app-native.txt" "$L/app-$tag.txt" | head -4 | tr '\n' ' ')"
			elif [ "$nl" -eq 0 ]; then
				nok "sched_app with $p: same checksums, but no kernel launched persistent: $(grep -m2 'blocksched\|policy' "$L/app-$tag.log" | tr '\n' ' ')"
			else
				ok "sched_app with $p: same checksums (sequential, 4 streams, graph), $nl kernels launched persistent"
			fi
			grep -E 'blocksched|persistent: .*(refused|run the original)' "$L/app-$tag.log" | head -6 | sed 's/^/# /'
			if [ "$p" = adaptive ]; then
				# the guard's three arms ran (the static copy too) and settled
				nps=$(grep -c 'launched as __gx_ps_' "$L/app-$tag.log")
				ng=$(grep -c 'guard: its copy .*its static copy' "$L/app-$tag.log")
				[ "$nps" -gt 0 ] && [ "$ng" -gt 0 ] &&
					ok "sched_app with adaptive: $nps kernels ran their static copy, $ng guard decisions over three arms" ||
					nok "sched_app with adaptive: $nps static copies launched, $ng three-arm guard decisions"
				grep 'guard: ' "$L/app-$tag.log" | head -8 | sed 's/^.*gpuext: /# /'
			fi
		done
	fi
fi
papp=$L/passes_app
if nvcc -gencode arch=compute_90,code=compute_90 -o "$papp" tests/gpu/passes_app.cu >"$L/passes_app.build.txt" 2>&1 &&
	timeout -k 5 "$(lim 60)" "$papp" >"$L/passes-native.txt" 2>&1; then
	for p in $POLICIES; do
		have_time "$APP_LIM" "hook_kernels (passes_app) with $p" || continue
		t=$(lim "$APP_LIM")
		timeout -k 5 "$t" env LD_LIBRARY_PATH="$SHIM_LLP" GPUEXT_LOG=info GPUEXT_SCHED="$(spec "$p")" "$papp" \
			>"$L/passes-$p.txt" 2>"$L/passes-$p.log"
		rc=$?
		[ $rc -eq 124 ] || [ $rc -eq 137 ] && APP_LIM=20
		nl=$(grep -c 'launched as' "$L/passes-$p.log")
		[ $rc -eq 0 ] && cmp -s "$L/passes-native.txt" "$L/passes-$p.txt" && [ "$nl" -gt 0 ] &&
			ok "hook_kernels (passes_app) with $p: same outputs, $nl kernels launched persistent" ||
			nok "hook_kernels (passes_app) with $p: exit $rc, $nl launched persistent, outputs $(cmp -s "$L/passes-native.txt" "$L/passes-$p.txt" && echo same || echo differ)"
	done
else
	nok "passes_app: $(head -1 "$L/passes_app.build.txt") $(tail -1 "$L/passes-native.txt" 2>/dev/null)"
fi

# The shim's GPU corpus (tests/gpu/shim: the runtime API, a graph, 16
# threads, PTX through the driver API) under every policy: each program's
# output against its native run; the kernels the transform accepted ran as
# persistent workers (their count reported).
S=tests/gpu/shim
CW=$(mktemp -d)
RP="-Xlinker -rpath=/usr/local/cuda/lib64"
(nvcc -arch=sm_90 -o "$CW/rt_basic" "$S/rt_basic.cu" >"$L/corpus-build.txt" 2>&1) &
(nvcc -arch=sm_90 -o "$CW/graph" "$S/graph.cu" >>"$L/corpus-build.txt" 2>&1) &
(nvcc -arch=sm_90 -o "$CW/threads16" "$S/threads16.cu" >>"$L/corpus-build.txt" 2>&1) &
(nvcc -arch=sm_90 $RP -o "$CW/drv" "$S/drv.cu" -lcuda -lnvrtc >>"$L/corpus-build.txt" 2>&1 &&
	nvcc -ptx -arch=compute_90 -o "$CW/kernels.ptx" "$S/kernels_ptx.cu" >>"$L/corpus-build.txt" 2>&1) &
wait
for c in rt_basic graph threads16 drv; do
	args=()
	[ $c = drv ] && args=(file "$CW/kernels.ptx")
	[ -x "$CW/$c" ] || { nok "corpus $c: not built: $(tail -2 "$L/corpus-build.txt" | tr '
' ' ')"; continue; }
	have_time 20 "corpus $c" || break
	timeout -k 5 "$(lim 30)" "$CW/$c" "${args[@]}" >"$L/corpus-$c.native" 2>&1 || { nok "corpus $c fails natively"; continue; }
	for p in $POLICIES; do
		have_time 10 "corpus $c with $p" || break
		timeout -k 5 "$(lim 30)" env LD_LIBRARY_PATH="$SHIM_LLP" GPUEXT_LOG=info GPUEXT_SCHED="$(spec "$p")" \
			"$CW/$c" "${args[@]}" >"$L/corpus-$c.$p" 2>"$L/corpus-$c.$p.log"
		rc=$?
		nl=$(grep -c 'launched as' "$L/corpus-$c.$p.log")
		[ $rc -eq 0 ] && cmp -s "$L/corpus-$c.native" "$L/corpus-$c.$p" &&
			ok "corpus $c with $p: same output, $nl kernels launched persistent" ||
			nok "corpus $c with $p: exit $rc, output $(cmp -s "$L/corpus-$c.native" "$L/corpus-$c.$p" && echo same || echo differs)"
	done
done
rm -rf "$CW"

# ---- 5. gpuext sched ----
log=$L/adaptive.sched.log
if [ -s "$log" ]; then
	"$B/bin/gpuext" sched "$log" >"$L/sched.txt" 2>&1 &&
		"$B/bin/gpuext" --json sched --trace "$L/sched-trace.json" "$log" >"$L/sched.json" 2>>"$L/sched.txt"
	rc=$?
	nk=$(grep -c '"name"' "$L/sched.json" 2>/dev/null)
	nsamp=$(grep -o '"nth"' "$L/sched.json" 2>/dev/null | wc -l)
	[ $rc -eq 0 ] && [ "$nsamp" -gt 0 ] && [ -s "$L/sched-trace.json" ] &&
		ok "gpuext sched: $nsamp sampled launches with per-SM work, JSON and trace ($L/sched-trace.json)" ||
		nok "gpuext sched: exit $rc, $nk kernels, $nsamp samples: $(head -3 "$L/sched.txt" | tr '\n' ' ')"
	head -40 "$L/sched.txt" | sed 's/^/# /'
else
	nok "no schedule log from the adaptive run ($log)"
fi
note "blocksched.sh took $(elapsed) s"
