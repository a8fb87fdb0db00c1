#!/usr/bin/env bash
# The first run of a job on a fresh node (issue 40): a small torch.compile
# training script (tests/gpu/ml/firstrun_train.py: conv stem, attention
# blocks, cross-entropy, a compiled AdamW step) run with every cache cold —
# the driver's ComputeCache (CUDA_CACHE_PATH), Triton's and Inductor's
# caches, gpuext's module cache — natively, then under `gpuext-run --tool
# threadhist` (each rewritten module JIT-compiled to a cubin by the driver at
# its load, shim/cubin.c, and stored), then again cold except for a shared
# read-only module cache made from the second run's (`gpuext cache prepare
# --shared --from`, docs/cache.md). The tools' policy cache comes from
# `make gpu-prep` in every configuration (no LLVM on the GPU machine; an
# install ships it prepared). With time left, threadhist --ptxas cold (the
# hooks compiled in by Triton's own parallel ptxas calls), then the
# threadhist run once more with GPUEXT_CUBIN=0 (the PTX load of before);
# first of those, threadhist --jit-async cold (FIRSTRUN_ASYNC=0: skipped).
# Prints: wall times and ratios, modules rewritten, JIT seconds, a table row;
# ok lines for identical losses and weights, the prepared run compiling
# nothing, and the goals (cold <= 1.3x native, prepared <= 1.05x native).
set -u
PART=firstrun
. "$(dirname "$0")/ml/env.sh"
# what users run: the tools on the default sample of launches (run.sh sets
# every launch for the other parts)
unset GPUEXT_LAUNCH_SAMPLE
ok() { echo "ok - firstrun: $*" | tee -a "$L/summary.txt"; }
nok() { echo "not ok - firstrun: $*" | tee -a "$L/summary.txt"; }
bench() { echo "bench: firstrun: $*" | tee -a "$L/summary.txt"; }
G=$B/bin/gpuext
PY=${FIRSTRUN_PY:-$ROOT/tests/gpu/ml/firstrun_train.py}
T0=$(date +%s)
left() { echo $((270 - ($(date +%s) - T0))); } # seconds of the part's 300 left, with a margin
lim() { local l; l=$(left); [ "$l" -gt "$1" ] && l=$1; [ "$l" -lt 1 ] && l=1; echo "$l"; } # a run's limit, at most $1
[ -x "$G" ] && [ -x "$RUN" ] && [ -e "$B/lib/libcuda.so.1" ] || { nok "build/ has no gpuext, gpuext-run or shim (run make)"; exit 1; }
python3 -c 'import torch, triton' 2>/dev/null || { nok "python3 with torch and triton is needed"; exit 1; }
ls "$B"/cache/*.gxpol >/dev/null 2>&1 || nok "no policy JIT cache in $B/cache: run 'make gpu-prep' before carrying build/"

# one NAME LIMIT CMD...: every cache fresh; wall ms in $L/NAME.wall_ms.
# gpuext's caches are per configuration (under $W/NAME: prepare reads the
# cold run's); Triton's, Inductor's and the driver's are emptied at one path,
# as on a fresh node: Triton's PTX names Inductor's source files by path
# (-lineinfo), so another path is other PTX and a prepared cache would miss
# (GPU run 91: 5 of 129 hits with a folder per configuration).
one() {
	local name=$1 lim=$2 c=$W/$1 f=$W/fresh
	shift 2
	mkdir -p "$c/gx" "$c/shm" && chmod 700 "$c/gx" "$c/shm"
	cp "$B"/cache/*.gxpol "$c/gx/" 2>/dev/null
	rm -rf "$f" && mkdir -p "$f"
	local t0 t1 rc
	t0=$(date +%s%N)
	env TRITON_CACHE_DIR="$f/triton" TORCHINDUCTOR_CACHE_DIR="$f/inductor" CUDA_CACHE_PATH="$f/nv" \
		GPUEXT_CACHE_DIR="$c/gx" GPUEXT_SHM_DIR="$c/shm" GPUEXT_SHARED_CACHE_DIR="${SHARED:-$W/none}" \
		timeout -k 5 "$lim" "$@" >"$L/$name.out" 2>"$L/$name.err"
	rc=$?
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000)) >"$L/$name.wall_ms"
	return $rc
}
wall() { cat "$L/$1.wall_ms" 2>/dev/null || echo 0; }
result() { grep -E '^(step|checksum) ' "$L/$1.out" 2>/dev/null; }
steady() { sed -n 's/^steady_ms //p' "$L/$1.out" 2>/dev/null | head -1; }
# rewritten in place (every launch instrumented) or, under the default launch
# sample, loaded as it came with its instrumented copy beside it
rewritten() { grep -c '^gpuext: \(module\|library\) [0-9]* ([A-Za-z]*): \(rewritten\|loaded as it came, its instrumented copy\)' "$L/$1.err"; }
passed() { grep -c '^gpuext: module [0-9]* ([A-Za-z]*): passed through' "$L/$1.err"; }
jit_s() { sed -n 's/.*cubin: JIT-compiled in \([0-9.]*\) ms.*/\1/p' "$L/$1.err" | awk '{ s += $1 } END { printf "%.2f", s / 1000 }'; }
cached() { grep -c 'cubin: cached' "$L/$1.err"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }'; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a > 0 && a <= b) }'; }

