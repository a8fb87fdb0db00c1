#!/usr/bin/env bash
# The tools' reports on data from three GPUs (issue 7; tests/tools/mkmulti.c:
# one process driving GPUs 0 and 1, another on GPU 2): per-GPU threadhist
# totals, the device of every kernelretsnoop launch, launchlate rows per GPU,
# memtrace samples per GPU, one trace process per GPU, the "<map>@<ctx>" map
# of a second context read, and the device columns in the text reports.
set -u
B=${BUILD:-build}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
for t in threadhist kernelretsnoop launchlate memtrace; do
	mkdir -p $T/$t
	if ! $B/tests/tools/mkmulti $T/$t $t >$T/$t.mk.err 2>&1; then
		echo "not ok - tools-multi: mkmulti $t: $(head -2 $T/$t.mk.err | tr '\n' ' ')"; continue
	fi
	$B/bin/gpuext tools report $t --dir $T/$t >$T/$t.txt 2>&1 || echo "not ok - tools-multi: $t text report failed"
	$B/bin/gpuext --json tools report $t --dir $T/$t --trace $T/$t.trace.json >$T/$t.json 2>$T/$t.err ||
		echo "not ok - tools-multi: $t JSON report failed: $(head -2 $T/$t.err | tr '\n' ' ')"
done
# gpuext map dump --devices: the three copies of th_counts merged and per GPU.
GPUEXT_SHM_DIR=$T/threadhist $B/bin/gpuext map dump th_counts --devices >$T/dump.txt 2>&1
grep -qx '  \[0\] merged (60 240 7680)  gpu0=(10 40 1280) gpu1=(20 80 2560) gpu2=(30 120 3840)' $T/dump.txt &&
	grep -q '^map th_counts (perwarp_array, 3 copies, 3 GPUs)' $T/dump.txt &&
	echo "ok - tools-multi: map dump --devices merges the copies and shows each GPU" ||
	{ echo "not ok - tools-multi: map dump --devices:"; sed 's/^/#  /' $T/dump.txt; }
GPUEXT_SHM_DIR=$T/threadhist $B/bin/gpuext --json map dump threadhist.th_counts --devices >$T/dump.json 2>&1
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
e = d["entries"][0]
ok = e["merged"] == [60, 240, 7680] and e["gpus"] == {"0": [10, 40, 1280], "1": [20, 80, 2560], "2": [30, 120, 3840]} \
    and sorted((c["ctx"], c["dev"]) for c in d["copies"]) == [(0, 0), (0, 2), (1, 1)]
print(("ok" if ok else "not ok") + " - tools-multi: map dump --devices --json: merged, per GPU, copies %s" % e)
' $T/dump.json 2>&1 | sed 's/^Traceback/not ok - tools-multi: map dump --devices --json invalid: Traceback/'
python3 - $T <<'P'
import json, sys
T = sys.argv[1]
def check(c, msg):
    print(('ok' if c else 'not ok') + ' - tools-multi: ' + msg)
def load(n):
    try:
        return json.load(open('%s/%s' % (T, n)))
    except Exception as e:
        check(False, '%s is valid JSON (%s)' % (n, e)); return None
def txt(t):
    return open('%s/%s.txt' % (T, t)).read()
d = load('threadhist.json')
if d:
    g = {x['dev']: (x['blocks'], x['sms']) for x in d['gpus']}
    check(g == {0: (10, 4), 1: (20, 2), 2: (30, 4)}, 'threadhist: blocks and SMs per GPU, the @1 map included %s' % g)
    check(d['total']['blocks'] == 60 and d['map_files'] == 3, 'threadhist: totals over the 3 map files (%s)' % d['total'])
    check(sum(s['blocks'] for s in d['gpus'][1]['per_sm']) == 20, 'threadhist: per-SM rows of GPU 1')
    t = txt('threadhist')
    check('threadhist: 3 GPUs' in t and 'GPU 2: 30 blocks' in t and '  1     1 ' in t, 'threadhist text: a GPU column and per-GPU lines')
    check('counted on the 3 instrumented launches of the 6 seen' in t,
          'threadhist text: says its counts cover only the instrumented launches (3 of 6)')
d = load('kernelretsnoop.json')
if d:
    got = sorted((l['pid'], l['ctx'], l['dev'], l['blocks']) for l in d['launches'])
    check(got == [(100, 0, 0, 2), (100, 1, 1, 3), (200, 0, 2, 4)] and d['unattributed'] == 0,
          'kernelretsnoop: each launch carries its GPU, every block attributed %s' % got)
    check(txt('kernelretsnoop').splitlines()[2].startswith('GPU KERNEL'), 'kernelretsnoop text: a GPU column')
d = load('launchlate.json')
if d:
    got = sorted((k['dev'], k['count'], k['min_ns']) for k in d['kernels'])
    check(got == [(0, 1, 1000), (1, 1, 2000), (2, 1, 3000)], 'launchlate: one row per GPU and kernel, latencies %s' % got)
    check(sorted(p['dev'] for p in d['per_launch']) == [0, 1, 2], 'launchlate: per-launch rows carry the GPU')
d = load('memtrace.json')
if d:
    check(sorted(r['dev'] for r in d['records']) == [0, 0, 1, 1, 2, 2], 'memtrace: samples carry their GPU')
    check('GPU    SAMPLES' in txt('memtrace'), 'memtrace text: samples per GPU')
    check(d['samples'] == 6 and d['lost'] == 9 and '9 taken in loops but not kept' in txt('memtrace'),
          'memtrace: samples a lane could not keep (GDEV_MEM_LOST) counted apart, not as accesses (%s, %s)'
          % (d['samples'], d['lost']))
for t in ('threadhist', 'kernelretsnoop', 'launchlate', 'memtrace'):
    try:
        tr = json.load(open('%s/%s.trace.json' % (T, t)))
    except Exception as e:
        check(False, '%s trace valid (%s)' % (t, e)); continue
    evs = tr['traceEvents'] if isinstance(tr, dict) else tr
    pids = sorted(set(e['pid'] for e in evs if e.get('ph') != 'M' and 'pid' in e))
    last = {e['pid']: e['args']['name'] for e in evs if e.get('name') == 'process_name'}  # the last one wins
    names = [last.get(p, '') for p in (1, 2, 3)]
    check(pids == [1, 2, 3] and all(n.startswith('gpuext %s: GPU %d' % (t, i)) for i, n in enumerate(names)),
          '%s trace: one process track per GPU %s %s' % (t, pids, names))
P
