#!/usr/bin/env bash
# Formatters on synthetic tool logs with known contents (tests/tools/mkdata.py):
# text, --json and --trace outputs compared with golden files; JSON and
# traces validated with python3 -m json.tool. GX_GOLDEN_UPDATE=1 rewrites them.
set -u
B=${BUILD:-build}
G=tests/tools/golden
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cmp_golden() { # name file
	if [ "${GX_GOLDEN_UPDATE:-0}" = 1 ]; then cp "$2" $G/$1; fi
	if diff -u $G/$1 "$2" >$T/diff 2>&1; then echo "ok - tools-fmt: $1 matches golden"
	else echo "not ok - tools-fmt: $1 differs from golden"; head -20 $T/diff | sed 's/^/#  /'; fi
}
for t in kernelretsnoop launchlate memtrace; do
	mkdir -p $T/$t
	python3 tests/tools/mkdata.py $T/$t $t
	$B/bin/gpuext tools report $t --dir $T/$t >$T/$t.txt 2>&1
	cmp_golden $t.txt $T/$t.txt
	$B/bin/gpuext --json tools report $t --dir $T/$t --trace $T/$t.trace.json >$T/$t.json 2>&1
	if python3 -m json.tool $T/$t.json >/dev/null 2>&1; then echo "ok - tools-fmt: $t JSON valid"
	else echo "not ok - tools-fmt: $t JSON valid"; fi
	if python3 -m json.tool $T/$t.trace.json >/dev/null 2>&1; then echo "ok - tools-fmt: $t trace valid"
	else echo "not ok - tools-fmt: $t trace valid"; fi
	cmp_golden $t.json $T/$t.json
	cmp_golden $t.trace.json $T/$t.trace.json
done
# The tool log's second revision: launch flags and GPU times; a SASS-only
# kernel reported host-side ("host only (SASS)") beside the instrumented ones.
for t in launchlate kernelretsnoop; do
	mkdir -p $T/$t-v2 && python3 tests/tools/mkdata.py $T/$t-v2 $t v2
	$B/bin/gpuext tools report $t --dir $T/$t-v2 >$T/$t-v2.txt 2>&1
	cmp_golden $t-v2.txt $T/$t-v2.txt
	$B/bin/gpuext --json tools report $t --dir $T/$t-v2 --trace $T/$t-v2.trace.json >$T/$t-v2.json 2>&1
	cmp_golden $t-v2.json $T/$t-v2.json
	if python3 -m json.tool $T/$t-v2.trace.json >/dev/null 2>&1; then echo "ok - tools-fmt: $t v2 trace valid"
	else echo "not ok - tools-fmt: $t v2 trace valid"; fi
done
python3 - $T <<'P'
import json, sys
T = sys.argv[1]
h = json.load(open(T + '/launchlate-v2.json'))['host_launches']
k = {x['kernel']: (x['launches'], x['instrumented'], x['gpu_ns']) for x in h['kernels']}
good = (h['launches'], h['instrumented'], h['timed'], h['gpu_ns'], h['gpu_ns_instrumented']) == (5, 3, 5, 46000, 6000) \
    and k == {'cublas_gemm_sm90': (2, 0, 40000), 'vadd': (2, 2, 4000), '_Z6reducePf': (1, 1, 2000)}