if ! one native 100 python3 "$PY" || ! result native | grep -q '^checksum'; then
	nok "the training script runs natively: $(tail -3 "$L/native.err" | tr '\n' ' ')"
	exit 1
fi
ref=$(result native | md5sum)
same() {
	local rc=$1 name=$2 what=$3
	if [ "$rc" = 0 ] && [ "$(result "$name" | md5sum)" = "$ref" ]; then
		ok "$what: exit 0, losses and final weights identical to native ($(result "$name" | tail -1))"
	else
		nok "$what: rc $rc, results differ from native: $(result "$name" | tail -2 | tr '\n' ' ') $(grep -v '^gpuext: module' "$L/$name.err" | tail -3 | tr '\n' ' ')"
	fi
}

one cold "$(lim 120)" "$RUN" -v --tool threadhist -- python3 "$PY"
same $? cold "threadhist, all caches cold"
n=$(rewritten cold) np=$(passed cold) js=$(jit_s cold)
# each rewritten module loaded as a cubin: JIT-compiled at its load and
# stored, or, a module the run loads again (the same PTX), the stored one
[ "$n" -gt 0 ] && [ "$(grep -c 'cubin: \(JIT-compiled\|cached\)' "$L/cold.err")" = "$n" ] &&
	ok "threadhist cold: $n modules rewritten, each a cubin JIT-compiled at its first load and stored ($(grep -c 'cubin: cached' "$L/cold.err") loaded again from the store; $np passed through)" ||
	nok "threadhist cold: $n rewritten, $(grep -c 'cubin: \(JIT-compiled\|cached\)' "$L/cold.err") as cubins: $(grep 'gpuext: module' "$L/cold.err" | grep -v 'cubin:' | head -2 | tr '\n' ' ')"

rm -rf "$W/shared"
"$G" cache prepare --shared --cache-dir "$W/shared" --from "$W/cold/gx" >"$L/prepare.log" 2>&1 &&
	ok "gpuext cache prepare --shared --from the cold run's cache: $(cat "$L/prepare.log")" || nok "cache prepare: $(cat "$L/prepare.log")"
SHARED=$W/shared one prepared "$(lim 100)" "$RUN" -v --tool threadhist -- python3 "$PY"
same $? prepared "threadhist with the prepared shared cache (others cold)"
pn=$(rewritten prepared) pc=$(cached prepared)
[ "$pn" -gt 0 ] && [ "$pc" = "$pn" ] && ! grep -q 'cubin: JIT-compiled' "$L/prepared.err" &&
	ok "prepared: all $pn rewritten modules loaded as cubins from the shared cache, nothing JIT-compiled" ||
	nok "prepared: $pn rewritten, $pc cubins from the cache, $(grep -c 'cubin: JIT-compiled' "$L/prepared.err") JIT-compiled"

