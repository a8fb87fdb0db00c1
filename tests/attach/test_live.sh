#!/usr/bin/env bash
# gpuext attach / detach against running processes (shim/live.c, cli/attach.c;
# docs/attach.md), with the attach fake driver (device memory = host
# memory; fake_last_run_has tells whether a launch ran an instrumented
# copy). live_app launches one kernel every 2 ms until told to stop:
#  - attach threadhist: its module (loaded before) gets an instrumented
#    copy, the next launches run it, no launch fails meanwhile; detach: back
#    to the original, the copy unloaded, the report printed; again (cycles);
#  - an attach during a global-mode stream capture: the capture still ends,
#    the copy stays loaded (a graph may run it);
#  - detach with launches in flight (each launch keeps its stream busy);
#  - a process that exits while asked to attach;
#  - refusals, one line in the process log and one from the command: an
#    unknown tool, no JIT library and no cache entry, a policy the verifier
#    refuses, a second attach; another user's process; a request file of
#    another user.
set -u
# these checks look at the instrumented module itself, so every launch runs
# it (tools default to a sample of launches: test_launch_sample.sh)
export GPUEXT_LAUNCH_SAMPLE=1
LIVE_NAME=live LIVE_TMP=live
. tests/attach/live_lib.sh
"$G" tools prepare --cache-dir $T/cache --sm 90 threadhist launchlate >$T/prepare.log 2>&1 ||
	echo "not ok - live: gpuext tools prepare: $(tail -1 $T/prepare.log)"

# ---- attach, the switch, detach, cycles ----
start a plain
check "ps lists the process" "'$G' ps | grep -q '^$pid '" 
"$G" attach $pid --tool threadhist >$T/a.attach 2>&1
check "attach threadhist: answered, one module instrumented" "grep -q 'attached threadhist: 1 modules instrumented' $T/a.attach" $T/a.attach
check "the module loaded before the attach got an instrumented copy" "grep -q 'attach: module 1: instrumented copy loaded' $T/a.err" $T/a.err
check "the next launches run the copy" "wait_for $T/a.out 'runs the instrumented copy'" $T/a.out
check "ps shows what is attached" "'$G' ps | grep '^$pid ' | grep -q threadhist"
"$G" --json ps >$T/ps.json
check "ps --json is valid JSON" "python3 -m json.tool $T/ps.json >/dev/null"
"$G" attach $pid --tool launchlate >$T/a.twice 2>&1
check "a second attach is refused (command)" "grep -q 'process $pid refused: threadhist is attached already' $T/a.twice" $T/a.twice
check "a second attach is refused (one line in the process)" "[ \$(grep -c 'attach: refused: threadhist is attached already' $T/a.err) = 1 ]" $T/a.err
"$G" detach $pid >$T/a.detach 2>&1
check "detach: answered, the copy unloaded" "grep -q 'detached threadhist: .* 1 copies unloaded' $T/a.detach" $T/a.detach
check "detach: the threadhist report is printed" "grep -q 'threadhist' $T/a.detach && ! grep -q 'no report' $T/a.detach" $T/a.detach
check "detach: the run folder is removed" "! ls -d $T/shm/attach-$pid-* >/dev/null 2>&1"
check "after detach the launches run the original again" "wait_for $T/a.out 'runs the original'" $T/a.out
for i in 1 2 3 4 5; do
	# each switch is seen by a launch before the next (the count below)
	"$G" attach $pid --tool threadhist >>$T/a.cycles 2>&1 &&
		wait_count $T/a.out 'runs the instrumented copy' $((i + 1)) &&
		"$G" detach $pid >>$T/a.cycles 2>&1 && wait_count $T/a.out 'runs the original' $((i + 1)) ||
		echo "cycle $i failed" >>$T/a.cycles
done
check "5 more attach/detach cycles" "! grep -q 'failed\|error' $T/a.cycles && [ \$(grep -c 'copies unloaded' $T/a.cycles) = 5 ]" $T/a.cycles
check "the second attach of the same tool reuses its description (no cache read)" "[ \$(grep -c 'policy threadhist: from the JIT cache' $T/a.err) = 1 ]" $T/a.err
stop a $pid
check "the application ran on: every launch succeeded, exit 0" "[ $rc = 0 ] && grep -q '^ok - live_app: .* 0 failed' $T/a.out && ! grep -q 'not ok' $T/a.out" $T/a.out
check "switches: 6 attaches and 6 detaches seen by the launches" "grep -q 'switches 12' $T/a.out" $T/a.out
check "no warning in the process" "! grep -v 'refused' $T/a.err | grep -qi 'warn\|cannot\|error'" $T/a.err
check "the status file is removed at exit" "[ ! -e $T/ctl/$pid.ps ]"