print(('ok' if good else 'not ok') + ' - tools-fmt: host-side launches: counts, hooks and GPU time per kernel %s %s' % (h, k))
tr = json.load(open(T + '/launchlate-v2.trace.json'))['traceEvents']
sl = sorted((e['ts'], e['dur'], e['name'], e['args']['hooks']) for e in tr if e.get('cat') == 'launch')
good = len(sl) == 5 and sl[0] == (0.0, 1.0, 'vadd', True) and ('cublas_gemm_sm90' in [x[2] for x in sl if not x[3]])
print(('ok' if good else 'not ok') + ' - tools-fmt: one trace slice per timed launch %s' % sl[:2])
P
# GPU times on a sample of launches: each kernel's timed mean, scaled to its
# launches (vadd 1 and 3 timed, reduce none, the SASS-only kernel 1 of 2).
mkdir -p $T/sampled && python3 tests/tools/mkdata.py $T/sampled launchlate sampled
$B/bin/gpuext --json tools report launchlate --dir $T/sampled >$T/sampled.json 2>&1
python3 - $T/sampled.json <<'P'
import json, sys
h = json.load(open(sys.argv[1]))['host_launches']
k = {x['kernel']: (x['launches'], x['timed'], x['gpu_ns_timed'], x['gpu_ns']) for x in h['kernels']}
good = (h['timed'], h['gpu_ns_timed'], h['gpu_ns']) == (3, 24000, 44000) and k['cublas_gemm_sm90'] == (2, 1, 20000, 40000) \
    and k['_Z6reducePf'] == (1, 0, 0, 0) and k['vadd'] == (2, 2, 4000, 4000)
print(('ok' if good else 'not ok') + ' - tools-fmt: sampled GPU times scaled per kernel %s %s' % (h['gpu_ns'], k))
P
# Nothing instrumented at all (a SASS-only program): the report still comes,
# exit 0, with every launch host-side.
for t in kernelretsnoop launchlate memtrace; do
	mkdir -p $T/$t-ho && python3 tests/tools/mkdata.py $T/$t-ho $t hostonly
	if $B/bin/gpuext tools report $t --dir $T/$t-ho >$T/$t-ho.txt 2>&1 &&
		grep -Eq 'launches \(seen host-side\): [56], 0 instrumented' $T/$t-ho.txt &&
		grep -q 'cublas_gemm_sm90 .* host only (SASS)' $T/$t-ho.txt; then
		echo "ok - tools-fmt: $t reports a program with nothing instrumented (exit 0, launches host-side)"
	else
		echo "not ok - tools-fmt: $t reports a program with nothing instrumented"; sed 's/^/#  /' $T/$t-ho.txt | head -8
	fi
done
# Known answers, independent of the goldens.
python3 - $T <<'P'
import json, sys
T = sys.argv[1]
k = json.load(open(T + '/kernelretsnoop.json'))
L = k['launches']
ok = [len(L) == 4, L[0]['blocks'] == 4 and L[0]['blocks_expected'] == 4,
      [f['ts'] for f in L[0]['finishes']][2] == 22500, L[1]['blocks'] == 2, L[2]['blocks'] == 3, k['drops'] == 1]
