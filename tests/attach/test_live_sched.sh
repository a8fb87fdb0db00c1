#!/usr/bin/env bash
# gpuext attach PID --sched P / gpuext detach (shim/live.c, shim/sched.c,
# blocksched/bs_launch.c's live start and stop; docs/attach.md) against the
# attach fake driver. live_app launches one kernel every 2 ms until told to
# stop and says when its launches start or stop running a persistent-worker
# copy (__gx_pw_K), with the device blocks allocated and not freed then and
# at its end:
#  - attach --sched greedy (a shipped name): the module loaded before gets a
#    copy with persistent workers, the next launches run __gx_pw_K, no launch
#    fails meanwhile; detach: the originals again, the copy unloaded,
#    blocksched's device state and hint block freed; cycles;
#  - a module loaded while attached: its copy made at its load, its
#    launches persistent;
#  - --sched with --tool in one request: one copy carries both (the hooks
#    and the persistent workers), the tool's report at detach;
#  - a library launched through its CUkernel (cudart's way) under adaptive:
#    its guard times the three arms live;
#  - a kernel the application gave 100 KiB of dynamic shared memory: the
#    limit carried over to the copy's kernel (and by blocksched to
#    __gx_pw_K), no launch fails;
#  - a tool while a schedule policy is attached, and the reverse: refused,
#    naming what is attached;
#  - an attach during a global-mode capture (the capture still ends; the
#    claiming copy is not captured: blocksched's own capture fallback);
#  - a graph instantiated before the attach keeps its kernels;
#  - detach with launches in flight; a process that exits mid-attach;
#  - refusals: a knob without '=', a process that schedules from its start
#    (GPUEXT_PERSISTENT), an unknown policy name (the command).
set -u
LIVE_NAME=live_sched LIVE_TMP=live_sched
. tests/attach/live_lib.sh

# ---- attach --sched, the switch, detach, cycles ----
start a plain LIVE_LATE=$T/a.late.now
"$G" attach $pid --sched greedy >$T/a.attach 2>&1
check "attach --sched greedy: answered, one module instrumented" "grep -q 'attached greedy: 1 modules instrumented' $T/a.attach" $T/a.attach
check "the module loaded before got a copy with persistent workers" "grep -q 'attach: module 1: instrumented copy loaded (.*1 kernels with persistent copies' $T/a.err" $T/a.err
check "blocksched started live with the policy's settings" "grep -q 'blocksched: policy greedy schedules kernels matching' $T/a.err" $T/a.err
check "the next launches run the persistent copy" "wait_for $T/a.out 'runs a persistent copy (__gx_pw_$K)'" $T/a.out
check "blocksched launched the copy as persistent workers" "wait_for $T/a.err 'blocksched: $K: launched as __gx_pw_$K, .* claim'" $T/a.err
check "ps shows the schedule policy" "'$G' ps | grep '^$pid ' | grep -q greedy"
"$G" detach $pid >$T/a.detach 2>&1
check "detach: answered, the copy unloaded" "grep -q 'detached greedy: .* 1 copies unloaded' $T/a.detach" $T/a.detach
check "detach: says what blocksched made of the launches" "grep -q 'blocksched: [1-9][0-9]* launches as claiming persistent workers, [0-9]* static, [0-9]* as they are' $T/a.detach" $T/a.detach
check "detach: no 'no report' line for a schedule policy, the run folder removed" "! grep -q 'no report' $T/a.detach && ! ls -d $T/shm/attach-$pid-* >/dev/null 2>&1" $T/a.detach
check "after detach the launches run the original again" "wait_for $T/a.out 'runs no persistent copy ($K)'" $T/a.out
for i in 1 2 3; do
	"$G" attach $pid --sched greedy >>$T/a.cycles 2>&1 &&
		wait_count $T/a.out 'runs a persistent copy' $((i + 1)) &&
		"$G" detach $pid >>$T/a.cycles 2>&1 && wait_count $T/a.out 'runs no persistent copy' $((i + 1)) ||
		echo "cycle $i failed" >>$T/a.cycles
