#!/usr/bin/env bash
# gpuext attach / detach of the other kinds, and of several things at once
# (shim/live.c, shim/hostpolicy.c; docs/attach.md), with the attach fake
# driver and live_app (tests/attach/live_lib.sh):
#  - a host (struct_ops) policy attached live next to a device tool, a
#    second host policy added to it, one detached by name while the others
#    keep running, a device tool of another set refused, `gpuext ps` showing
#    each, detach --all; no launch fails meanwhile;
#  - the host kind with a launch during the attach, an attach during a
#    global-mode capture, a detach with launches in flight, a process that
#    exits while asked to attach, a request refused whole (nothing left),
#    a process with host policies from its start;
#  - a sched policy with task_launch attached live makes the process a tenant;
#  - a graph instantiated before the attach: one line for its exec, its
#    launches counted in the detach message and in `gpuext ps`.
set -u
# these checks look at the instrumented module itself, so every launch runs
# it (tools default to a sample of launches: test_launch_sample.sh)
export GPUEXT_LAUNCH_SAMPLE=1
LIVE_NAME="live kinds" LIVE_TMP=livek
. tests/attach/live_lib.sh
MEM=$B/hostbpf/gx_seq.bpf.o   # a mem policy
SCHED=$B/hostbpf/gx_prio.bpf.o # a sched policy
TEN=$B/hostbpf/gx_lcfirst.bpf.o # a sched policy with task_launch
"$G" tools prepare --cache-dir $T/cache --sm 90 threadhist launchlate >$T/prepare.log 2>&1 ||
	echo "not ok - live kinds: gpuext tools prepare: $(tail -1 $T/prepare.log)"
ps_of() { "$G" ps | awk -v p="$1" '$1 == p { print $5 }'; }

# ---- several at once: a device tool and host policies ----
start a plain
"$G" attach $pid --policy $MEM >$T/a1 2>&1
check "a host policy attaches live" "grep -q 'attached host policies seq' $T/a1" $T/a1
check "ps shows it" "[ \"\$(ps_of $pid)\" = seq ]"
"$G" --json ps >$T/ps.json
check "ps --json: valid, the host policy in its own field" "python3 -c 'import json,sys; d=[p for p in json.load(open(sys.argv[1])) if p[\"pid\"]==$pid]; sys.exit(not (d and d[0][\"host_policies\"]==\"seq\"))' $T/ps.json" $T/ps.json
"$G" attach $pid --tool threadhist >$T/a2 2>&1
check "a device tool attaches next to it" "grep -q 'attached threadhist: 1 modules instrumented' $T/a2" $T/a2
check "the next launches run the copy" "wait_for $T/a.out 'runs the instrumented copy'" $T/a.out
"$G" attach $pid --policy $SCHED >$T/a3 2>&1
check "a second host policy (sched) joins the first" "grep -q 'attached host policies seq,prio' $T/a3" $T/a3
check "ps shows all three" "[ \"\$(ps_of $pid)\" = threadhist,seq,prio ]"
"$G" attach $pid --tool launchlate >$T/a4 2>&1
check "a device tool of another set is refused (one device set)" "grep -q 'refused: threadhist is attached already: one device set per process' $T/a4" $T/a4
"$G" attach $pid --policy $MEM >$T/a5 2>&1
check "a second mem policy is refused" "grep -q 'refused: .*gx_seq.bpf.o: a host policy of its kind' $T/a5" $T/a5
"$G" detach $pid nosuch >$T/d0 2>&1
check "detach of a name not attached: refused, naming what is" "grep -q 'nosuch is not attached (attached: threadhist,seq,prio)' $T/d0" $T/d0
"$G" detach $pid seq >$T/d1 2>&1
check "detach seq: just that one, with its summary" "grep -q 'detached host policy seq: .*policy .seq.' $T/d1 && ! grep -q 'threadhist' $T/d1" $T/d1
check "the others keep running (ps)" "[ \"\$(ps_of $pid)\" = threadhist,prio ]"
sleep 0.1
check "the device tool kept instrumenting (no switch back)" "! grep -q 'runs the original' $T/a.out" $T/a.out
"$G" detach $pid threadhist >$T/d2 2>&1
check "detach threadhist: its report, prio stays" "grep -q 'detached threadhist' $T/d2 && grep -q threadhist $T/d2 && ! grep -q 'no report' $T/d2 && [ \"\$(ps_of $pid)\" = prio ]" $T/d2
check "after it the launches run the original" "wait_for $T/a.out 'runs the original'" $T/a.out
"$G" detach $pid --all >$T/d3 2>&1
check "detach --all: the last host policy" "grep -q 'detached host policy prio' $T/d3 && [ \"\$(ps_of $pid)\" = - ]" $T/d3
check "no run folder left" "! ls -d $T/shm/attach-* >/dev/null 2>&1"
stop a $pid
check "the application ran on: every launch succeeded, exit 0" "[ $rc = 0 ] && grep -q '^ok - live_app: .* 0 failed' $T/a.out" $T/a.out
check "no warning in the process" "! grep -v 'refused' $T/a.err | grep -qi 'warn\|cannot\|error'" $T/a.err