print(('ok' if all(ok) else 'not ok') + ' - tools-fmt: kernelretsnoop assigns blocks to launches %s' % ok)
l = json.load(open(T + '/launchlate.json'))
v = {x['kernel']: (x['count'], x['min_ns'], x['max_ns']) for x in l['kernels']}
good = v.get('vadd') == (2, 3000, 7000) and v.get('_Z6reducePf') == (1, 12000, 12000)
print(('ok' if good else 'not ok') + ' - tools-fmt: launchlate latencies from calibrated clocks %s' % v)
# records out of launch order (concurrent streams) go where their launch id says
ids = [x['launch_id'] for x in L]
good = ids == [101, 102, 103, 104] and [f['sm'] for f in L[2]['finishes']] == [1, 1, 2]
print(('ok' if good else 'not ok') + ' - tools-fmt: kernelretsnoop places records by launch id %s' % ids)
# a 131073-block launch records every 16th block: 8193 expected (gx_krs_sample_mask)
s = [(x['grid_blocks'], x['sample_every'], x['blocks_expected'], x['blocks']) for x in L]
good = s == [(4, 1, 4, 4), (2, 1, 2, 2), (4, 1, 4, 3), (131073, 16, 8193, 3)] and k['expected'] == 8203
print(('ok' if good else 'not ok') + ' - tools-fmt: kernelretsnoop expects a sample of launches over 16384 blocks %s' % s)
p = [(x['seq'], x['launch_id'], x['latency_ns']) for x in l['per_launch']]
good = p == [(1, 101, 7000), (2, 102, 12000), (3, 103, 3000)]
print(('ok' if good else 'not ok') + ' - tools-fmt: launchlate matches launches by launch id %s' % p)
m = json.load(open(T + '/memtrace.json'))
good = m['samples'] == 5 and m['ops'] == {'load': 2, 'store': 2, 'atomic': 1, 'reduce': 0}
print(('ok' if good else 'not ok') + ' - tools-fmt: memtrace counts by op')
P
# kernelretsnoop_all: the same records, every block of every launch expected
mkdir -p $T/all && python3 tests/tools/mkdata.py $T/all kernelretsnoop_all
$B/bin/gpuext --json tools report kernelretsnoop_all --dir $T/all >$T/all.json 2>&1
python3 - $T/all.json <<'P'
import json, sys
L = json.load(open(sys.argv[1]))['launches']
s = [(x['grid_blocks'], x['sample_every'], x['blocks_expected'], x['blocks']) for x in L]
good = s == [(4, 1, 4, 4), (2, 1, 2, 2), (4, 1, 4, 3), (131073, 1, 131073, 3)]
print(('ok' if good else 'not ok') + ' - tools-fmt: kernelretsnoop_all expects every block %s' % s)
P
# GX_KRS_CAP=256 (kernelretsnoop_c256): the records carry the cap; the big
# launch then expects every 1024th block (129), the small ones every block
mkdir -p $T/cap && python3 tests/tools/mkdata.py $T/cap kernelretsnoop cap256
$B/bin/gpuext --json tools report kernelretsnoop --dir $T/cap >$T/cap.json 2>&1
$B/bin/gpuext tools report kernelretsnoop --dir $T/cap >$T/cap.txt 2>&1
python3 - $T/cap.json $T/cap.txt <<'P'
import json, sys
k = json.load(open(sys.argv[1]))
L = k['launches']
s = [(x['grid_blocks'], x['sample_every'], x['blocks_expected'], x['blocks']) for x in L]
good = s == [(4, 1, 4, 4), (2, 1, 2, 2), (4, 1, 4, 3), (131073, 1024, 129, 3)] and k['expected'] == 139
good = good and 'at most 256 per launch' in open(sys.argv[2]).read()
print(('ok' if good else 'not ok') + ' - tools-fmt: kernelretsnoop follows the cap its records carry (GX_KRS_CAP=256) %s' % s)
# records of the table's cap (the default build): the blocks expected and
# not received (139 expected, 12 blocks got, 1 counted as dropped) are named
txt = open(sys.argv[2]).read()
good = 'note: 126 expected block records never arrived: the record table holds the' in txt
print(('ok' if good else 'not ok') + " - tools-fmt: kernelretsnoop names the table's missing records")
P
# Records of only some launches (tools/report.c, realign): each record goes
# to its own launch by launch id differences, not to the k-th launch of its
# kernel — the last 200 of 600 (a record table's keep) and the first 200
# and the last (a ring's), one unlisted grid between them
for m in lost lostring; do
	mkdir -p $T/$m && python3 tests/tools/mkdata.py $T/$m kernelretsnoop $m
	$B/bin/gpuext --json tools report kernelretsnoop --dir $T/$m >$T/$m.json 2>&1
	python3 - $T/$m.json $m <<'P'
