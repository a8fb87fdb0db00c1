#!/usr/bin/env bash
# GPUEXT_LAUNCH_SAMPLE=N[,first=K] (shim/launch_sample.c, docs/tools.md): a
# tool on each kernel's first K launches, then on one launch in N, the
# others running the application's own kernel — against the attach fake
# driver:
#  - the module loads as it came with its instrumented copy beside it (the
#    module cache's cubin), and exactly the sampled launches run the copy
#    (launch n: n <= K, or (n - K - 1) mod N == 0);
#  - a refused gpuext attach leaves the sampling as it was;
#  - gpuext attach --launch-sample: the same, counted from the attach;
#  - first=0: the first launch is instrumented, then every N-th;
#  - a library (cuLibraryLoadData: how cudart loads an nvcc program's
#    kernels): the same;
#  - a module whose kernels write a variable: rewritten in place, every
#    launch instrumented (a second copy would not share the variable);
#  - with GPUEXT_JIT_ASYNC and a cold cache: the copy compiles off the load
#    path, then its launches are sampled the same way;
#  - a bad value, and a device policy loaded beside the tool: one warning,
#    every launch instrumented.
#  - the default (no setting): 16, first=16; GPUEXT_LAUNCH_SAMPLE=1 every
#    launch, rewritten in place; a device policy beside a tool and no
#    setting: every launch, no warning; gpuext attach with no
#    --launch-sample samples by the default, --every-launch does not.
set -u
LIVE_NAME=launch-sample LIVE_TMP=lsample
. tests/attach/live_lib.sh
"$G" tools prepare --cache-dir $T/cache --sm 90 threadhist >$T/prepare.log 2>&1 ||
	echo "not ok - launch-sample: gpuext tools prepare: $(tail -1 $T/prepare.log)"
# the copies as PTX: the fake driver tells an instrumented launch by the
# module's text (a ptxas cubin it cannot read)
A=(GPUEXT_TOOL=threadhist GPUEXT_CUBIN=0)

# expected N K OUT: do the launches and instrumented counts of OUT's last
# line fit the sample (and were there at least 2N + K + 1 launches)?
expected() {
	python3 - "$1" "$2" "$3" <<'P'
import re, sys
n, k, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
m = re.findall(r'launches (\d+) instrumented (\d+)', open(out).read())
if not m:
    sys.exit(1)
L, I = map(int, m[-1])
want = sum(1 for i in range(1, L + 1) if i <= k or (i - k - 1) % n == 0)
print('# launches %d instrumented %d (want %d)' % (L, I, want))
sys.exit(0 if I == want and L >= 2 * n + k + 1 else 1)
P
}

# attached N K MIN DETACH: did the launches while attached (the detach's
# answer) that ran the copy fit the sample, over at least MIN launches?
attached() {
	python3 - "$@" <<'P'
import re, sys
n, k, least = map(int, sys.argv[1:4])
m = re.search(r'(\d+) launches while attached, (\d+) instrumented', open(sys.argv[4]).read())
L, I = map(int, m.groups()) if m else (0, -1)
want = sum(1 for i in range(1, L + 1) if i <= k or (i - k - 1) % n == 0)
print('# attached: launches %d instrumented %d (want %d)' % (L, I, want))
sys.exit(0 if I == want and L >= least else 1)
P
}

# briefly NAME [env...]: a live_app with the tool and env, stopped once its
# first launches ran (a few, 2 ms apart)
briefly() {
	local n=$1
	shift
	start "$n" plain "${A[@]}" "$@"
	wait_for $T/$n.out 'launch 1 runs'
	sleep 0.2
	stop "$n" $pid
}

start s plain "${A[@]}" GPUEXT_LAUNCH_SAMPLE=4,first=2
check "the module loads as it came with its copy beside it" \
	"grep -q 'module 1 (cuModuleLoadData): loaded as it came, its instrumented copy (.* hooks, sm_90, its PTX) beside it for the sampled launches' $T/s.err" $T/s.err