done
check "3 more attach/detach cycles" "! grep -q 'failed\|error' $T/a.cycles && [ \$(grep -c 'copies unloaded' $T/a.cycles) = 3 ]" $T/a.cycles
"$G" attach $pid --sched greedy >$T/a.late 2>&1
wait_count $T/a.out 'runs a persistent copy' 5
n0=$(grep -c "blocksched: $K: launched as __gx_p" $T/a.err)
touch $T/a.late.now
wait_for $T/a.out 'a second module loaded (0)'
check "a module loaded while attached gets its copy with persistent workers at its load" "wait_for $T/a.err 'attach: module 2: instrumented copy loaded (.*1 kernels with persistent copies'" $T/a.err
check "... and its kernel launches as persistent workers (blocksched's first-launch line again)" "wait_count $T/a.err 'blocksched: $K: launched as __gx_p' $((n0 + 1))" $T/a.err
"$G" detach $pid >$T/a.late.detach 2>&1
check "detach after the late load: both copies unloaded" "grep -q 'detached greedy: .* 2 copies unloaded' $T/a.late.detach" $T/a.late.detach
stop a $pid
check "the application ran on: every launch succeeded, exit 0" "[ $rc = 0 ] && grep -q '^ok - live_app: .* 0 failed' $T/a.out && ! grep -q 'not ok' $T/a.out" $T/a.out
check "blocksched's device state and hint block were freed at each detach" "grep -q 'device blocks at the end 0' $T/a.out" $T/a.out
check "no warning in the process" "! grep -qi 'warn\|cannot\|error' $T/a.err" $T/a.err

# ---- --sched and --tool in one request: one copy carries both ----
start b plain
"$G" attach $pid --sched greedy --tool threadhist >$T/b.attach 2>&1
check "sched + tool: one set attached" "grep -q 'attached greedy,threadhist: 1 modules instrumented' $T/b.attach" $T/b.attach
check "sched + tool: one copy with the hooks and the persistent workers" "grep -q 'instrumented copy loaded (2 hooks, 1 kernels with persistent copies' $T/b.err" $T/b.err
check "sched + tool: launches run the persistent copy" "wait_for $T/b.out 'runs a persistent copy'" $T/b.out
check "sched + tool: of the instrumented copy" "wait_for $T/b.out 'runs the instrumented copy'" $T/b.out
"$G" attach $pid --tool launchlate >$T/b.tool 2>&1
check "a tool while a schedule policy is attached: refused, naming the set" "grep -q 'process $pid refused: greedy,threadhist is attached already' $T/b.tool" $T/b.tool
"$G" detach $pid threadhist >$T/b.one 2>&1
check "one name of the set does not detach alone" "grep -q 'was attached with greedy,threadhist as one set' $T/b.one" $T/b.one
"$G" detach $pid >$T/b.detach 2>&1
check "sched + tool: detach prints the tool's report" "grep -q 'detached greedy,threadhist' $T/b.detach && grep -q '^threadhist' $T/b.detach && ! grep -q 'no report' $T/b.detach" $T/b.detach
stop b $pid
check "sched + tool: every launch succeeded, blocks freed" "[ $rc = 0 ] && grep -q '0 failed' $T/b.out && grep -q 'device blocks at the end 0' $T/b.out" $T/b.out
start b2 plain
"$G" attach $pid --tool threadhist >$T/b2.tool 2>&1
"$G" attach $pid --sched greedy >$T/b2.sched 2>&1
check "a schedule policy while a tool is attached: refused, naming the tool" "grep -q 'process $pid refused: threadhist is attached already' $T/b2.sched" $T/b2.sched
check "the refusal says why and what to do instead" "grep -q \"adding greedy would re-merge the set and restart threadhist's counts); detach threadhist, then attach threadhist,greedy in one request\" $T/b2.sched" $T/b2.sched
"$G" detach $pid >/dev/null 2>&1
stop b2 $pid

# ---- a library launched through its CUkernel (as cudart does); adaptive's guard ----
start l library
"$G" attach $pid --sched adaptive >$T/l.attach 2>&1
check "library: attached adaptive, its copy a library with persistent workers" "grep -q 'attached adaptive: 1 modules instrumented' $T/l.attach && grep -q 'instrumented copy loaded (.*1 kernels with persistent copies' $T/l.err" $T/l.err
check "library: the CUkernel's launches run the persistent copy" "wait_for $T/l.out 'runs a persistent copy (__gx_pw_$K)'" $T/l.out
check "adaptive: its guard timed the three arms and decided" "wait_for $T/l.err 'blocksched: $K: guard: its copy .* its static copy .* as it is .*: runs'" $T/l.err
"$G" detach $pid >$T/l.detach 2>&1
check "library: detached, the copy unloaded" "grep -q 'detached adaptive: .* 1 copies unloaded' $T/l.detach" $T/l.detach
stop l $pid
check "library: every launch succeeded, blocks freed, no warning" "[ $rc = 0 ] && grep -q '0 failed' $T/l.out && grep -q 'device blocks at the end 0' $T/l.out && ! grep -qi 'warn\|cannot\|error' $T/l.err" $T/l.out

