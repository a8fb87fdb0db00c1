#!/usr/bin/env bash
# Kernels run through CUDA graphs count as launches of their kernels (per
# graph launch, per kernel node; shim/graph_exec.c): a graph of 3 kernel
# nodes and a child graph of 1, launched 10 times under threadhist on the
# fake driver, is 40 launches in the summary line, the tools' reports (text
# and JSON) and the stats file; the exec's list follows its changes; an exec
# instantiated before a tool attaches (`gpuext attach`) counts its kernel
# nodes too (4 per graph launch).
set -u
# these checks look at the instrumented module itself, so every launch runs
# it (tools default to a sample of launches: test_launch_sample.sh)
export GPUEXT_LAUNCH_SAMPLE=1
B=${BUILD:-build}
B=$(cd "$B" && pwd)
T=$(mktemp -d); [ -n "${KEEP:-}" ] || trap 'rm -rf "$T"' EXIT
FAKE=$B/tests/attach/fakecuda/libcuda.so.1
APP=$B/tests/attach/graph_app
PTX=tests/ptx-rewrite/golden-passes/entry_refs.ptx
check() { if eval "$2"; then echo "ok - graphs: $1"; else echo "not ok - graphs: $1"; sed 's/^/#  /' $T/$3 | tail -8; fi; }
run() { # name, mode, then env assignments
	local name=$1 mode=$2; shift 2
	mkdir -p $T/$name
	env -u GPUEXT_TOOL -u GPUEXT_POLICY LD_LIBRARY_PATH=$B/lib GPUEXT_REAL_LIBCUDA=$FAKE GPUEXT_LOG=info \
		GPUEXT_TOOLS_DIR=$B/share/gpuext/tools GPUEXT_FLUSH_MS=10 GPUEXT_CACHE_DIR=$T/cache \
		GPUEXT_SHM_DIR=$T/$name "$@" timeout 60 $APP $PTX 10 $mode >$T/$name.out 2>$T/$name.err
	echo $? >$T/$name.rc
	cat $T/$name.out
}
mkdir -p $T/cache
# each kernel node keeps the stream busy 0.5 ms: a graph launch is 2 ms
run tool plain GPUEXT_TOOL=threadhist GPUEXT_STATS_MS=20 FAKECUDA_KERNEL_US=500
check "app under threadhist exits 0" "[ \$(cat $T/tool.rc) = 0 ]" tool.err
check "summary line: 40 launches, 40 of them kernel nodes of 10 graph launches, 8 of them timed (the first 8 of the exec)" \
	"grep -q 'gpuext: launches: 40, 40 instrumented (100.0 %); 40 of them kernel nodes of 10 graph launches (8 graph launches timed: ' $T/tool.err" tool.err
$B/bin/gpuext tools report threadhist --dir $T/tool >$T/report.txt 2>&1
check "report: 40 launches seen host-side, 40 as graph kernel nodes, 8 graph launches timed" \
	"grep -q 'launches (seen host-side): 40, 40 instrumented' $T/report.txt && grep -q 'of them 40 kernel nodes of 10 graph launches (8 timed, ' $T/report.txt" report.txt
check "report: per kernel k 20, k2 10, late 10 (all in graphs)" \
	"grep -Eq '^k +20 +20 ' $T/report.txt && grep -Eq '^k2 +10 +10 ' $T/report.txt && grep -Eq '^late +10 +10 ' $T/report.txt" report.txt
$B/bin/gpuext --json tools report threadhist --dir $T/tool >$T/report.json 2>&1
python3 - $T/report.json <<'P'
import json, sys
h = json.load(open(sys.argv[1]))['host_launches']
k = {x['kernel']: (x['launches'], x['graph_launches']) for x in h['kernels']}
good = (h['launches'], h['graph_launches'], h['graph_kernel_launches']) == (40, 10, 40) and \
    k == {'k': (20, 20), 'k2': (10, 10), 'late': (10, 10)}