# ---- attach while the application captures its stream (global mode) ----
start c capture
"$G" attach $pid --tool threadhist >$T/c.attach 2>&1
check "capture: attach answered" "grep -q 'attached threadhist' $T/c.attach" $T/c.attach
sleep 0.1
"$G" detach $pid >$T/c.detach 2>&1
check "capture: detach keeps the copy a graph may run" "grep -q 'copies used by graphs stay loaded until exit' $T/c.detach" $T/c.detach
stop c $pid
check "capture: the application's capture still ends, exit 0" "[ $rc = 0 ] && grep -q '^ok - live_app: the capture around the attach still ends' $T/c.out" $T/c.out

# ---- detach with launches in flight (each keeps its stream busy 30 ms) ----
start f plain LIVE_PERIOD_US=5000 FAKECUDA_KERNEL_US=30000
"$G" attach $pid --tool threadhist >$T/f.attach 2>&1
wait_for $T/f.out 'runs the instrumented copy'
"$G" --json detach $pid >$T/f.detach 2>&1
check "in flight: detach waited for the instrumented launches, then unloaded the copy" \
	"grep -q 'detached threadhist' $T/f.err && grep -q '1 copies unloaded' $T/f.err" $T/f.err
stop f $pid
check "in flight: the application ran on, exit 0" "[ $rc = 0 ] && ! grep -q 'not ok' $T/f.out" $T/f.out

# ---- a process that exits while asked to attach ----
start x plain
touch $T/x.stop
timeout 30 "$G" attach $pid --tool threadhist >$T/x.attach 2>&1
arc=$?
wait $pid
rc=$?
check "exit mid-attach: the command ends (attached, or 'exited before answering')" \
	"[ $arc != 124 ] && grep -q 'attached threadhist\|exited before answering\|no such process\|does not run under' $T/x.attach" $T/x.attach
check "exit mid-attach: the application exits 0" "[ $rc = 0 ]" $T/x.err

# ---- refusals: one line in the process, one from the command ----
start r plain
"$G" attach $pid --tool nosuchtool >$T/r1 2>&1
check "unknown tool: refused by the command's output" "grep -q 'process $pid refused: .*nosuchtool' $T/r1" $T/r1
check "unknown tool: one 'attach: refused' line in the process" "[ \$(grep -c 'attach: refused' $T/r.err) = 1 ]" $T/r.err
stop r $pid
start n plain GPUEXT_JITLIB=/nonexistent/libgxjit.so GPUEXT_CACHE_DIR=$T/empty-cache
"$G" attach $pid --tool launchlate >$T/n1 2>&1
check "no JIT and no cache entry: refused with the reason" "grep -q 'process $pid refused: .*not in the JIT cache' $T/n1" $T/n1
check "no JIT and no cache entry: one 'attach: refused' line in the process" "[ \$(grep -c 'attach: refused' $T/n.err) = 1 ]" $T/n.err
stop n $pid
V=$B/tests/devbpf/verifier/cfg.bpf.o
if [ -f $V ]; then
	start v plain
	"$G" attach $pid --policy $V >$T/v1 2>&1
	check "a policy the verifier refuses: refused, the verifier's reason in the output" "grep -q 'process $pid refused: .*insn' $T/v1" $T/v1
	check "a policy the verifier refuses: the application runs on uninstrumented" "! grep -q 'instrumented copy' $T/v.out"
	stop v $pid
else
	echo "not ok - live: the verifier corpus object $V is missing"
fi
# another user: the command refuses (a process of root, the command as nobody)
start u plain
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups env GPUEXT_CTL_DIR=$T/ctl "$G" attach $pid --tool threadhist 2>&1)
check "another user's process: refused by the command" "[[ \"\$out\" == *'belongs to uid 0: only its user'* ]]"
# a request file not of this user (or root) is not read
printf 'gpuext-ctl 1\nseq 1\nop attach\ntool threadhist\ndir %s\n' $T/shm >$T/ctl/.x && chown 65534 $T/ctl/.x && mv $T/ctl/.x $T/ctl/$pid.req
wait_for $T/u.err "request .*refused: owned by uid 65534"
check "a request file of another user: refused with one line, not answered" "grep -q 'attach: request .*$pid.req refused: owned by uid 65534' $T/u.err && ! ls $T/ctl/$pid.1.resp >/dev/null 2>&1" $T/u.err
stop u $pid
check "nothing left in the control folder" "[ -z \"\$(ls $T/ctl)\" ]"