# ---- one request with both kinds, detached one at a time; exit while attached ----
start p plain
"$G" attach $pid --policy $MEM --tool threadhist >$T/p1 2>&1
check "one request, both kinds: attached" "grep -q 'attached threadhist: 1 modules instrumented.*host policies seq' $T/p1" $T/p1
check "the host policy's maps are in host/ of the run folder" "ls $T/shm/attach-$pid-*/host/ | grep -q ." $T/p1
"$G" detach $pid threadhist >$T/p2 2>&1
check "the device tool detached alone: its report; the host maps stay" "grep -q 'detached threadhist' $T/p2 && ! grep -q 'no report' $T/p2 && ls $T/shm/attach-$pid-*/host/ | grep -q . && [ \"\$(ps_of $pid)\" = seq ]" $T/p2
"$G" detach $pid seq >$T/p3 2>&1
check "then the host policy: the run folder is gone" "grep -q 'detached host policy seq' $T/p3 && ! ls -d $T/shm/attach-* >/dev/null 2>&1" $T/p3
"$G" attach $pid --policy $SCHED --tool threadhist >$T/p4 2>&1
wait_count $T/p.out 'runs the instrumented copy' 2
stop p $pid
check "exit while both kinds are attached: exit 0, the executor's summary at exit, the status file removed" \
	"[ $rc = 0 ] && grep -q 'hostpolicy: .*streams created under .prio.' $T/p.err && [ ! -e $T/ctl/$pid.ps ]" $T/p.err
rm -rf $T/shm/attach-*

# ---- a sched policy with task_launch: the process becomes a tenant ----
start t plain
"$G" attach $pid --policy $TEN >$T/t1 2>&1
check "tenant: the sched policy attaches" "grep -q 'attached host policies lcfirst' $T/t1" $T/t1
check "tenant: the next launch asks its task_launch" "wait_for $T/t.err 'tenant: .*policy task_launch'" $T/t.err
check "tenant: the table is the user's, not the run folder" "ls $T/shm | grep -q tenants && ! ls $T/shm/attach-* 2>/dev/null | grep -q tenants"
"$G" detach $pid >$T/t2 2>&1
check "tenant: detach" "grep -q 'detached host policy lcfirst' $T/t2" $T/t2
stop t $pid
check "tenant: the application ran on, exit 0" "[ $rc = 0 ] && grep -q '^ok - live_app: .* 0 failed' $T/t.out" $T/t.out

# ---- the host kind: capture, launches in flight, exit mid-attach ----
start c capture
"$G" attach $pid --policy $MEM >$T/c1 2>&1
check "capture: a host policy attaches during a global-mode capture" "grep -q 'attached host policies seq' $T/c1" $T/c1
"$G" detach $pid >$T/c2 2>&1
stop c $pid
check "capture: the application's capture still ends, exit 0" "[ $rc = 0 ] && grep -q '^ok - live_app: the capture around the attach still ends' $T/c.out && grep -q 'detached host policy' $T/c2" $T/c.out
start f plain LIVE_PERIOD_US=5000 FAKECUDA_KERNEL_US=30000
"$G" attach $pid --policy $MEM --tool threadhist >$T/f1 2>&1
wait_for $T/f.out 'runs the instrumented copy'
"$G" detach $pid >$T/f2 2>&1
check "in flight: both kinds in one request, detached together, the copy unloaded" "grep -q 'attached threadhist: 1 modules instrumented.*host policies seq' $T/f1 && grep -q '1 copies unloaded; detached host policy seq' $T/f2" $T/f2
stop f $pid
check "in flight: the application ran on, exit 0" "[ $rc = 0 ] && ! grep -q 'not ok' $T/f.out" $T/f.out
start x plain
touch $T/x.stop
timeout 30 "$G" attach $pid --policy $MEM >$T/x1 2>&1
arc=$?
wait $pid
rc=$?
check "exit mid-attach: the command ends" "[ $arc != 124 ] && grep -q 'attached host\|exited before answering\|no such process\|does not run under' $T/x1" $T/x1
check "exit mid-attach: the application exits 0" "[ $rc = 0 ]" $T/x.err