# ---- a kernel given more than 48 KiB of dynamic shared memory by the application ----
start m smem FAKECUDA_SMEM_ATTR=1
"$G" attach $pid --sched greedy --tool threadhist >$T/m.attach 2>&1
check "smem: the launches run the persistent copy" "wait_for $T/m.out 'runs a persistent copy (__gx_pw_$K)'" $T/m.out
"$G" detach $pid >$T/m.detach 2>&1
check "smem: detached" "grep -q 'detached greedy,threadhist' $T/m.detach" $T/m.detach
stop m $pid
check "smem: the limit the application set carried over to the copies: no launch failed" "[ $rc = 0 ] && grep -q '^ok - live_app: .* 0 failed' $T/m.out && ! grep -qi 'warn\|cannot' $T/m.err" $T/m.out

# ---- attach while the application captures its stream (global mode) ----
start c capture
"$G" attach $pid --sched greedy >$T/c.attach 2>&1
check "capture: attach answered" "grep -q 'attached greedy' $T/c.attach" $T/c.attach
wait_for $T/c.err 'being captured'
check "capture: the claiming copy is not captured (blocksched's fallback line)" "grep -q 'launches into a stream being captured' $T/c.err" $T/c.err
"$G" detach $pid >$T/c.detach 2>&1
check "capture: detach keeps the copy a graph may run" "grep -q 'copies used by graphs stay loaded until exit' $T/c.detach" $T/c.detach
stop c $pid
check "capture: the application's capture still ends, exit 0" "[ $rc = 0 ] && grep -q '^ok - live_app: the capture around the attach still ends' $T/c.out" $T/c.out

# ---- a graph instantiated before the attach keeps its kernels ----
start g graph
"$G" attach $pid --sched greedy >$T/g.attach 2>&1
wait_for $T/g.out 'runs a persistent copy'
sleep 0.05
"$G" detach $pid >$T/g.detach 2>&1
check "graph: its launches counted as not instrumented" "grep -q 'detached greedy: .* [1-9][0-9]* graph launches not instrumented' $T/g.detach" $T/g.detach
stop g $pid
check "graph: every graph launch succeeded" "[ $rc = 0 ] && grep -q '^ok - live_app: [0-9]* graph launches, 0 failed' $T/g.out" $T/g.out

# ---- detach with launches in flight (each keeps its stream busy 30 ms) ----
start f plain LIVE_PERIOD_US=5000 FAKECUDA_KERNEL_US=30000
"$G" attach $pid --sched greedy >$T/f.attach 2>&1
wait_for $T/f.out 'runs a persistent copy'
"$G" detach $pid >$T/f.detach 2>&1
check "in flight: detach waited for the copies' launches, then unloaded the copy" \
	"grep -q 'detached greedy: .* 1 copies unloaded' $T/f.err" $T/f.err
stop f $pid
check "in flight: the application ran on, blocks freed, exit 0" "[ $rc = 0 ] && ! grep -q 'not ok' $T/f.out && grep -q 'device blocks at the end 0' $T/f.out" $T/f.out

# ---- a process that exits while asked to attach ----
start x plain
touch $T/x.stop
timeout 30 "$G" attach $pid --sched greedy >$T/x.attach 2>&1
arc=$?
wait $pid
rc=$?
check "exit mid-attach: the command ends (attached, or 'exited before answering')" \
	"[ $arc != 124 ] && grep -q 'attached greedy\|exited before answering\|no such process\|does not run under' $T/x.attach" $T/x.attach
check "exit mid-attach: the application exits 0" "[ $rc = 0 ]" $T/x.err
# ... and one that exits while attached
start y plain
"$G" attach $pid --sched greedy >$T/y.attach 2>&1
wait_for $T/y.out 'runs a persistent copy'
stop y $pid
check "exit while attached: the application exits 0, every launch succeeded" "[ $rc = 0 ] && grep -q '0 failed' $T/y.out" $T/y.out

# ---- refusals ----
start r plain
"$G" attach $pid --sched greedy,max_steals >$T/r1 2>&1
check "a knob without '=': refused with the reason" "grep -q \"process $pid refused: --sched .*a knob without '='\" $T/r1" $T/r1
"$G" attach $pid --sched nosuchpolicy >$T/r2 2>&1
check "an unknown policy name: the command refuses it" "grep -q 'nosuchpolicy' $T/r2 && ! grep -q attached $T/r2" $T/r2
stop r $pid
check "refused: the application ran on as it is" "! grep -q 'persistent copy (' $T/r.out && grep -q '0 failed' $T/r.out" $T/r.out
start p plain GPUEXT_PERSISTENT=static
"$G" attach $pid --sched greedy >$T/p1 2>&1
check "blocks scheduled from its start: --sched refused" "grep -q 'process $pid refused: blocks are scheduled from its start' $T/p1" $T/p1
stop p $pid
check "nothing left in the control folder" "[ -z \"\$(ls $T/ctl)\" ]"