print(('ok' if good else 'not ok') + ' - graphs: JSON report: 40 launches, 10 graph launches, per kernel %s' % k)
# GPU time: 8 timed graph launches of 2 ms (4 nodes x 0.5 ms on the fake's
# stream) -> 10 x 2 ms = 20 ms for the exec, shared equally per node (no
# kernel has direct timings): k 2 nodes 10 ms, k2 and late 5 ms each
g = {x['kernel']: x['graph_gpu_ns'] / 1e6 for x in h['kernels']}
near = lambda a, b: abs(a - b) <= 0.15 * b
good = h['graph_launches_timed'] == 8 and near(h['graph_gpu_ns'] / 1e6, 20) and near(g['k'], 10) and \
    near(g['k2'], 5) and near(g['late'], 5) and near(h['gpu_ns'] / 1e6, 20)
print(('ok' if good else 'not ok') + ' - graphs: graph GPU time: 8 timed launches, %.1f ms for the exec (20 expected), '
      'shared per node %s' % (h['graph_gpu_ns'] / 1e6, {n: round(v, 2) for n, v in g.items()}))
P
run changes changes GPUEXT_TOOL=threadhist
check "exec list at instantiation, after an update to the same graph, cuGraphExecKernelNodeSetParams and cuGraphExecUpdate" \
	"[ \$(grep -c '^ok - graph_app' $T/changes.out) = 6 ] && ! grep -q '^not ok' $T/changes.out" changes.out
# 10 launches, an update to the same graph, 10 more (the same list: its
# timing sample goes on, 8 timed in all), two changes, 1 launch (a new list: timed)
check "changes: 82 launches (80 + one launch of the updated exec: 2 nodes), 9 graph launches timed" \
	"grep -q 'gpuext: launches: 82, 82 instrumented (100.0 %); 82 of them kernel nodes of 21 graph launches (9 graph launches timed' $T/changes.err" changes.err
# no subscriber: nothing walked, the launches pass through
run none plain
check "no tool: the graph runs, no summary" \
	"[ \$(cat $T/none.rc) = 0 ] && ! grep -q '^not ok' $T/none.out && ! grep -q 'launches:' $T/none.err" none.err

# an exec instantiated before the tool attaches: its list exists from
# instantiation, so the attached tool counts its kernel nodes
G=$B/bin/gpuext
mkdir -m 700 $T/ctl $T/live
export GPUEXT_CTL_DIR=$T/ctl
"$G" tools prepare --cache-dir $T/cache --sm 90 threadhist >$T/prepare.log 2>&1 ||
	echo "not ok - graphs: gpuext tools prepare: $(tail -1 $T/prepare.log)"
env -u GPUEXT_TOOL -u GPUEXT_POLICY LD_LIBRARY_PATH=$B/lib GPUEXT_REAL_LIBCUDA=$FAKE GPUEXT_LOG=info \
	GPUEXT_TOOLS_DIR=$B/share/gpuext/tools GPUEXT_FLUSH_MS=10 GPUEXT_CACHE_DIR=$T/cache GPUEXT_SHM_DIR=$T/live \
	FAKECUDA_DEVICES=1 timeout 60 $APP $PTX 3 live $T/live.stop >$T/live.out 2>$T/live.err &
wpid=$!
# the app's own pid (under timeout): from its ready line
for _ in $(seq 500); do
	lpid=$(sed -n 's/^# graph_app: ready, pid //p' $T/live.out)
	[ -n "$lpid" ] && [ -e $T/ctl/$lpid.ps ] && break
	sleep 0.02
done
"$G" attach $lpid --tool threadhist >$T/live.attach 2>&1
sleep 0.5
"$G" detach $lpid >$T/live.detach 2>&1
touch $T/live.stop
wait $wpid
echo $? >$T/live.rc
check "attach after instantiation: the app ran on, exit 0" \
	"[ \$(cat $T/live.rc) = 0 ] && grep -q 'attached threadhist' $T/live.attach && ! grep -q '^not ok' $T/live.out" live.attach
# the report: "of them N kernel nodes of M graph launches", N = 4 M, M > 0
read -r nodes glaunches < <(sed -n 's/.*of them \([0-9]*\) kernel nodes of \([0-9]*\) graph launches.*/\1 \2/p' $T/live.detach | head -1)
check "attach after instantiation: the report counts 4 kernel nodes per graph launch (${nodes:-none} of ${glaunches:-0})" \
	"[ \${glaunches:-0} -gt 0 ] && [ \${nodes:-0} = \$((4 * glaunches)) ]" live.detach