check "the first launch runs the copy" "wait_for $T/s.out 'launch 1 runs the instrumented copy'" $T/s.out
check "launch 3 runs the copy (2 + 1), launch 4 the original, launch 7 the copy" "wait_for $T/s.out 'launch 4 runs the original' && ! grep -q 'launch 3 runs the original' $T/s.out && wait_for $T/s.out 'launch 7 runs the instrumented copy'" $T/s.out
# an attach to this process is refused (its tool runs from the start); the
# refusal must not take the launch switch with it
"$G" attach $pid --tool launchlate >$T/s.attach 2>&1
check "gpuext attach to it is refused (a tool from the start)" "! grep -q '^attached' $T/s.attach && [ -s $T/s.attach ]" $T/s.attach
n=$(grep -c 'runs the' $T/s.out)
wait_count $T/s.out 'runs the' $((n + 8))
stop s $pid
check "exit 0, no launch failed" "[ $rc = 0 ] && grep -q '^ok - live_app: .* 0 failed' $T/s.out" $T/s.out
check "exactly the first 2 launches and then 1 in 4 ran the copy" "expected 4 2 $T/s.out >>$T/s.out" $T/s.out

start z plain "${A[@]}" GPUEXT_LAUNCH_SAMPLE=3,first=0
wait_count $T/z.out 'runs the' 8
stop z $pid
check "first=0: launch 1, then every 3rd, ran the copy" \
	"grep -q 'launch 1 runs the instrumented copy' $T/z.out && grep -q 'launch 2 runs the original' $T/z.out && expected 3 0 $T/z.out >>$T/z.out" $T/z.out

# the default: no setting at all
start d plain "${A[@]}"
check "the default: the module loads as it came, its copy beside it, the sample said" \
	"grep -q 'module 1 (cuModuleLoadData): loaded as it came, its instrumented copy' $T/d.err && grep -q \"launch sample: each kernel's first 16 launches instrumented, then 1 in 16\" $T/d.err" $T/d.err
wait_count $T/d.out 'runs the' 50
stop d $pid
check "the default: exactly the first 16 launches and then 1 in 16 ran the copy" \
	"[ $rc = 0 ] && grep -q 'launch 18 runs the original' $T/d.out && grep -q 'launch 33 runs the instrumented copy' $T/d.out && expected 16 16 $T/d.out >>$T/d.out" $T/d.out

start e plain "${A[@]}" GPUEXT_LAUNCH_SAMPLE=1
wait_count $T/e.out 'runs the' 20
stop e $pid
check "GPUEXT_LAUNCH_SAMPLE=1: rewritten in place, every launch instrumented" \
	"grep -q 'module 1 (cuModuleLoadData): rewritten' $T/e.err && ! grep -q 'beside it\|launch sample' $T/e.err && grep -q 'switches 1 ' $T/e.out && [ $rc = 0 ]" $T/e.out

briefly q GPUEXT_POLICY=$B/bench/empty_probe.bpf.o
check "a device policy beside the tool, no setting: every launch instrumented, no warning" \
	"! grep -qi 'launch.sample\|warn' $T/q.err && grep -q 'switches 1 ' $T/q.out && [ $rc = 0 ]" $T/q.err

start l library "${A[@]}" GPUEXT_LAUNCH_SAMPLE=4,first=2 GPUEXT_CACHE_DIR=$T/cache-lib
check "a library (cuLibraryLoadData, as cudart loads): its copy beside it" \
	"grep -q 'library 1 (cuLibraryLoadData): loaded as it came, its instrumented copy' $T/l.err" $T/l.err
wait_count $T/l.out 'runs the' 8
stop l $pid
check "a library: exactly the first 2 launches and then 1 in 4 ran the copy" \
	"[ $rc = 0 ] && grep -q '^ok - live_app: .* 0 failed' $T/l.out && expected 4 2 $T/l.out >>$T/l.out" $T/l.out

# gpuext attach --launch-sample: the same on a process attached to live,
# counted from the attach; after the detach every launch runs the original
start t plain
"$G" attach $pid --tool threadhist --launch-sample 4,first=2 >$T/t.attach 2>&1
check "attach --launch-sample: answered, the sample said" \
	"grep -q 'attached threadhist: 1 modules instrumented.*; launches sampled 4,first=2' $T/t.attach" $T/t.attach