import json, sys
k = json.load(open(sys.argv[1]))
got = [x['seq'] for x in k['launches'] if x['blocks']]
want = list(range(401, 601)) if sys.argv[2] == 'lost' else list(range(1, 201)) + [600]
good = got == want and k['unattributed'] == 0
print(('ok' if good else 'not ok') + ' - tools-fmt: kernelretsnoop (%s): records of some launches go to their own launches (%d, %s..%s)' % (sys.argv[2], len(got), got[:2], got[-2:]))
P
done
# The GPU ring stress in small (tests/gpu/tools.sh, run 120): a full ring
# kept the first 16 launches of a kernel and a few after each drain, the
# drainer's memsets being grids the log does not list. The walk from the
# last launch met the first ids past the log's start and left them without
# a launch: they became a launch of their own (graph nodes' rule), one
# 4-block launch more expected than launched. The walk that leaves fewer
# ids unplaced wins now: every record on a logged launch, the first 16
# exactly (after an unlisted grid a launch of the same kernel next to it
# is as likely: the totals are what is exact there).
mkdir -p $T/ringburst && python3 tests/tools/mkdata.py $T/ringburst kernelretsnoop ringburst
$B/bin/gpuext --json tools report kernelretsnoop --dir $T/ringburst >$T/ringburst.json 2>&1
python3 - $T/ringburst.json <<'P'
import json, sys
k = json.load(open(sys.argv[1]))
got = [x['seq'] for x in k['launches'] if x['blocks']]
unlogged = [x for x in k['launches'] if not x.get('logged', True)]
good = not unlogged and k['unattributed'] == 0 and k['expected'] == 69 * 4 and got[:16] == list(range(3, 19)) \
    and len(got) == 22 and k['records'] == 88
print(('ok' if good else 'not ok') + ' - tools-fmt: kernelretsnoop: a full ring\'s records after unlisted grids stay on logged launches (%d unlogged, expected %d, %s)' % (len(unlogged), k['expected'], got))
P
# Records of launches the log does not list (CUDA graph kernel nodes): a
# launch each, by launch id, grid from the records; a record of another
# kernel under such an id stays unattributed
mkdir -p $T/graph && python3 tests/tools/mkdata.py $T/graph kernelretsnoop graph
$B/bin/gpuext --json tools report kernelretsnoop --dir $T/graph >$T/graph.json 2>&1
$B/bin/gpuext tools report kernelretsnoop --dir $T/graph >$T/graph.txt 2>&1
python3 - $T/graph.json $T/graph.txt <<'P'
import json, re, sys
k = json.load(open(sys.argv[1]))
s = [(x['seq'], x['launch_id'], x['blocks'], x['blocks_expected'], x.get('logged', True)) for x in k['launches']]
txt = open(sys.argv[2]).read()
good = s == [(1, 101, 1, 1, True), (2, 103, 1, 1, True), (0, 102, 2, 2, False), (0, 104, 1, 2, False)]
good = good and k['unattributed'] == 1 and k['expected'] == 6 and \
    '2 launch(es) are not tied to the launch log' in txt and re.search(r'\n_Z6reducePf +- +2/2 ', txt) is not None
print(('ok' if good else 'not ok') + ' - tools-fmt: kernelretsnoop: launches the log does not list (graph nodes) by their ids %s' % s)
P
# default (uncapped) records: no such note
! grep -q 'never arrived' $T/kernelretsnoop.txt 2>/dev/null && [ -s $T/kernelretsnoop.txt ] \
	&& echo "ok - tools-fmt: kernelretsnoop: no table note for ring records" \
	|| echo "not ok - tools-fmt: kernelretsnoop: no table note for ring records"
out=$($B/bin/gpuext tools report nosuch --dir $T 2>&1); [ $? = 2 ] && [[ $out == *"unknown tool"* ]] \
	&& echo "ok - tools-fmt: unknown tool refused" || echo "not ok - tools-fmt: unknown tool refused: $out"
mkdir -p $T/empty
out=$($B/bin/gpuext tools report threadhist --dir $T/empty 2>&1); [ $? = 1 ] && [[ $out == *"no threadhist data"* ]] \
	&& echo "ok - tools-fmt: empty folder explained" || echo "not ok - tools-fmt: empty folder explained: $out"
# A truncated log (process killed mid-write) still reports what is complete.
head -c 300 $T/kernelretsnoop/4242-kernelretsnoop.events >$T/empty/1-kernelretsnoop.events
$B/bin/gpuext tools report kernelretsnoop --dir $T/empty >/dev/null 2>&1 && echo "ok - tools-fmt: truncated log tolerated" \
	|| echo "not ok - tools-fmt: truncated log tolerated"
