#!/usr/bin/env bash
# GPU checks of the observability tools (tests/gpu/run.sh runs it on the
# H200, over a tree built here: run `make gpu-prep` before carrying build/, it
# fills build/cache with the tools' PTX since the GPU machine has no LLVM).
#  1. known answers: tests/gpu/tools_kern.cu launches `uneven` (block b does
#     (b % 7 + 1) units of work; 1000x256 three times, 333x200 once) and a copy
#     kernel; threadhist's totals must equal the launched blocks/warps/threads
#     exactly; kernelretsnoop must report exactly one finish per block and
#     heavy blocks of the first wave must finish after light ones; launchlate
#     must match every launch with a positive latency; memtrace's sampled
#     addresses must lie in the program's buffers.
#  2. the program's output is bit-identical without the shim, with the shim
#     and no tool, and under each tool.
#  3. bench/tool_overhead.sh (skip with TOOLS_GPU_SKIP=bench), within what
#     is left of GX_TOOLS_BUDGET (115 s for this whole script, so that
#     tests/gpu/run.sh's limit never cuts the table off).
# Prints ok/not ok lines; logs, reports and traces go to $OUT/tools/.
set -u
ROOT=${GX_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
B=${GX_BUILD:-$ROOT/build}
OUT=${OUT:-$B/gpu-out}
L=$OUT/tools
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
SKIP=${TOOLS_GPU_SKIP:-}
T0=$(date +%s)
mkdir -p "$L"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
ok() { echo "ok - tools: $*" | tee -a "$L/summary.txt"; }
nok() { echo "not ok - tools: $*" | tee -a "$L/summary.txt"; }
: >"$L/summary.txt"
export GPUEXT_CACHE_DIR=${GPUEXT_CACHE_DIR:-$B/cache}
export GPUEXT_TOOLS_DIR=$B/share/gpuext/tools
export GPUEXT_SHM_DIR=$W/shm
mkdir -p "$GPUEXT_SHM_DIR"

[ -x "$B/bin/gpuext-run" ] && [ -e "$B/lib/libcuda.so.1" ] || { nok "build/ has no gpuext-run or shim (run make)"; exit 1; }
if ls "$GPUEXT_CACHE_DIR"/*.gxpol >/dev/null 2>&1; then
	ok "JIT cache present ($(ls "$GPUEXT_CACHE_DIR"/*.gxpol | wc -l) entries in $GPUEXT_CACHE_DIR)"
else
	nok "no JIT cache in $GPUEXT_CACHE_DIR: run 'make gpu-prep' before carrying build/"
fi

# ---- the test program ----
APP=$B/tests/gpu/tools_kern
if [ ! -x "$APP" ]; then
	APP=$W/tools_kern
	if ! timeout 300 "$NVCC" -O2 -arch=sm_90 -gencode arch=compute_90,code=compute_90 -o "$APP" \
		"$ROOT/tests/gpu/tools_kern.cu" >"$L/nvcc.log" 2>&1; then
		nok "nvcc tools_kern.cu: $(tail -3 "$L/nvcc.log" | tr '\n' ' ')"; exit 1
	fi
fi
if ! timeout 120 "$APP" "$W/direct.bin" >"$L/direct.out" 2>&1; then
	nok "tools_kern without the shim: $(tail -2 "$L/direct.out" | tr '\n' ' ')"; exit 1
fi
ok "tools_kern runs without the shim"
read -r _ blocks warps threads < <(sed -n 's/^launched blocks=\([0-9]*\) warps=\([0-9]*\) threads=\([0-9]*\)/x \1 \2 \3/p' "$L/direct.out")
read -r _ r0 r1 r2 r3 r4 r5 r6 r7 < <(grep '^range' "$L/direct.out")

# shim, no tool: same output
if timeout 120 env LD_LIBRARY_PATH="$B/lib" GPUEXT_LOG=info "$APP" "$W/shim.bin" >"$L/shim.out" 2>"$L/shim.err" &&
	cmp -s "$W/direct.bin" "$W/shim.bin"; then
	ok "output bit-identical with the shim and no tool"
else
	nok "output with the shim and no tool differs or failed: $(tail -2 "$L/shim.err" | tr '\n' ' ')"
fi

run_tool() { # tool -> $W/$tool.bin, reports in $L
	local t=$1 opt=()
	# memtrace samples 1 in 1024 accesses by default: the known-answer run
	# wants loads of the small copy kernel too (2048 warp loads)
	[ "$t" = memtrace ] && opt=(--sample 16)
	GPUEXT_KEEP=0 timeout 60 "$B/bin/gpuext-run" -v --tool "$t" "${opt[@]}" --json --trace "$L/$t.trace.json" -- \
		"$APP" "$W/$t.bin" >"$L/$t.json" 2>"$L/$t.err"
	local rc=$?
	timeout 45 "$B/bin/gpuext-run" --tool "$t" "${opt[@]}" -- "$APP" "$W/$t.2.bin" >"$L/$t.txt" 2>&1
	return $rc
}
for t in threadhist kernelretsnoop launchlate memtrace; do
	if ! run_tool $t; then
		nok "$t: run failed: $(grep -v '^{' "$L/$t.err" | tail -3 | tr '\n' ' ')"; continue
	fi
	if grep -q "policy $t: .*running without it" "$L/$t.err"; then
		nok "$t: not attached: $(grep "policy $t" "$L/$t.err" | head -2 | tr '\n' ' ')"; continue
	fi
	grep -q 'rewritten ([1-9][0-9]* hooks)' "$L/$t.err" && ok "$t: modules rewritten with hooks" ||
		nok "$t: no module rewritten with hooks: $(grep 'module' "$L/$t.err" | head -3 | tr '\n' ' ')"
	cmp -s "$W/direct.bin" "$W/$t.bin" && ok "$t: application output bit-identical" ||
		nok "$t: application output differs"
	python3 -m json.tool "$L/$t.json" >/dev/null 2>&1 && ok "$t: JSON report valid" || nok "$t: JSON report invalid"
	python3 -m json.tool "$L/$t.trace.json" >/dev/null 2>&1 && ok "$t: trace valid" || nok "$t: trace invalid"
	[ -s "$L/$t.txt" ] && ok "$t: text report printed" || nok "$t: no text report"
done

# launchlate's record table under a burst: 100,000 one-block launches back
# to back (a few hundred thousand a second): every launch matched, none
# lost to a slot reused before the drainer took it; the spread of
# consecutive launch ids (%gridid) is logged, since the table's slot is the
# launch id modulo its size. The ring build (GX_LL_RING=1) beside it.
for v in table ring; do
	GPUEXT_KEEP=0 TOOLS_KERN_BURST=100000 timeout 120 env $([ $v = ring ] && echo GX_LL_RING=1) \
		"$B/bin/gpuext-run" --tool launchlate --json -- "$APP" "$W/burst-$v.bin" >"$L/burst-$v.json" 2>"$L/burst-$v.err"
	python3 - "$L/burst-$v.json" "$v" <<'P'
import json, sys, collections
d = json.load(open(sys.argv[1]))
k = {x['kernel']: x for x in d['kernels']}
c = k.get('_Z4copyPKfPfi')
ids = sorted(x['launch_id'] for x in d.get('per_launch', []) if x.get('kernel') == '_Z4copyPKfPfi')
gaps = collections.Counter(b - a for a, b in zip(ids, ids[1:]))
print('# launchlate burst (%s): %s copy launches matched; launch id gaps %s' % (sys.argv[2], c and c['count'], gaps.most_common(4)))
ok = c is not None and c['count'] == 100001
print(('ok' if ok else 'not ok') + ' - tools: launchlate (%s): all 100,001 launches of copy matched under a burst (%s)' % (sys.argv[2], c and c['count']))
P
done

# Two tools at once (their hooks chained at every kernel entry): both
# reports, each with exact answers, output unchanged.
GPUEXT_KEEP=0 timeout 300 "$B/bin/gpuext-run" -v --tool threadhist --tool launchlate --json -- \
	"$APP" "$W/two.bin" >"$L/two.json" 2>"$L/two.err"
if grep -q "running without it" "$L/two.err"; then
	nok "two tools: not attached: $(grep 'running without it' "$L/two.err" | head -2 | tr '\n' ' ')"
fi
grep -q 'called in this order at shared hooks: threadhist, launchlate' "$L/two.err" && ok "two tools: both attached, in order" ||
	nok "two tools: both attached, in order: $(grep 'policy' "$L/two.err" | head -3 | tr '\n' ' ')"
cmp -s "$W/direct.bin" "$W/two.bin" && ok "two tools: application output bit-identical" || nok "two tools: application output differs"
python3 - "$L/two.json" "$blocks" "$warps" "$threads" <<'P' | tee -a "$L/summary.txt"
import json, sys
text, dec, docs, i = open(sys.argv[1]).read(), json.JSONDecoder(), [], 0
while True:
    while i < len(text) and text[i].isspace(): i += 1
    if i >= len(text): break
    d, i = dec.raw_decode(text, i); docs.append(d)
by = {d.get('tool'): d for d in docs}
b, w, t = map(int, sys.argv[2:5])
th, ll = by.get('threadhist'), by.get('launchlate')
print(('ok' if th and th['total'] == dict(blocks=b, warps=w, threads=t) else 'not ok') +
      ' - tools: two tools: threadhist totals exact (%s)' % (th and th['total']))
u = [k for k in (ll or {}).get('kernels', []) if k['kernel'] == '_Z6unevenPfi']
print(('ok' if u and u[0]['count'] == 4 else 'not ok') + ' - tools: two tools: launchlate matched the 4 launches of uneven')
P

# Launch sampling (--launch-sample 2,first=1: each kernel's first launch,
# then every 2nd): output unchanged; fewer launches instrumented than seen;
# kernelretsnoop expects records only of the sampled launches (none short);
# threadhist counts no more than the whole run's blocks.
for t in threadhist kernelretsnoop; do
	GPUEXT_KEEP=0 timeout 120 "$B/bin/gpuext-run" -v --launch-sample 2,first=1 --tool $t --json -- \
		"$APP" "$W/ls-$t.bin" >"$L/ls-$t.json" 2>"$L/ls-$t.err"
	cmp -s "$W/direct.bin" "$W/ls-$t.bin" && ok "$t --launch-sample 2,first=1: application output bit-identical" ||
		nok "$t --launch-sample 2,first=1: application output differs or failed: $(tail -2 "$L/ls-$t.err" | tr '\n' ' ')"
	python3 - "$L/ls-$t.json" "$t" "$blocks" <<'P' | tee -a "$L/summary.txt"
import json, sys
d, t, blocks = json.load(open(sys.argv[1])), sys.argv[2], int(sys.argv[3])
h = d.get('host_launches', {})
print(('ok' if 0 < h.get('instrumented', 0) < h.get('launches', 0) else 'not ok') +
      ' - tools: %s --launch-sample: %s of %s launches instrumented' % (t, h.get('instrumented'), h.get('launches')))
if t == 'threadhist':
    b = d['total']['blocks']
    print(('ok' if 0 < b < blocks else 'not ok') + ' - tools: threadhist --launch-sample: %d of the run\'s %d blocks counted' % (b, blocks))
else:
    L_ = d['launches']
    short = [l for l in L_ if l['blocks'] != l['blocks_expected']]
    print(('ok' if L_ and not short else 'not ok') +
          ' - tools: kernelretsnoop --launch-sample: every reported launch has its records (%d launches, %d short)' % (len(L_), len(short)))
P
done

python3 - "$L" "$blocks" "$warps" "$threads" "$r0" "$r1" "$r2" "$r3" "$r4" "$r5" "$r6" "$r7" <<'P' | tee -a "$L/summary.txt"
import json, sys
L = sys.argv[1]
blocks, warps, threads = map(int, sys.argv[2:5])
rng = list(map(int, sys.argv[5:13]))
def load(t):
    try:
        return json.load(open('%s/%s.json' % (L, t)))
    except Exception as e:
        print('not ok - tools: %s: no JSON report (%s)' % (t, e)); return None
def check(c, msg):
    print(('ok' if c else 'not ok') + ' - tools: ' + msg)
d = load('threadhist')
if d:
    tot = d['total']
    check(tot == dict(blocks=blocks, warps=warps, threads=threads),
          'threadhist totals equal the launch (%s vs blocks=%d warps=%d threads=%d)' % (tot, blocks, warps, threads))
    check(d['busy_sms'] > 1, 'threadhist: work spread over %d SMs' % d['busy_sms'])
d = load('kernelretsnoop')
if d:
    L_ = d['launches']
    un = [l for l in L_ if l['kernel'] == '_Z6unevenPfi']
    check(len(un) == 4, 'kernelretsnoop: 4 launches of uneven (%d)' % len(un))
    check(all(l['blocks'] == l['blocks_expected'] for l in L_) and d['records'] == sum(l['blocks_expected'] for l in L_),
          'kernelretsnoop: exactly one finish per block in every launch (%d records) %s' % (d['records'], [(l['blocks'], l['blocks_expected']) for l in L_]))
    check(d['drops'] == 0 and d['unattributed'] == 0, 'kernelretsnoop: no drops, nothing unattributed')
    ids = [l.get('launch_id', 0) for l in L_]
    check(all(ids) and len(set(ids)) == len(ids),
          'kernelretsnoop: every launch has its own launch id (%%gridid) %s' % ids[:8])
    if un:
        f = un[0]['finishes']
        first = min(x['ts'] for x in f)
        nsm = len(set(x['sm'] for x in f))
        wave = [x for x in f if x['block'][0] < nsm]
        light = [x['ts'] - first for x in wave if x['block'][0] % 7 == 0]
        heavy = [x['ts'] - first for x in wave if x['block'][0] % 7 == 6]
        if light and heavy:
            ml, mh = sum(light) / len(light), sum(heavy) / len(heavy)
            check(mh > 2 * ml, 'kernelretsnoop: heavy blocks finish later (mean %.1f us vs %.1f us)' % (mh / 1e3, ml / 1e3))
d = load('launchlate')
if d:
    k = {x['kernel']: x for x in d['kernels']}
    u = k.get('_Z6unevenPfi')
    check(u is not None and u['count'] == 4, 'launchlate: all 4 launches of uneven matched (%s)' % (u and u['count']))
    check(u is not None and 0 < u['min_ns'] and u['max_ns'] < 5e9,
          'launchlate: latencies positive and sane (%s)' % (u and (u['min_ns'], u['max_ns'])))
    ids = [x['launch_id'] for x in d.get('per_launch', [])]
    check(len(ids) >= 4 and all(ids) and len(set(ids)) == len(ids),
          'launchlate: one launch id per launch, all distinct %s' % ids[:8])
d = load('memtrace')
if d:
    recs = d['records']
    inr = lambda a: any(rng[2 * i] <= a < rng[2 * i + 1] for i in range(4))
    bad = [r['addr'] for r in recs if not inr(r['addr'])]
    check(len(recs) > 0 and not bad, 'memtrace: %d samples, all in the program buffers (%d outside)' % (len(recs), len(bad)))
    check(d['ops']['store'] > 0 and d['ops']['load'] > 0, 'memtrace: loads and stores seen %s' % d['ops'])
P

# ---- ring stress ----
# kernelretsnoop on 67 launches of 2^20 blocks (bench/tool_bench.cu `burst`,
# 3 warm-up + 64 timed), each recording every 64th block (launches over
# 16384 blocks are sampled: tools/tools_common.h), 1.1 M records in
# ~45 ms: far more than its 16 MiB ring holds between drains, every recording
# block racing for it. Kept + dropped must equal the records expected
# exactly (nothing lost silently, nothing counted twice), the output must
# not change, and the refusals must stay cheap.
BAPP=$B/tests/gpu/tool_bench
if [ ! -x "$BAPP" ]; then
	BAPP=$W/tool_bench
	timeout 300 "$NVCC" -O2 -arch=sm_90 -gencode arch=compute_90,code=compute_90 -o "$BAPP" \
		"$ROOT/bench/tool_bench.cu" >"$L/nvcc-bench.log" 2>&1 || BAPP=
fi
# ring_stress TOOL REPS SHIFT: TOOL on tool_bench's burst (3 + REPS launches
# of 2^20 blocks), each launch recording at most 2^SHIFT of its blocks (a
# regular sample: tools/tools_common.h); kept + dropped must equal the
# records expected and the formatter's count; output unchanged.
# LABEL names the run; DROPS: 1 when the ring must have refused some (the
# check then wants drops), 0 when none may be lost (the record table); ENV...
# for gpuext-run.
ring_stress() {
	local tool=$1 reps=$2 step=$3 label=$4 drops=$5
	shift 5
	timeout 60 "$BAPP" "$reps" burst >"$L/burst-direct-$label.txt" 2>&1
	GPUEXT_KEEP=0 timeout 60 env "$@" "$B/bin/gpuext-run" -v --tool "$tool" -- "$BAPP" "$reps" burst \
		>"$L/burst-$label.txt" 2>"$L/burst-$label.err"
	python3 - "$tool" "$step" "$L/burst-$label.txt" "$L/burst-direct-$label.txt" "$label" "$drops" <<'P' | tee -a "$L/summary.txt"
import re, sys
tool, step, label, want_drops = sys.argv[1], int(sys.argv[2]), sys.argv[5], sys.argv[6] == '1'

t, d = open(sys.argv[3]).read(), open(sys.argv[4]).read()
bl = re.findall(r'^blocks: (\S+) (\d+)$', t, re.M)
def expected(n):  # the blocks a launch of n records under the cap 2^step (tools_common.h)
    m = (n - 1) >> step
    k = m.bit_length()
    return (n - 1) // (1 << k) + 1
# "blocks: NAME TOTAL": the fills are two launches of TOTAL / 2 blocks,
# the burst's launches 2^20 blocks each (bench/tool_bench.cu)
def launches(w, n):
    return (2, n // 2) if w == 'fill' else (n >> 20, 1 << 20)
blocks = sum(k * expected(b) for k, b in (launches(w, int(n)) for w, n in bl))
m = re.search(r'^%s: (\d+) launches, (\d+) block records, (\d+) dropped, (\d+) unattributed, (\d+) expected' % tool, t, re.M)
ck = lambda s: re.findall(r'^checksum: burst (\S+)', s, re.M)
ms = re.findall(r'^bench: burst ([0-9.]+)', t, re.M) + re.findall(r'^bench: burst ([0-9.]+)', d, re.M)
if not m or not blocks:
    print('not ok - tools: %s stress: no summary or block count (see burst-%s.txt)' % (label, label))
else:
    nl, rec, drop, un, exp = map(int, m.groups())
    print('%s - tools: %s stress: %d kept + %d dropped = %d of %d block records expected (%d by the formatter), %d unattributed' %
          ('ok' if rec + drop == blocks == exp and un == 0 and (drop > 0) == want_drops else 'not ok', label, rec, drop, rec + drop, blocks, exp, un))
    print('%s - tools: %s stress: output unchanged (%s vs %s)' %
          ('ok' if ck(t) and ck(t) == ck(d) else 'not ok', label, ck(t), ck(d)))
    if len(ms) == 2:
        print('bench: %s stress: 2^20-block launch %s ms under the tool, %s ms direct' % (label, ms[0], ms[1]))
P
}
if [ -n "$BAPP" ]; then
	# the ring build (GX_KRS_RING=1: 16,384 blocks a launch, every 64th)
	ring_stress kernelretsnoop 64 14 kernelretsnoop_ring 1 GX_KRS_RING=1
	# the default record table: 256 a launch (every 4,096th), 67 launches
	# (fewer than its 256 regions): every record kept, none dropped
	ring_stress kernelretsnoop 64 8 kernelretsnoop_table 0 GX_KRS_RING=0
	# kernelretsnoop_all records every block: 4 launches, 4.2 M records
	ring_stress kernelretsnoop_all 1 64 kernelretsnoop_all 1
fi

# ---- a program whose first launch is inside a graph capture ----
# (tests/gpu/shim/graph.cu: global mode, the module loaded lazily there):
# the tool's context and module setup must not invalidate the capture; a
# module cache of its own, so the rewrite (and its probes) happen there too.
GAPP=$W/graph
if timeout 120 "$NVCC" -arch=sm_90 -o "$GAPP" "$ROOT/tests/gpu/shim/graph.cu" >"$L/graph.nvcc.log" 2>&1 &&
	timeout 30 "$GAPP" >"$L/graph.native" 2>&1; then
	for t in threadhist kernelretsnoop; do
		mkdir -p "$W/gcache-$t" && cp "$GPUEXT_CACHE_DIR"/*.gxpol "$W/gcache-$t/" 2>/dev/null
		GPUEXT_CACHE_DIR=$W/gcache-$t GPUEXT_KEEP=0 timeout 60 "$B/bin/gpuext-run" --tool "$t" -- "$GAPP" \
			>"$L/graph.$t" 2>"$L/graph.$t.err"
		rc=$?
		grep -q '^graph checksum' "$L/graph.$t" && cmp -s <(grep '^graph checksum' "$L/graph.native") <(grep '^graph checksum' "$L/graph.$t") &&
			ok "graph captured at the first launch under $t: same checksum (cold module cache)" ||
			nok "graph captured at the first launch under $t: exit $rc: $(grep -v '^gpuext: ' "$L/graph.$t.err" | tail -2 | tr '\n' ' ')"
	done
else
	nok "graph.cu: $(tail -2 "$L/graph.nvcc.log" "$L/graph.native" 2>/dev/null | tr '\n' ' ')"
fi

# ---- benchmark ----
if [[ ",$SKIP," != *",bench,"* ]]; then
	echo "bench: tools checks took $(($(date +%s) - T0)) s"
	budget=$((${GX_TOOLS_BUDGET:-115} - ($(date +%s) - T0) - 2))
	[ "$budget" -lt 30 ] && budget=30
	REPS=${REPS:-${GX_REPEATS:-11}} TOOL_BENCH_BUDGET=$budget GX_BENCH_OUT=$L timeout $((budget + 30)) \
		bash "$ROOT/bench/tool_overhead.sh" >"$L/bench.log" 2>&1
	grep -E '^(\||bench:|ok - |not ok - )' "$L/bench.log"
fi
exit 0