wait_for $T/t.out 'runs the instrumented copy'
n=$(grep -c 'runs the' $T/t.out)
wait_count $T/t.out 'runs the' $((n + 8))
"$G" detach $pid >$T/t.detach 2>&1
check "attach --launch-sample: the first 2 launches after the flip, then 1 in 4, ran the copy" \
	"attached 4 2 14 $T/t.detach >>$T/t.out" $T/t.out
n=$(grep -c 'runs the' $T/t.out)
wait_count $T/t.out 'runs the' $((n + 1))
stop t $pid
check "attach --launch-sample: after the detach the original runs, exit 0" \
	"[ $rc = 0 ] && tail -5 $T/t.out | grep -q '^ok - live_app: .* 0 failed' && grep 'runs the' $T/t.out | tail -1 | grep -q original" $T/t.out
# gpuext attach with no --launch-sample: the default, counted from the flip;
# --every-launch: every launch. attach_run NAME MORE ARGS...: a live_app
# attached to with ARGS, MORE launches after the copy's first, detached.
attach_run() {
	local name=$1 more=$2
	shift 2
	start "$name" plain
	"$G" attach $pid --tool threadhist "$@" >$T/$name.attach 2>&1
	wait_for $T/$name.out 'runs the instrumented copy'
	wait_count $T/$name.out 'runs the' $(($(grep -c 'runs the' $T/$name.out) + more))
	"$G" detach $pid >$T/$name.detach 2>&1
	stop "$name" $pid
}
attach_run u 40
check "attach, no --launch-sample: the default sample, said in the answer" \
	"grep -q 'attached threadhist: 1 modules instrumented.*; launches sampled 16' $T/u.attach" $T/u.attach
check "attach, no --launch-sample: the first 16 launches after the flip, then 1 in 16, ran the copy" \
	"[ $rc = 0 ] && attached 16 16 40 $T/u.detach >>$T/u.out" $T/u.out
attach_run v 20 --every-launch
check "attach --every-launch: every launch, said in the answer" \
	"grep -q 'attached threadhist: 1 modules instrumented.*; every launch instrumented' $T/v.attach" $T/v.attach
check "attach --every-launch: every launch while attached ran the copy" \
	"[ $rc = 0 ] && grep -qE '(^|[^0-9])([0-9]+) launches while attached, \\2 instrumented' $T/v.detach" $T/v.detach
"$G" attach 1 --tool threadhist --launch-sample 4x >$T/t.bad 2>&1
check "attach --launch-sample 4x: refused by the command, with the form" "grep -q 'expected N\\[,first=K\\]' $T/t.bad" $T/t.bad

PTX=tests/attach/state_rw.ptx
briefly r GPUEXT_LAUNCH_SAMPLE=4 GPUEXT_CACHE_DIR=$T/cache-rw
check "a variable the kernels write: rewritten in place, every launch instrumented" \
	"grep -q 'module 1 (cuModuleLoadData): rewritten' $T/r.err && ! grep -q 'beside it' $T/r.err && grep -q 'switches 1 ' $T/r.out && [ $rc = 0 ]" $T/r.out
PTX=tests/ptx-rewrite/golden-passes/vadd.ptx

start a plain "${A[@]}" GPUEXT_LAUNCH_SAMPLE=4,first=1 GPUEXT_JIT_ASYNC=1 GPUEXT_JIT_WORKERS=1 \
	GPUEXT_CACHE_DIR=$T/cache-async FAKECUDA_LINK_US=200000
check "with GPUEXT_JIT_ASYNC, cold: the copy compiles off the load path" \
	"grep -q 'compiling off the load path' $T/a.err && wait_for $T/a.err 'instrumented copy ready'" $T/a.err
check "with GPUEXT_JIT_ASYNC: once ready, its first launch runs it, the next 3 the original" \
	"wait_for $T/a.out 'runs the instrumented copy' && wait_for $T/a.out 'runs the original'" $T/a.out
stop a $pid
check "with GPUEXT_JIT_ASYNC: exit 0, no launch failed" "[ $rc = 0 ] && grep -q '^ok - live_app: .* 0 failed' $T/a.out" $T/a.out