# ---- refusals ----
start r plain
"$G" attach $pid --policy $MEM --tool nosuchtool >$T/r1 2>&1
check "a request refused whole: the host policy it brought is gone again" "grep -q 'refused: .*nosuchtool' $T/r1 && [ \"\$(ps_of $pid)\" = - ] && ! ls -d $T/shm/attach-$pid-* >/dev/null 2>&1" $T/r1
"$G" attach $pid --policy $SCHED >$T/r6 2>&1
"$G" attach $pid --policy $MEM --policy $B/hostbpf/gx_fifo.bpf.o >$T/r7 2>&1
check "two mem policies in one request: refused whole, the one that loaded goes again" "grep -q 'refused: .*gx_fifo.bpf.o: a host policy of its kind' $T/r7 && [ \"\$(ps_of $pid)\" = prio ]" $T/r7
"$G" detach $pid prio >$T/r8 2>&1
check "and the policy attached before it stays (then detached): no folder left" "grep -q 'detached host policy prio' $T/r8 && ! ls -d $T/shm/attach-$pid-* >/dev/null 2>&1" $T/r8
"$G" attach $pid --tool threadhist,launchlate >$T/r3 2>&1
"$G" detach $pid threadhist >$T/r4 2>&1
check "one tool of a device set of two: refused, naming the set" "grep -q 'threadhist was attached with threadhist,launchlate as one set' $T/r4" $T/r4
"$G" detach $pid threadhist,launchlate >$T/r5 2>&1
check "the set detaches by its names" "grep -q 'detached threadhist,launchlate' $T/r5" $T/r5
"$G" attach $pid --sched $SCHED >$T/r2 2>&1
check "--sched with a host policy's object: refused with the reason" "grep -q 'refused: .*gx_prio: not a loadable policy object' $T/r2" $T/r2
stop r $pid
start s plain GPUEXT_POLICY=$MEM
"$G" attach $pid --policy $SCHED >$T/s1 2>&1
check "host policies from the start: a live one is refused" "grep -q 'host policies were attached at its start' $T/s1" $T/s1
stop s $pid

# ---- a graph instantiated before the attach ----
start g graph
"$G" attach $pid --tool threadhist >$T/g1 2>&1
wait_for $T/g.err 'graph exec .*instantiated before attach'
sleep 0.1
check "graph: one line for the exec, with its kernel nodes" "[ \$(grep -c 'graph exec 0x[0-9a-f]*: instantiated before attach, its 2 kernel nodes run uninstrumented' $T/g.err) = 1 ]" $T/g.err
ps_graphs() { awk '/^graph_launches_uninstrumented/ { exit !($2 > 0) }' $T/ctl/$pid.ps; }
for _ in $(seq 100); do ps_graphs && break; sleep 0.05; done # rewritten at most once a second
check "graph: ps counts its launches" "ps_graphs"
"$G" detach $pid >$T/g2 2>&1
check "graph: the detach message counts the graph launches not instrumented" "grep -qE 'detached threadhist: .*; [1-9][0-9]* graph launches not instrumented' $T/g2" $T/g2
stop g $pid
check "graph: the graph ran on, exit 0" "[ $rc = 0 ] && grep -q '^ok - live_app: [0-9]* graph launches, 0 failed' $T/g.out" $T/g.out
check "nothing left in the control folder" "[ -z \"\$(ls $T/ctl)\" ]"