tn=$(wall native) tc=$(wall cold) tp=$(wall prepared)
rc_=$(ratio "$tc" "$tn") rp=$(ratio "$tp" "$tn")
# --jit-async (shim/async_jit.c): modules not in the cache load as they
# came, their copies compiled by worker threads; launches until a copy is
# ready run uninstrumented. The third way off the load path.
ax="" ra=""
if [ "${FIRSTRUN_ASYNC:-1}" = 1 ] && [ "$(left)" -gt $((tc / 1000 + 20)) ]; then
	one async "$(lim 120)" "$RUN" -v --jit-async --tool threadhist -- python3 "$PY"
	same $? async "threadhist --jit-async, all caches cold"
	ax=$(wall async) ra=$(ratio "$ax" "$tn")
	bench "threadhist --jit-async cold: $ax ms (${ra}x native); modules loaded as they came, copies compiled off the load path: $(grep -c 'compiling off the load path' "$L/async.err"), copies ready before exit: $(grep -c 'instrumented copy ready' "$L/async.err"), compiled on the load path: $(grep -c 'cubin: JIT-compiled' "$L/async.err"), loaded cached: $(grep -c 'cubin: cached' "$L/async.err"); $(grep 'launches:' "$L/async.err" | tail -1 | sed 's/^gpuext: //')"
fi
# --ptxas: Triton's own ptxas calls, in Inductor's parallel compile workers,
# go through gpuext-ptxas and compile the hooks in; the shim loads those
# cubins as they are (no JIT at load). The other way off the load path.
px="" rx=""
if [ "$(left)" -gt $((tc / 1000 + 20)) ]; then
	one ptxas "$(lim 120)" "$RUN" -v --ptxas --tool threadhist -- python3 "$PY"
	same $? ptxas "threadhist --ptxas, all caches cold"
	px=$(wall ptxas) rx=$(ratio "$px" "$tn")
	bench "threadhist --ptxas cold: $px ms (${rx}x native); modules loaded with the hooks compiled in: $(grep -c 'compiled with the hooks in' "$L/ptxas.err"), JIT-compiled at load: $(grep -c 'cubin: JIT-compiled' "$L/ptxas.err")"
fi
old="" ro=""
if [ "$(left)" -gt $((tc / 1000 + 20)) ]; then
	one oldpath "$(lim 120)" env GPUEXT_CUBIN=0 "$RUN" -v --tool threadhist -- python3 "$PY"
	same $? oldpath "threadhist cold, GPUEXT_CUBIN=0 (the rewritten PTX loaded, JIT-compiled by the driver inside the load)"
	old=$(wall oldpath) ro=$(ratio "$old" "$tn")
fi
echo "| first run, torch.compile training | native ms | threadhist cold ms (x) | modules rewritten / passed | JIT s | prepared ms (x) | --ptxas cold ms (x) | GPUEXT_CUBIN=0 cold ms (x) | step ms once compiled: native / cold / prepared / --ptxas / GPUEXT_CUBIN=0 |"
echo "| $(result native | grep -c '^step') steps | $tn | $tc (${rc_}x) | $n / $np | $js | $tp (${rp}x) | ${px:-skipped} (${rx:-}x) | ${old:-skipped} (${ro:-}x) | $(steady native) / $(steady cold) / $(steady prepared) / $(steady ptxas) / $(steady oldpath) |"
bench "cold overhead over native: $(((tc - tn) / 1000)) s, of which the driver's JIT of rewritten modules $js s (the rest: rewriting, the tool's start and report)"
bench "steady state once compiled (ms a step, median of 5x10): native $(steady native), threadhist cubins $(steady cold) (prepared $(steady prepared)), threadhist PTX load (GPUEXT_CUBIN=0) $(steady oldpath)"
bench "first run cold: native $tn ms, threadhist $tc ms (${rc_}x; $n modules rewritten, $js s of JIT), prepared cache $tp ms (${rp}x)${ax:+, --jit-async $ax ms (${ra}x)}${old:+, GPUEXT_CUBIN=0 $old ms (${ro}x)}"
le "$rc_" 1.3 && ok "goal: first run with all caches cold <= 1.3x native (${rc_}x)" || nok "goal: first run with all caches cold <= 1.3x native (${rc_}x)"
le "$rp" 1.05 && ok "goal: first run with a prepared cache <= 1.05x native (${rp}x)" || nok "goal: first run with a prepared cache <= 1.05x native (${rp}x)"