briefly b GPUEXT_LAUNCH_SAMPLE=4x
check "a bad value: one warning, every launch instrumented" \
	"grep -q 'GPUEXT_LAUNCH_SAMPLE=4x: expected N\[,first=K\]' $T/b.err && grep -q 'switches 1 ' $T/b.out && [ $rc = 0 ]" $T/b.err

briefly p GPUEXT_POLICY=$B/bench/empty_probe.bpf.o GPUEXT_LAUNCH_SAMPLE=4
check "with a device policy: one warning, every launch instrumented" \
	"grep -q 'GPUEXT_LAUNCH_SAMPLE: not with a device policy' $T/p.err && grep -q 'switches 1 ' $T/p.out && [ $rc = 0 ]" $T/p.err
briefly o GPUEXT_POLICY=$B/bench/empty_probe.bpf.o GPUEXT_LAUNCH_SAMPLE=1
check "a device policy and GPUEXT_LAUNCH_SAMPLE=1 (--every-launch): every launch, no warning" \
	"! grep -qi 'launch.sample\\|warn' $T/o.err && grep -q 'switches 1 ' $T/o.out && [ $rc = 0 ]" $T/o.err
# threads NAME THREADS LAUNCHES GLOBAL [env...]: threads_app (two modules
# of PTX, THREADS threads launching both, LAUNCHES each before and after the
# GLOBAL's address is asked for; "-": not asked) with the tool
threads() {
	local n=$1 nt=$2 l=$3 g=$4
	shift 4
	[ "$g" = - ] && g=""
	env LD_LIBRARY_PATH=$B/lib GPUEXT_REAL_LIBCUDA=$FAKE GPUEXT_LOG=info GPUEXT_TOOLS_DIR=$B/share/gpuext/tools \
		GPUEXT_CACHE_DIR=$T/cache FAKECUDA_DEVICES=1 "${A[@]}" "$@" \
		$B/tests/attach/threads_app $PTX $K "$nt" "$l" $g >$T/$n.out 2>$T/$n.err
}
# threads_fit N K OUT RETIRED: each function's instrumented launches fit
# the sample over its own count, exactly; RETIRED=1: function 0's only over
# its launches before the retirement, none after
threads_fit() {
	python3 - "$@" <<'P'
import re, sys
n, k, out, retired = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4] == '1'
fit = lambda L: sum(1 for i in range(1, L + 1) if i <= k or (i - k - 1) % n == 0)
rows = re.findall(r'fn (\d) launches (\d+) instrumented (\d+) late_instrumented (\d+)', open(out).read())
ok = len(rows) == 2
for f, L, I, J in (map(int, r) for r in rows):
    want, late = (fit(L // 2), 0) if retired and f == 0 else (fit(L), None)
    print('# fn %d: launches %d instrumented %d (want %d) late %d' % (f, L, I, want, J))
    ok = ok and I == want and (late is None or J == late) and L >= 2 * n + k + 1
sys.exit(0 if ok else 1)
P
}
threads m 8 400 - GPUEXT_LAUNCH_SAMPLE=4,first=2
check "8 threads launching two modules' kernels at once: each kernel's count exact (the first 2, then 1 in 4)" \
	"grep -q '^ok - threads_app' $T/m.out && threads_fit 4 2 $T/m.out 0 >>$T/m.out" $T/m.out
PTX=tests/attach/state_ro.ptx
threads q 8 400 scale GPUEXT_LAUNCH_SAMPLE=4,first=2 FAKECUDA_GLOBALS=1 GPUEXT_CACHE_DIR=$T/cache-q
check "8 threads; a module variable's address asked for midway: that module's launches run the original from then on, the other's stay sampled" \
	"grep -q '^ok - threads_app' $T/q.out && grep -q 'the application asked for the address of a module variable' $T/q.err && threads_fit 4 2 $T/q.out 1 >>$T/q.out" $T/q.out
PTX=tests/ptx-rewrite/golden-passes/vadd.ptx
check "no other warning in any process" "! cat $T/[szaldeuvmq].err | grep -v 'attach: refused' | grep -i 'warn\\|cannot\\|error'" $T/s.err
