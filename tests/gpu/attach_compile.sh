#!/usr/bin/env bash
# GPU checks of live attach on a torch.compile training loop with many
# kernels loaded (issue 37; docs/attach.md): tests/gpu/ml/attach_compile.py,
# a 22-block MLP whose blocks all differ, so inductor makes a few distinct
# Triton kernels per block (forward and backward), each its own module.
#  1. reference: the loop without the shim (the cold compile fills the
#     inductor and Triton caches the later runs use).
#  2. --tool runs: gpuext-run --tool threadhist for K and for 2K iterations:
#     the difference is what threadhist counts over K steady iterations.
#  3. the live run (under the shim, nothing attached at its start):
#     per-iteration time before any attach; `gpuext attach --tool
#     threadhist` while it runs with cold module and driver JIT caches, the
#     time to the first instrumented launch, detach; the same warm; then a
#     window of exactly K iterations (the loop held between iterations by
#     its gate file) attached, the detach report's counts against the
#     --tool difference, the per-iteration time while attached and after
#     the detach (ratio after/before); host policies gx_seq (mem) and
#     gx_lcfirst (sched, task_launch) attached and detached live; `gpuext
#     attach --sched adaptive` for AC_SCHED_ITERS iterations (the copies
#     carry persistent workers; blocksched launches them, adaptive's guard
#     picks per kernel) and its detach; checksums of every iteration
#     identical to the reference. Every run replays a CUDA graph
#     captured before any attach (AC_GRAPH=1): one "instantiated before
#     attach" line per attach, K graph launches not instrumented in the
#     window's detach message.
#  4. an nvcc program (tests/gpu/sched_live, PTX only: an imbalanced SGEMM,
#     a heavy tail, vadd, the tiled GEMM with 141 KB of dynamic shared
#     memory, one checksum per iteration): a reference run without the
#     shim, then under the shim `gpuext attach --sched adaptive` live and
#     detach; every iteration's checksum equal to the reference's.
# Prints ok/not ok lines and "bench:" lines; logs in $OUT/attach_compile/.
# About 2-3 minutes (the reference's cold compile is most of it; parts 3's
# --sched and 4 add about 20-30 s).
set -u
ROOT=${GX_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
B=${GX_BUILD:-$ROOT/build}
OUT=${OUT:-$B/gpu-out}
L=$OUT/attach_compile
K=${AC_WINDOW:-40}
REF_ITERS=${AC_REF_ITERS:-4000}
mkdir -p "$L"
W=$(mktemp -d)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill $p 2>/dev/null; done; rm -rf "$W"' EXIT
ok() { echo "ok - attach_compile: $*"; }
nok() { echo "not ok - attach_compile: $*"; }
bench() { echo "bench: attach_compile: $*"; }
G=$B/bin/gpuext
RUN=$B/bin/gpuext-run
LOOP=$ROOT/tests/gpu/ml/attach_compile.py
HP=$B/hostbpf
[ -x "$G" ] && [ -x "$RUN" ] && [ -e "$B/lib/libcuda.so.1" ] || { nok "build/ has no gpuext, gpuext-run or shim"; exit 1; }
python3 -c 'import torch, triton' 2>/dev/null || { nok "python3 with torch and triton is needed"; exit 1; }
mkdir -p "$W/cache" "$W/cache-tool" "$W/shm" "$W/ctl"
chmod 700 "$W/shm" "$W/ctl"
# the tools' JIT cache from gpu-prep; the --tool runs get their own module
# cache, so that the live run's first attach finds its module cache cold
cp "$B"/cache/*.gxpol "$W/cache/" 2>/dev/null || nok "no JIT cache in $B/cache: run 'make gpu-prep' before carrying build/"
cp "$B"/cache/*.gxpol "$W/cache-tool/" 2>/dev/null
export GPUEXT_CACHE_DIR=$W/cache GPUEXT_TOOLS_DIR=$B/share/gpuext/tools GPUEXT_CTL_DIR=$W/ctl GPUEXT_SHM_DIR=$W/shm
# AC_GRAPH=1: every run replays a CUDA graph captured before any attach
export CUBLAS_WORKSPACE_CONFIG=:4096:8 PYTHONUNBUFFERED=1 TRITON_CACHE_DIR=$W/triton \
	TORCHINDUCTOR_CACHE_DIR=$W/inductor AC_GRAPH=1

sums() { awk '$1 == "iter" { print $2, $6 }' "$1"; }
# iterations both printed, and whether they are identical
compare() { # REF RUN -> "N" (identical) or "-N" (differ)
	local n m
	n=$(sums "$2" | wc -l) m=$(sums "$1" | wc -l)
	[ "$m" -lt "$n" ] && n=$m
	if [ "$n" -gt 0 ] && cmp -s <(sums "$1" | head -n "$n") <(sums "$2" | head -n "$n"); then echo "$n"; else echo "-$n"; fi
}
last_iter() { awk '$1 == "iter" { i = $2 } END { print i + 0 }' "$1"; }
wait_iter() { # LOG N TIMEOUT_S: until iteration N was printed
	local t=$(($3 * 20))
	for _ in $(seq $t); do [ "$(last_iter "$1")" -ge "$2" ] && return 0; sleep 0.05; done
	return 1
}
wait_line() { # LOG PATTERN TIMEOUT_S
	for _ in $(seq $(($3 * 20))); do grep -q "$2" "$1" && return 0; sleep 0.05; done
	return 1
}
# median step ms of iterations [A, B)
med_ms() { awk -v a="$2" -v b="$3" '$1 == "iter" && $2 >= a && $2 < b { print $4 }' "$1" | sort -g |
	awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : "nan" }'; }
first_ms() { # ERRLOG K T0: first instrumented launch after the K-th attach, ms after T0
	local t
	t=$(grep -o 'attach: first instrumented launch at [0-9.]*' "$1" | sed -n "$2s/.* at //p")
	[ -n "$t" ] && python3 -c "print(round(($t - $3) * 1000, 1))"
}
# threadhist's instrumented blocks in a JSON report (lines of JSON on stdin or in files)
blocks() { python3 -c '
import json, sys
for l in open(sys.argv[1]):
    l = l.strip()
    if l.startswith("{") and "\"total\"" in l:
        try: print(json.loads(l)["total"]["blocks"]); break
        except Exception: pass
' "$1"; }

# ---- 1. reference (cold compile) ----
t0=$(date +%s)
if ! timeout 200 env AC_ITERS=$REF_ITERS python3 "$LOOP" >"$L/ref.out" 2>"$L/ref.err"; then
	nok "the loop without the shim failed: $(tail -2 "$L/ref.err" | tr '\n' ' ')"
	exit 1
fi
ok "the compiled loop runs without the shim ($(sums "$L/ref.out" | wc -l) iterations, $(awk '$1 == "kernels" { print $2 }' "$L/ref.out") Triton kernels generated, $(($(date +%s) - t0)) s with the compile)"

# ---- 2. --tool runs over K and 2K iterations ----
for n in $K $((2 * K)); do
	timeout 90 env TRITON_LIBCUDA_PATH="$B/lib" CUDA_CACHE_PATH="$W/nvcache-tool" GPUEXT_CACHE_DIR="$W/cache-tool" AC_ITERS=$n "$RUN" --tool threadhist --json -- \
		python3 "$LOOP" >"$L/tool$n.out" 2>"$L/tool$n.err" || nok "gpuext-run --tool threadhist ($n iterations) failed: $(tail -2 "$L/tool$n.err" | tr '\n' ' ')"
done
b1=$(cat "$L/tool$K.out" "$L/tool$K.err" >"$L/tool$K.all"; blocks "$L/tool$K.all")
b2=$(cat "$L/tool$((2 * K)).out" "$L/tool$((2 * K)).err" >"$L/tool2.all"; blocks "$L/tool2.all")
tool_window=$([ -n "$b1" ] && [ -n "$b2" ] && echo $((b2 - b1)))
tool_ms=$(med_ms "$L/tool$((2 * K)).out" 5 $((2 * K)))
c=$(compare "$L/ref.out" "$L/tool$((2 * K)).out")
[ "$c" -gt 0 ] 2>/dev/null && ok "--tool threadhist from the start: checksums identical ($c iterations)" ||
	nok "--tool threadhist from the start: checksums differ (${c#-} iterations compared)"

# ---- 3. the live run ----
echo 1000000000 >"$W/gate"
env LD_LIBRARY_PATH="$B/lib" TRITON_LIBCUDA_PATH="$B/lib" GPUEXT_LOG=info CUDA_CACHE_PATH="$W/nvcache-live" \
	AC_GATE="$W/gate" AC_STOP="$W/live.stop" AC_SLEEP_MS=${AC_SLEEP_MS:-20} python3 "$LOOP" >"$L/live.out" 2>"$L/live.err" &
pid=$!
PIDS+=($pid)
if ! wait_line "$L/live.out" '^ready' 90 || ! [ -e "$W/ctl/$pid.ps" ]; then
	nok "the live loop did not get ready under the shim: $(tail -2 "$L/live.err" | tr '\n' ' ')"
	exit 1
fi
wait_iter "$L/live.out" 60 60
before=$(med_ms "$L/live.out" 10 60)
# cold: empty module cache (the tools' JIT entries only) and driver JIT cache
t0=$(date +%s.%N)
"$G" attach $pid --tool threadhist --timeout 100 >"$L/attach1" 2>&1 && ok "attach (cold): $(head -1 "$L/attach1")" ||
	nok "attach (cold): $(cat "$L/attach1")"
wait_line "$L/live.err" 'first instrumented launch' 60
cold=$(first_ms "$L/live.err" 1 "$t0")
"$G" detach $pid >"$L/detach1" 2>&1 || nok "detach 1: $(cat "$L/detach1")"
t0=$(date +%s.%N)
"$G" attach $pid --tool threadhist >"$L/attach2" 2>&1 || nok "attach (warm): $(cat "$L/attach2")"
for _ in $(seq 600); do [ "$(grep -c 'first instrumented launch' "$L/live.err")" -ge 2 ] && break; sleep 0.05; done
warm=$(first_ms "$L/live.err" 2 "$t0")
"$G" detach $pid >"$L/detach2" 2>&1 || nok "detach 2: $(cat "$L/detach2")"
inst=$(grep -o '[0-9]* modules instrumented, [0-9]* not' "$L/attach2" | head -1)
mods=$(echo "$inst" | awk '{ print $1 + $4 }')
bench "modules loaded by the loop at the warm attach: $mods (${inst:-?}: SASS only or nothing to hook)"
bench "first instrumented launch after 'gpuext attach' (threadhist, $mods modules): cold ${cold:-?} ms, warm ${warm:-?} ms (goal warm <= 1000 ms)"
[ -n "$warm" ] && ok "the first instrumented launch came after the warm attach" || nok "no instrumented launch after the warm attach"
# the window: exactly K iterations attached, between two held points
s=$(($(last_iter "$L/live.out") + 5))
echo $s >"$W/gate"
wait_line "$L/live.out" "^held $s\$" 30 || nok "the loop did not hold at iteration $s"
"$G" attach $pid --tool threadhist >"$L/attach3" 2>&1 || nok "attach (window): $(cat "$L/attach3")"
echo $((s + K)) >"$W/gate"
wait_line "$L/live.out" "^held $((s + K))\$" 60 || nok "the loop did not hold at iteration $((s + K))"
"$G" --json detach $pid >"$L/detach3.json" 2>"$L/detach3.err" || nok "detach (window): $(cat "$L/detach3.err")"
grep -h 'detached' "$L/live.err" | tail -1 >"$L/detach3.msg"
echo 1000000000 >"$W/gate"
lw=$(blocks "$L/detach3.json")
if [ -n "$lw" ] && [ "$lw" = "${tool_window:-x}" ] && [ "$lw" -gt 0 ]; then
	ok "detach report complete: threadhist counted $lw blocks over $K iterations attached live, as many as gpuext-run --tool over $K steady iterations"
else
	nok "detach report: $lw blocks over the $K-iteration window attached live vs ${tool_window:-?} from gpuext-run --tool ($b2 - $b1)"
fi
# the loop's CUDA graph (captured before any attach) replays once per iteration
gl=$(grep -o '[0-9]* graph launches not instrumented' "$L/detach3.msg" | awk '{ print $1 }')
[ "${gl:-x}" = "$K" ] && ok "detach message: $gl graph launches not instrumented (the graph made before the attach, once per iteration of the window)" ||
	nok "detach message: '${gl:-no}' graph launches not instrumented, expected $K: $(cat "$L/detach3.msg")"
n_gl=$(grep -c 'graph exec 0x[0-9a-f]*: instantiated before attach, its [0-9]* kernel nodes run uninstrumented' "$L/live.err")
[ "$n_gl" = 3 ] && ok "one 'instantiated before attach' line for the graph exec per attach of the tool (3): $(grep -m1 -o 'graph exec .*' "$L/live.err")" ||
	nok "'instantiated before attach' lines: $n_gl, expected 3 (one per threadhist attach)"
attached=$(med_ms "$L/live.out" $s $((s + K)))
a0=$(($(last_iter "$L/live.out") + 5))
wait_iter "$L/live.out" $((a0 + 50)) 60
after=$(med_ms "$L/live.out" $a0 $((a0 + 50)))
bench "step ms (median): before any attach $before, attached (threadhist, live) $attached, --tool from the start $tool_ms, after the detach $after; after/before $(python3 -c "print(f'{$after / $before:.3f}')" 2>/dev/null)"
# host policies live: a mem policy and a sched policy with task_launch
h0=$(last_iter "$L/live.out")
"$G" attach $pid --policy "$HP/gx_seq.bpf.o" --policy "$HP/gx_lcfirst.bpf.o" >"$L/attach4" 2>&1 &&
	grep -q 'attached host policies seq,lcfirst' "$L/attach4" && ok "host policies attach live: $(head -1 "$L/attach4")" ||
	nok "host policies attach live: $(cat "$L/attach4")"
wait_iter "$L/live.out" $((h0 + 40)) 60
"$G" ps >"$L/ps4" 2>&1
grep -q "^$pid .*seq,lcfirst" "$L/ps4" && ok "ps shows the host policies" || nok "ps: $(cat "$L/ps4")"
"$G" detach $pid --all >"$L/detach4" 2>&1 && grep -q 'detached host policy seq,lcfirst' "$L/detach4" &&
	ok "host policies detach live: $(head -c 300 "$L/detach4")" || nok "host policies detach: $(cat "$L/detach4")"
grep -q "tenant: .*policy task_launch" "$L/live.err" && ok "the sched policy's task_launch was asked (the loop became a tenant)" ||
	nok "no tenant line after the sched policy's attach"
# --sched adaptive live: copies with persistent workers, then back
SI=${AC_SCHED_ITERS:-40}
h1=$(last_iter "$L/live.out")
t0=$(date +%s.%N)
if "$G" attach $pid --sched adaptive --timeout 100 >"$L/attach5" 2>&1 && grep -q 'attached adaptive' "$L/attach5"; then
	ok "--sched adaptive attaches live: $(head -1 "$L/attach5") ($(python3 -c "print(round($(date +%s.%N) - $t0, 2))") s)"
	wait_iter "$L/live.out" $((h1 + SI)) 90 || nok "--sched: the loop did not reach iteration $((h1 + SI))"
	np=$(grep -c 'attach: module [0-9]*: instrumented copy loaded (.*kernels with persistent copies' "$L/live.err")
	nl=$(grep -c 'blocksched: .*launched as __gx_p[ws]_' "$L/live.err")
	ng=$(grep -c 'blocksched: .*guard: ' "$L/live.err")
	# a note, not a check: which Triton kernels the transform and the
	# launcher accept is blocksched's business (docs/blocksched.md); the
	# live attach must only make the copies, switch and come back intact
	if [ "$np" -gt 0 ] && [ "$nl" -gt 0 ]; then
		ok "--sched live: $np copies with persistent workers, $nl kernels launched as persistent workers, $ng guard decisions over $SI iterations"
	else
		echo "# --sched live: $np copies with persistent workers, $nl kernels launched as persistent workers; blocksched said: $(grep 'blocksched' "$L/live.err" | sort | uniq -c | sort -rn | head -4 | tr '\n' ' ')"
	fi
	sched_ms=$(med_ms "$L/live.out" $((h1 + 5)) $((h1 + SI)))
	"$G" detach $pid --timeout 100 >"$L/detach5" 2>&1 && grep -q 'detached adaptive' "$L/detach5" &&
		ok "--sched detaches live: $(head -c 420 "$L/detach5")" || nok "--sched detach: $(cat "$L/detach5")"
	bench "step ms (median) with --sched adaptive attached live: $sched_ms (before any attach $before)"
else
	nok "--sched adaptive live: $(cat "$L/attach5")"
fi
h2=$(last_iter "$L/live.out")
wait_iter "$L/live.out" $((h2 + 20)) 60
touch "$W/live.stop"
wait $pid
rc=$?
[ $rc = 0 ] && ok "the live loop exited 0 after 5 attaches and detaches" || nok "the live loop exited $rc: $(tail -2 "$L/live.err" | tr '\n' ' ')"
c=$(compare "$L/ref.out" "$L/live.out")
n=$(sums "$L/live.out" | wc -l)
[ "$c" -gt 0 ] 2>/dev/null && ok "checksums identical to the reference over $c of the live run's $n iterations (every attach and detach inside)" ||
	nok "checksums differ from the reference (${c#-} of $n iterations compared)"
grep -h 'attach: \(attached\|detached\)\|graph exec\|refused' "$L/live.err" | head -30 >"$L/attach-lines.txt"

# ---- 4. an nvcc program: --sched adaptive attached live and detached ----
SL=$B/tests/gpu/sched_live
if [ ! -x "$SL" ]; then
	nok "no $SL: run 'make gpu-prep' before carrying build/"
else
	timeout 60 env SL_ITERS=3 "$SL" >"$L/sl-ref.out" 2>"$L/sl-ref.err" || nok "sched_live without the shim: $(tail -2 "$L/sl-ref.err" | tr '\n' ' ')"
	ref=$(awk '$1 == "iter" { print $4 }' "$L/sl-ref.out" | sort -u)
	[ "$(echo "$ref" | wc -l)" = 1 ] && [ -n "$ref" ] && ok "sched_live without the shim: one checksum every iteration ($ref)" ||
		nok "sched_live without the shim: checksums '$(echo $ref)'"
	env LD_LIBRARY_PATH="$B/lib" GPUEXT_LOG=info SL_STOP="$W/sl.stop" "$SL" >"$L/sl.out" 2>"$L/sl.err" &
	sp=$!
	PIDS+=($sp)
	if wait_line "$L/sl.out" '^iter 5 ' 60 && [ -e "$W/ctl/$sp.ps" ]; then
		s0=$(last_iter "$L/sl.out")
		"$G" attach $sp --sched adaptive --timeout 60 >"$L/sl.attach" 2>&1 && grep -q 'attached adaptive' "$L/sl.attach" &&
			ok "sched_live: --sched adaptive attached live: $(head -1 "$L/sl.attach")" || nok "sched_live: attach --sched: $(cat "$L/sl.attach")"
		wait_iter "$L/sl.out" $((s0 + 40)) 60 || nok "sched_live: no iteration $((s0 + 40)) while attached"
		nl=$(grep -o 'blocksched: [a-z_]*: launched as __gx_p[ws]_[a-z_]*' "$L/sl.err" | sort -u | tr '\n' ' ')
		[ -n "$nl" ] && ok "sched_live: kernels launched as persistent workers while attached: $nl" ||
			nok "sched_live: no kernel launched as persistent workers: $(grep -m3 'blocksched\|attach: module' "$L/sl.err" | tr '\n' ' ')"
		grep -h 'blocksched: .*guard: ' "$L/sl.err" | sed 's/^/# /' | head -8
		"$G" detach $sp --timeout 60 >"$L/sl.detach" 2>&1 && grep -q 'detached adaptive' "$L/sl.detach" &&
			ok "sched_live: detached: $(head -c 420 "$L/sl.detach")" || nok "sched_live: detach: $(cat "$L/sl.detach")"
		s1=$(last_iter "$L/sl.out")
		wait_iter "$L/sl.out" $((s1 + 5)) 30
	else
		nok "sched_live did not start under the shim: $(tail -2 "$L/sl.err" | tr '\n' ' ')"
	fi
	touch "$W/sl.stop"
	wait $sp
	rc=$?
	got=$(awk '$1 == "iter" { print $4 }' "$L/sl.out" | sort | uniq -c | tr -s ' ' | tr '\n' ';')
	n=$(awk '$1 == "iter"' "$L/sl.out" | wc -l)
	[ $rc = 0 ] && [ "$(awk '$1 == "iter" { print $4 }' "$L/sl.out" | sort -u)" = "$ref" ] &&
		ok "sched_live under the shim: all $n iterations' checksums equal the reference (before, during and after the attach), exit 0" ||
		nok "sched_live under the shim: exit $rc, checksums $got vs $ref"
fi
