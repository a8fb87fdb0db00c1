#!/usr/bin/env bash
# GPUEXT_JIT_ASYNC=1 (shim/async_jit.c, docs/cache.md): the driver's JIT of
# rewritten modules off the load path, against the attach fake driver
# with a JIT that takes FAKECUDA_LINK_US:
#  - cold module cache: the load returns before the JIT is done, the first
#    launches run the original, then the copy (one line each); no launch
#    fails; the cubin is stored;
#  - warm: the cubin is loaded on the load path, the first launch runs it;
#  - a cubin carrying its PTX (Triton's): the same as a PTX module;
#  - without the switch the same cold load waits for the JIT (the A/B);
#  - a load with a JIT option that changes the code, and a module whose
#    kernels write a variable, compile on the load path;
#  - a read-only variable's address asked for after the copy is ready: the
#    launches run the original again;
#  - a module unloaded before its copy is ready (its handle reused by the
#    next load): the copy is dropped, the next module gets its own;
#  - an exit while a JIT runs: the JIT finishes, exit 0.
set -u
# these checks look at the instrumented module itself, so every launch runs
# it (tools default to a sample of launches: test_launch_sample.sh)
export GPUEXT_LAUNCH_SAMPLE=1
LIVE_NAME=jit-async LIVE_TMP=async
. tests/attach/live_lib.sh
"$G" tools prepare --cache-dir $T/cache --sm 90 threadhist >$T/prepare.log 2>&1 ||
	echo "not ok - jit-async: gpuext tools prepare: $(tail -1 $T/prepare.log)"
VADD=$PTX
ms() { sed -n 's/.*module loaded in \([0-9]*\) ms.*/\1/p' "$1" | head -1; }
A=(GPUEXT_TOOL=threadhist GPUEXT_JIT_ASYNC=1 GPUEXT_JIT_WORKERS=2 FAKECUDA_LINK_US=400000)

# ---- cold, then warm ----
start c plain "${A[@]}"
check "cold: the load says its copy compiles off the load path" \
	"grep -q 'module 1 (cuModuleLoadData): loaded as it came, its instrumented copy (.* hooks.*) compiling off the load path' $T/c.err" $T/c.err
check "cold: the load returned before the JIT was done (< 300 ms)" "[ \"\$(ms $T/c.out)\" -lt 300 ]" $T/c.out
check "cold: the copy is ready once JIT-compiled, and stored" \
	"wait_for $T/c.err 'module 1: instrumented copy ready .* ms after the load (.* hooks; cubin JIT-compiled in .* ms, stored)'" $T/c.err
check "cold: launches before it ran the original, the next ones run the copy" \
	"wait_for $T/c.out 'launch [0-9]* runs the instrumented copy' && ! grep -q 'launch 1 runs the instrumented copy' $T/c.out" $T/c.out
stop c $pid
check "cold: exit 0, no launch failed, one switch" \
	"[ $rc = 0 ] && grep -q '^ok - live_app: .* 0 failed' $T/c.out && grep -q 'switches 1 ' $T/c.out" $T/c.out
start w plain "${A[@]}"
check "warm: the cubin is loaded on the load path (cached)" "grep -q 'module 1 (cuModuleLoadData): rewritten (.*cubin: cached' $T/w.err" $T/w.err
check "warm: the first launch runs the instrumented module" "wait_for $T/w.out 'launch 1 runs the instrumented copy'" $T/w.out
stop w $pid
check "warm: exit 0" "[ $rc = 0 ] && ! grep -q 'not ok' $T/w.out" $T/w.out

# ---- a cubin carrying its PTX (ptxas -lineinfo: Triton's, Inductor's) ----
PTXAS=${PTXAS:-/usr/local/cuda/bin/ptxas}
if "$PTXAS" -arch=sm_90 -lineinfo "$VADD" -o $T/li.cubin; then
	PTX=$T/li.cubin
	start l plain "${A[@]}" GPUEXT_CACHE_DIR=$T/cache-li
	check "a cubin carrying its PTX: loaded as it came, its copy compiled off the load path" \
		"grep -q 'module 1 (cuModuleLoadData): loaded as it came, its instrumented copy' $T/l.err && [ \"\$(ms $T/l.out)\" -lt 300 ]" $T/l.err
	check "a cubin carrying its PTX: its copy runs once ready" "wait_for $T/l.out 'runs the instrumented copy'" $T/l.out
	stop l $pid
	PTX=$VADD
