#!/usr/bin/env bash
# gpuext attach and what a copy cannot share with its module (shim/live.c,
# shim/modstate.c, ptx-rewrite/copy_state.c; docs/attach.md "Module
# state"), against the attach fake driver:
#  - kernels that write a module variable: no copy, one line naming it;
#  - a variable the kernels only read: the copy runs; once the application
#    asks for its address (cuModuleGetGlobal) the launches run the original
#    again while attached, one line; the retired copy is unloaded at detach;
#  - the address asked for before the attach: no copy, one line;
#  - a module unloaded and loaded again while attached, the driver giving
#    the new one the old handles (FAKECUDA_REUSE_HANDLES): the unloaded
#    module's copy goes with it, the new module's launches run its own copy.
set -u
LIVE_NAME=live-state LIVE_TMP=state
. tests/attach/live_lib.sh
"$G" tools prepare --cache-dir $T/cache --sm 90 threadhist >$T/prepare.log 2>&1 ||
	echo "not ok - live-state: gpuext tools prepare: $(tail -1 $T/prepare.log)"
VADD=$PTX

# ---- kernels that write a module variable ----
PTX=tests/attach/state_rw.ptx
start w plain
"$G" attach $pid --tool threadhist >$T/w.attach 2>&1
check "a variable the kernels write: attached, no module instrumented" \
	"grep -q 'attached threadhist: 0 modules instrumented, 1 not' $T/w.attach" $T/w.attach
check "a variable the kernels write: one line naming it" \
	"[ \$(grep -c 'attach: module 1: not instrumented: its kernels may write module variable hits,' $T/w.err) = 1 ]" $T/w.err
sleep 0.1
"$G" detach $pid >$T/w.detach 2>&1
stop w $pid
check "a variable the kernels write: the launches ran the original throughout, exit 0" \
	"[ $rc = 0 ] && ! grep -q 'instrumented copy' $T/w.out && grep -q '^ok - live_app: .* 0 failed' $T/w.out" $T/w.out

# ---- a variable the kernels only read; its address asked for while attached ----
PTX=tests/attach/state_ro.ptx
start r plain GPUEXT_CUBIN=0 FAKECUDA_GLOBALS=1 LIVE_GLOBAL=scale LIVE_GLOBAL_AT=$T/r.global
"$G" attach $pid --tool threadhist >$T/r.attach 2>&1
check "a variable the kernels only read: the module gets a copy" \
	"grep -q 'attached threadhist: 1 modules instrumented' $T/r.attach" $T/r.attach
check "a variable the kernels only read: the launches run the copy" "wait_for $T/r.out 'runs the instrumented copy'" $T/r.out
touch $T/r.global
check "the application asks for its address: said once" \
	"wait_for $T/r.err 'attach: module 1: the application asked for the address of a module variable: its launches run the original'" $T/r.err
check "the application asks for its address: the launches run the original while attached" \
	"wait_for $T/r.out 'runs the original'" $T/r.out
"$G" detach $pid >$T/r.detach 2>&1
check "detach: the retired copy is unloaded" "grep -q '1 copies unloaded' $T/r.detach" $T/r.detach
stop r $pid
check "a variable the kernels only read: exit 0, no launch failed, 2 switches" \
	"[ $rc = 0 ] && grep -q '^ok - live_app: .* 0 failed' $T/r.out && grep -q 'switches 2' $T/r.out" $T/r.out

# ---- the address asked for before the attach ----
start e plain GPUEXT_CUBIN=0 FAKECUDA_GLOBALS=1 LIVE_GLOBAL=scale LIVE_GLOBAL_AT=early
"$G" attach $pid --tool threadhist >$T/e.attach 2>&1
check "the address asked for before the attach: no module instrumented" \
	"grep -q 'attached threadhist: 0 modules instrumented, 1 not' $T/e.attach" $T/e.attach
check "the address asked for before the attach: one line" \
	"[ \$(grep -c 'attach: module 1: not instrumented: the application holds the address of its module variables' $T/e.err) = 1 ]" $T/e.err
"$G" detach $pid >$T/e.detach 2>&1
stop e $pid
check "the address asked for before the attach: the original ran throughout, exit 0" \
	"[ $rc = 0 ] && ! grep -q 'instrumented copy' $T/e.out" $T/e.out

# ---- a module unloaded and loaded again while attached, its handles reused ----
PTX=$VADD
start u plain FAKECUDA_REUSE_HANDLES=1 LIVE_RELOAD=$T/u.reload LIVE_RELOAD_PTX=tests/attach/state_ro.ptx LIVE_WATCH=scale
"$G" attach $pid --tool threadhist >$T/u.attach 2>&1
check "reload: the first module's launches run its copy" "wait_for $T/u.out 'runs the instrumented copy'" $T/u.out
touch $T/u.reload
check "reload: the driver gave the new module the old handle" "wait_for $T/u.out 'loaded again (0, handle reused)'" $T/u.out
check "reload: the new module got a copy of its own" "wait_for $T/u.err 'attach: module 2: instrumented copy loaded'" $T/u.err
check "reload: its launches run the new module's copy, not the unloaded one's" \
	"wait_for $T/u.out 'runs code with scale'" $T/u.out
"$G" detach $pid >$T/u.detach 2>&1
check "reload: the unloaded module's copy was unloaded with it" \
	"grep -q 'attach: module 1: unloaded by the application, its instrumented copy with it' $T/u.err" $T/u.err
check "reload: the new module's copy unloaded at detach" "grep -q '1 copies unloaded' $T/u.detach" $T/u.detach
stop u $pid
check "reload: exit 0, no launch failed" "[ $rc = 0 ] && grep -q '^ok - live_app: .* 0 failed' $T/u.out" $T/u.out
check "no warning in any process" "! cat $T/*.err | grep -i 'warn\\|cannot\\|error'" $T/u.err