else
	echo "not ok - jit-async: ptxas could not build the -lineinfo cubin"
fi

# ---- the A/B: the same cold load without the switch waits for the JIT ----
start s plain GPUEXT_TOOL=threadhist FAKECUDA_LINK_US=400000 GPUEXT_CACHE_DIR=$T/cache-sync
check "without GPUEXT_JIT_ASYNC a cold load waits for the JIT (>= 400 ms)" "[ \"\$(ms $T/s.out)\" -ge 400 ]" $T/s.out
stop s $pid

# ---- a load with a JIT option that changes the code: compiled on the load path, with it ----
start o plain "${A[@]}" GPUEXT_CACHE_DIR=$T/cache-opt LIVE_JITOPT=1
check "a JIT option (max registers): rewritten on the load path, not handed to a worker" \
	"grep -q 'module 1 (cuModuleLoadDataEx): rewritten' $T/o.err && ! grep -q 'off the load path' $T/o.err" $T/o.err
stop o $pid

# ---- a module whose kernels write a variable: compiled on the load path ----
PTX=tests/attach/state_rw.ptx
start r plain "${A[@]}" GPUEXT_CACHE_DIR=$T/cache-rw
check "a variable the kernels write: rewritten on the load path" \
	"grep -q 'module 1 (cuModuleLoadData): rewritten (.*cubin: JIT-compiled' $T/r.err && ! grep -q 'off the load path' $T/r.err" $T/r.err
check "a variable the kernels write: the first launch runs the instrumented module" "wait_for $T/r.out 'launch 1 runs the instrumented copy'" $T/r.out
stop r $pid

# ---- a read-only variable's address asked for once the copy runs ----
PTX=tests/attach/state_ro.ptx
start g plain "${A[@]}" GPUEXT_CACHE_DIR=$T/cache-ro GPUEXT_CUBIN=0 FAKECUDA_GLOBALS=1 LIVE_GLOBAL=scale LIVE_GLOBAL_AT=$T/g.global
check "read-only variable: the copy (PTX, GPUEXT_CUBIN=0) runs" "wait_for $T/g.out 'runs the instrumented copy'" $T/g.out
touch $T/g.global
check "read-only variable: its address asked for, the launches run the original again" \
	"wait_for $T/g.out 'runs the original' && grep -q 'module 1: the application asked for the address of a module variable' $T/g.err" $T/g.err
stop g $pid
check "read-only variable: exit 0, no launch failed" "[ $rc = 0 ] && grep -q '^ok - live_app: .* 0 failed' $T/g.out" $T/g.out

# ---- unloaded before its copy is ready; the next load reuses the handle ----
PTX=$VADD
touch $T/u.reload
start u plain "${A[@]}" GPUEXT_CACHE_DIR=$T/cache-u FAKECUDA_REUSE_HANDLES=1 LIVE_RELOAD=$T/u.reload \
	LIVE_RELOAD_PTX=tests/attach/state_ro.ptx LIVE_WATCH=scale
check "unloaded early: the driver reused the handle" "wait_for $T/u.out 'loaded again (0, handle reused)'" $T/u.out
check "unloaded early: the first module's copy is dropped" \
	"wait_for $T/u.err 'module 1: unloaded before its instrumented copy was ready'" $T/u.err
check "unloaded early: the new module's launches run its own copy" "wait_for $T/u.out 'runs code with scale'" $T/u.out
stop u $pid
check "unloaded early: exit 0, no launch failed" "[ $rc = 0 ] && grep -q '^ok - live_app: .* 0 failed' $T/u.out" $T/u.out

# ---- exit while a JIT runs ----
start x plain "${A[@]}" GPUEXT_CACHE_DIR=$T/cache-x FAKECUDA_LINK_US=700000
stop x $pid
check "exit during a JIT: exit 0 (the JIT finished first)" "[ $rc = 0 ] && ! grep -q 'not ok' $T/x.out" $T/x.err
check "no warning in any process" "! cat $T/*.err | grep -i 'warn\\|cannot\\|error'" $T/x.err
