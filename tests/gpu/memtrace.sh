#!/usr/bin/env bash
# memtrace at its default sampling (issue 40). The default program
# (tools/memtrace.bpf.c) leaves the decision to the rewriter's sample gate
# (ptx-rewrite/site_sample.c): a countdown of geometric gaps per function,
# decremented and voted before the election, the handler called by every
# lane when sampled (GPU run 101). memtrace_prog (GX_MT_GATE=0) decides in
# the program, its handler inlined at every memory site (run 98: the
# leader's call split warps). The A/B forms of the gate: the leader's hash
# after the election (GX_PTX_SAMPLE_LEADER=1), a voted hash before it
# (GX_PTX_SAMPLE_EARLY=1), the sampled handler inlined (GX_PTX_SAMPLE_INLINE=1).
#  1. golden (tests/gpu/memtrace/golden.cu, 313 warps: one load and one store
#     each, the last warp of 16 lanes), under each program: the full trace
#     (--sample 1) must equal the expected records exactly (op, leader
#     address, lanes, bytes), none dropped; sampled runs (1 in 16 over 400
#     launches, the default 1 in 1024 over 4000) must be subsets of it, with
#     a count within 6 standard deviations of accesses / N; the program's
#     checksum unchanged.
#  2. bench/tool_bench.cu (vadd, gemm, stencil, reduce): native vs each
#     configuration of MT_CFGS (default 1 in 1024), two alternated processes each,
#     REPS batches per process; the best of the processes' medians; ratio
#     table; goal <= 1.5x native; checksums identical.
#  3. the cooperative sample (tests/gpu/coop/gridsync.cu, grid sized by the
#     occupancy API): COOP_PROCS processes natively and under each program,
#     median of their time_ms (20 launches); goal <= 1.5x; sums identical.
#  4. MT_GATE_AB=1: the sample gate's parts timed on the cooperative kernel
#     (tests/gpu/coop/gate_ab.cu, gate_variants.py), no goal.
# Needs build/cache (make gpu-prep: memtrace's JIT'd program). Logs: $OUT/memtrace.
# Env: REPS (11), COOP_PROCS (5), MT_BUDGET (200 s for the whole part),
# MT_CFGS (the bench's configurations, see cfg_env: direct memtrace prog
# leader ...; each also runs the cooperative sample).
set -u
ROOT=${GX_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
B=${GX_BUILD:-$ROOT/build}
OUT=${OUT:-$B/gpu-out}
L=$OUT/memtrace
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
REPS=${REPS:-11}
COOP_PROCS=${COOP_PROCS:-5}
BUDGET=${MT_BUDGET:-200}
T0=$(date +%s)
mkdir -p "$L"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
ok() { echo "ok - memtrace: $*"; }
nok() { echo "not ok - memtrace: $*"; }
left() { echo $((BUDGET - ($(date +%s) - T0))); }
export GPUEXT_CACHE_DIR=${GPUEXT_CACHE_DIR:-$B/cache}
export GPUEXT_TOOLS_DIR=$B/share/gpuext/tools
export GPUEXT_SHM_DIR=$W/shm
mkdir -p "$GPUEXT_SHM_DIR"
[ -x "$B/bin/gpuext-run" ] && [ -e "$B/lib/libcuda.so.1" ] || { nok "build/ has no gpuext-run or shim (run make)"; exit 1; }

# ---- the programs (compiled in parallel; tool_bench from make gpu-prep if there)
cc() { timeout 200 "$NVCC" -O2 -arch=sm_90 -gencode arch=compute_90,code=compute_90 -o "$1" "$2" >"$L/nvcc-$(basename "$1").log" 2>&1; }
GOLD=$W/golden COOP=$W/gridsync BENCH=$B/tests/gpu/tool_bench
cc "$GOLD" "$ROOT/tests/gpu/memtrace/golden.cu" &
p1=$!
cc "$COOP" "$ROOT/tests/gpu/coop/gridsync.cu" &
p2=$!
if [ ! -x "$BENCH" ]; then BENCH=$W/tool_bench; cc "$BENCH" "$ROOT/bench/tool_bench.cu"; fi
wait $p1 $p2
for p in "$GOLD" "$COOP" "$BENCH"; do
	[ -x "$p" ] || { nok "nvcc $(basename "$p"): $(tail -2 "$L/nvcc-$(basename "$p").log" 2>/dev/null | tr '\n' ' ')"; exit 1; }
done
echo "# programs built in $(($(date +%s) - T0)) s"

# memtrace's run of a program: JSON report on stdout, -v log on stderr.
mt() { # name timeout [gpuext-run options] -- cmd...
	local name=$1 tmo=$2
	shift 2
	GPUEXT_KEEP=0 timeout "$tmo" "$B/bin/gpuext-run" -v --tool memtrace "$@" >"$L/$name.json" 2>"$L/$name.err"
	local rc=$?
	rm -rf "${GPUEXT_SHM_DIR:?}"/* # a bench run's records: ~100 MB
	grep -q "running without it" "$L/$name.err" && nok "$name: not attached: $(grep 'running without it' "$L/$name.err" | head -1)"
	return $rc
}

# ---- 1. golden
timeout 60 "$GOLD" 1 2>"$L/golden-native.err" || nok "golden natively: $(tail -1 "$L/golden-native.err")"
mt golden-full 60 --sample 1 --json -- "$GOLD" 1 || nok "golden full trace: exit $?"
mt golden-16 60 --sample 16 --json -- "$GOLD" 400 || nok "golden 1 in 16: exit $?"
mt golden-1024 60 --json -- "$GOLD" 4000 || nok "golden 1 in 1024: exit $?"
GX_MT_GATE=0 mt prog-golden-full 60 --sample 1 --json -- "$GOLD" 1 || nok "memtrace_prog golden full trace: exit $?"
GX_MT_GATE=0 mt prog-golden-16 60 --sample 16 --json -- "$GOLD" 400 || nok "memtrace_prog golden 1 in 16: exit $?"
GX_MT_GATE=0 mt prog-golden-1024 60 --json -- "$GOLD" 4000 || nok "memtrace_prog golden 1 in 1024: exit $?"
# the A/B forms: the leader's hash (its test folded into the leader flag
# of the every-lane call), and the full trace's handler called by every lane
GX_PTX_SAMPLE_LEADER=1 mt leader-golden-16 60 --sample 16 --json -- "$GOLD" 400 || nok "leader golden 1 in 16: exit $?"
GX_PTX_MEM_INLINE=0 mt call-golden-full 60 --sample 1 --json -- "$GOLD" 1 || nok "called golden full trace: exit $?"
# samples kept for the loop's end (GX_PTX_MEM_DEFER=1: predicated in the
# loop, grouped by stamp at the flush) on the loop form of the same
# accesses: the same records expected
GX_PTX_MEM_DEFER=1 mt defer-golden-16 60 --sample 16 --json -- "$GOLD" 400 loop || nok "deferred golden 1 in 16: exit $?"
GX_PTX_MEM_DEFER=1 mt defer-golden-1024 60 --json -- "$GOLD" 4000 loop || nok "deferred golden 1 in 1024: exit $?"
mt loop-golden-full 60 --sample 1 --json -- "$GOLD" 1 loop || nok "loop golden full trace: exit $?"
python3 - "$L" <<'P'
import json, re, sys
L = sys.argv[1]
def line(name):
    for l in open('%s/%s.err' % (L, name)):
        m = re.search(r'golden: in (0x[0-9a-f]+) out (0x[0-9a-f]+) n (\d+) warps (\d+) launches (\d+) checksum (\S+) status (.*)', l)
        if m:
            return m
    return None
def say(good, msg):
    print('%s - memtrace: %s' % ('ok' if good else 'not ok', msg))
nat = line('golden-native')
if not nat:
    say(False, 'golden natively: no result line'); sys.exit(0)
n, warps = int(nat.group(3)), int(nat.group(4))
runs = [(p + 'golden-' + s, e) for p in ('', 'prog-') for s, e in (('full', 1), ('16', 16), ('1024', 1024))]
for name, every in runs + [('leader-golden-16', 16), ('call-golden-full', 1), ('defer-golden-16', 16),
                           ('defer-golden-1024', 1024), ('loop-golden-full', 1)]:
    g = line(name)
    try:
        d = json.load(open('%s/%s.json' % (L, name)))
    except Exception as e:
        say(False, '%s: no JSON report (%s)' % (name, e)); continue
    if not g:
        say(False, '%s: the program printed no result' % name); continue
    say(g.group(6) == nat.group(6) and g.group(7).strip() == 'no error',
        '%s: checksum as native (%s vs %s)' % (name, g.group(6), nat.group(6)))
    base = {'load': int(g.group(1), 16), 'store': int(g.group(2), 16)}
    # a record names its warp by the leader's address: elect.sync picks a
    # lane of the warp deterministically (the lowest on the H100 so far),
    # so the address must be one the warp's active lanes made
    def key(r):
        off = r['addr'] - base.get(r['op'], 0)
        w, lane = off // 128, off % 128 // 4
        ok = off >= 0 and off % 4 == 0 and w < warps and lane < min(32, n - 32 * w)
        return (r['op'], w if ok else -1, r['lanes'], r['size']), lane
    want = {}
    for op in ('load', 'store'):
        for w in range(warps):
            want[(op, w, min(32, n - 32 * w), 4)] = 0
    recs = [r for r in d['records'] if 'twice' in r['kernel']]
    keys = [key(r)[0] for r in recs]
    lanes = [key(r)[1] for r in recs]
    launches = int(g.group(5))
    accesses = 2 * warps * launches
    outside = [k for k in keys if k not in want]
    if every == 1:
        got = {}
        for k in keys:
            got[k] = got.get(k, 0) + 1
        exact = d['drops'] == 0 and len(keys) == accesses and all(got.get(k) == launches for k in want)
        say(exact, '%s: %d records = the %d expected (op, warp by its leader\'s address, lanes, bytes) exactly, %d dropped, %d unexpected%s'
            % (name, len(keys), accesses, d['drops'], len(outside), '' if exact else ': %s' % outside[:3]))
        low = sum(1 for x in lanes if x == 0)
        print('# %s: the leader was the lowest active lane in %d of %d records%s'
              % (name, low, len(lanes), ' (addresses = in/out + 128 w exactly)' if low == len(lanes) else ''))
    else:
        mean = accesses / every
        sd = (accesses * (1 / every) * (1 - 1 / every)) ** 0.5
        cnt = d['samples']
        lost = d.get('lost', 0)  # kept samples a lane could not keep (GX_PTX_MEM_DEFER)
        say(d['drops'] == 0 and lost == 0 and abs(cnt - mean) <= 6 * sd + 1,
            '%s: %d samples of %d warp accesses (1 in %d: expected %.0f +- %.0f), %d dropped, %d not kept'
            % (name, cnt, accesses, every, mean, sd, d['drops'], lost))
        say(len(keys) > 0 and not outside,
            '%s: all %d records are accesses of the full trace (%d are not)' % (name, len(keys), len(outside)))
        print('| golden 1 in %d | %d accesses | %d samples | expected %.0f +- %.0f |' % (every, accesses, cnt, mean, sd))
P

# ---- 2. tool_bench: native and each configuration
WL=vadd,gemm,stencil,reduce
CFGS=${MT_CFGS:-direct memtrace prog leader early inline nocap}
# a configuration's environment: memtrace (the default: countdown, handler
# called by every lane when sampled), prog (memtrace_prog: the program
# samples, its handler inlined), leader (the leader's hash after the
# election), early (a voted hash before it), inline (the sampled handler
# inlined), nocap (the kernels not capped at their original registers),
# ls16 (the default launch sample: 16 first, then 1 in 16; the others
# every launch, as tests/gpu/run.sh sets), slack8 (capped 8 registers above
# the originals: GX_PTX_MEM_CAP=+8), defer (sites in loops keep their sample
# for the loop's end, no branch in the loop: GX_PTX_MEM_DEFER=1)
cfg_env() {
	case $1 in
	memtrace) echo GX_MT_GATE=1 ;;
	prog) echo GX_MT_GATE=0 ;;
	leader) echo GX_PTX_SAMPLE_LEADER=1 ;;
	early) echo GX_PTX_SAMPLE_EARLY=1 ;;
	inline) echo GX_PTX_SAMPLE_INLINE=1 ;;
	nocap) echo GX_PTX_MEM_CAP=0 GX_PTX_REG_CAP=0 ;;
	ls16) echo GPUEXT_LAUNCH_SAMPLE=16 ;;
	slack8) echo GX_PTX_MEM_CAP=+8 ;;
	defer) echo GX_PTX_MEM_DEFER=1 ;;
	*) echo GX_MT_UNKNOWN_CFG=1 ;;
	esac
}
# MT_BENCH=0: the cooperative sample alone (its per-launch A/B)
for round in $([ "${MT_BENCH:-1}" = 0 ] || echo 1 2); do
	for cfg in $CFGS; do
		t=$(left)
		[ "$t" -gt 60 ] || { nok "bench: $cfg round $round not run: $t s of the budget left"; continue; }
		t=$((t - 40 < 100 ? t - 40 : 100))
		log=$L/bench-$cfg-$round
		t1=$(date +%s)
		if [ "$cfg" = direct ]; then
			timeout "$t" "$BENCH" "$REPS" "$WL" >"$log.json" 2>"$log.err"
		else
			(export $(cfg_env "$cfg"); mt "bench-$cfg-$round" "$t" -- "$BENCH" "$REPS" "$WL")
		fi
		rc=$?
		[ $rc -eq 0 ] || nok "bench: $cfg round $round exited $rc"
		echo "bench: memtrace wall $cfg round $round $(($(date +%s) - t1)) s"
	done
done
grep -h '^memtrace: ' "$L"/bench-*.json 2>/dev/null | head -8 | sed 's/^/bench: memtrace summary /'
grep -ho 'rewritten ([0-9]* hooks)' "$L"/bench-memtrace-1.err 2>/dev/null | sort | uniq -c | head -3 | sed 's/^ */bench: memtrace modules /'

# ---- 3. the cooperative sample
if [ "$(left)" -gt 25 ]; then
	for i in $(seq "$COOP_PROCS"); do
		timeout 30 "$COOP" >"$L/coop-native-$i.out" 2>&1
		for cfg in $CFGS; do
			[ "$cfg" = direct ] || (export $(cfg_env "$cfg"); mt "coop-$cfg-$i" 30 -- "$COOP")
		done
	done
else
	nok "coop: not run: $(left) s of the budget left"
fi

# ---- 4. MT_GATE_AB=1: the gate's parts timed on the cooperative kernel
# (tests/gpu/coop/gate_ab.cu over gate_variants.py's PTX variants, made
# here from nvcc's PTX and the rewriter's uncapped gate): registers, blocks
# per SM, median launch time against the original. No goal: where the
# time goes (session 34: block 0's unrolled sum, serial_gate/serial_pred).
if [ "${MT_GATE_AB:-0}" = 1 ]; then
	G=$W/gate
	mkdir -p "$G"
	if timeout 120 "$NVCC" --ptx -arch=sm_90 -o "$G/grid.ptx" "$ROOT/tests/gpu/coop/gridsync.cu" >"$L/gate-nvcc.log" 2>&1 &&
		GX_PTX_MEM_CAP=0 "$B/bin/gpuext" ptx rewrite --policy "$B/share/gpuext/tools/memtrace_gate.bpf.o" \
			--sample 1024 --regs _Z11reduce_gridPKiPxS1_Pii=30 "$G/grid.ptx" -o "$G/gated.ptx" >>"$L/gate-nvcc.log" 2>&1 &&
		python3 "$ROOT/tests/gpu/coop/gate_variants.py" "$G/grid.ptx" "$G/gated.ptx" "$G" >>"$L/gate-nvcc.log" 2>&1 &&
		timeout 120 "$NVCC" -O2 -o "$G/gate_ab" "$ROOT/tests/gpu/coop/gate_ab.cu" -L"$(dirname "$NVCC")/../lib64/stubs" -lcuda >>"$L/gate-nvcc.log" 2>&1; then
		(cd "$G" && timeout 120 ./gate_ab 5 native.ptx gate.ptx gate_nocall.ptx serial_gate.ptx serial_pred.ptx \
			deferred.ptx deferred_br.ptx) >"$L/gate_ab.txt" 2>&1 &&
			ok "gate_ab: the gate's parts timed ($L/gate_ab.txt)" || nok "gate_ab exited $?: $(tail -2 "$L/gate_ab.txt" | tr '\n' ' ')"
		sed 's/^/bench: memtrace gate_ab /' "$L/gate_ab.txt"
	else
		nok "gate_ab: not built: $(tail -3 "$L/gate-nvcc.log" | tr '\n' ' ')"
	fi
fi

python3 - "$L" "$WL" "$CFGS" <<'P'
import glob, re, statistics, sys
L, wl = sys.argv[1], sys.argv[2].split(',')
def say(good, msg):
    print('%s - memtrace: %s' % ('ok' if good else 'not ok', msg))
med, ck = {}, {}
names = {'memtrace': 'memtrace (countdown, called)', 'prog': 'memtrace_prog (in the program)'}
cfgs = [c for c in sys.argv[3].split() if c != 'direct']
for cfg in ['direct'] + cfgs:
    for f in sorted(glob.glob('%s/bench-%s-*.json' % (L, cfg))):
        for l in open(f):
            m = re.match(r'bench: (\S+) ([0-9.]+) ([0-9.]+)', l)
            if m: med.setdefault((cfg, m.group(1)), []).append(float(m.group(2)))
            m = re.match(r'checksum: (\S+) (\S+)', l)
            if m: ck.setdefault((cfg, m.group(1)), set()).add(m.group(2))
print('| workload (1 in 1024) | native | ' + ' | '.join('%s | ratio' % names.get(c, c) for c in cfgs) + ' |')
print('|---|---|' + '---|---|' * len(cfgs))
for w in wl:
    d = min(med[('direct', w)]) if med.get(('direct', w)) else None
    vs = [min(med[(k, w)]) if med.get((k, w)) else None for k in cfgs]
    cell = lambda v: '%.3f ms' % v if v else '—'
    ratio = lambda v: '%.2fx' % (v / d) if v and d else '—'
    print('| %s | %s | ' % (w, cell(d)) + ' | '.join('%s | %s' % (cell(v), ratio(v)) for v in vs) + ' |')
    for k, v in zip(cfgs, vs):
        if d and v:
            print('bench: memtrace %s %s %.3f ms native %.3f ms ratio %.3f' % (w, k, v, d, v / d))
        say(bool(d and v and v <= 1.5 * d), '%s under %s (1 in 1024) %s native (goal <= 1.5x)' % (w, k, ratio(v)))
        if ck.get(('direct', w)) and ck.get((k, w)):
            say(ck[(k, w)] == ck[('direct', w)], '%s output of %s identical (%s)' % (k, w, '/'.join(sorted(ck[(k, w)]))))
# the cooperative sample
def coop(pat):
    t, s, b = [], set(), set()
    for f in sorted(glob.glob(pat)):
        txt = open(f).read()
        m = re.search(r'sum (\d+) bad 0 status no error', txt)
        n = re.search(r'blocks (\d+) \((\d+) per SM\) time_ms ([0-9.]+)', txt)
        if m and n:
            s.add(m.group(1)); b.add(n.group(2)); t.append(float(n.group(3)))
        p = re.search(r'launch_ms first ([0-9.]+) median ([0-9.]+)', txt)
        if m and p:
            per.setdefault(pat, []).append((float(p.group(1)), float(p.group(2))))
    return t, s, b
# each launch's GPU time (events between launches): the first apart
per = {}
def launches(pat):
    v = per.get(pat, [])
    if not v:
        return 'no per-launch times'
    return 'first launch %.3f ms, the others %.4f ms (medians over %d processes)' % (
        statistics.median(x[0] for x in v), statistics.median(x[1] for x in v), len(v))
nt, ns, nb = coop('%s/coop-native-*.out' % L)
for cfg in [c for c in sys.argv[3].split() if c != 'direct']:
    mt, ms, mb = coop('%s/coop-%s-*.json' % (L, cfg))
    if nt and mt:
        a, b = statistics.median(nt), statistics.median(mt)
        print('| cooperative gridsync (20 launches), %s | %.3f ms (%s per SM) | %.3f ms (%s per SM) | %.2fx | | |'
              % (cfg, a, '/'.join(sorted(nb)), b, '/'.join(sorted(mb)), b / a))
        print('bench: memtrace coop %s native %.3f ms memtrace %.3f ms ratio %.3f (%d/%d processes)' % (cfg, a, b, b / a, len(nt), len(mt)))
        print('bench: memtrace coop per launch: native %s; %s %s' % (launches('%s/coop-native-*.out' % L), cfg,
              launches('%s/coop-%s-*.json' % (L, cfg))))
        say(b <= 1.5 * a, 'cooperative sample under %s %.2fx native (goal <= 1.5x)' % (cfg, b / a))
        say(len(ns) == 1 and ns == ms, 'cooperative sample: same sum natively and under %s (%s vs %s)' % (cfg, ns, ms))
    else:
        say(False, 'cooperative sample: %d native and %d %s runs finished' % (len(nt), len(mt), cfg))
P
echo "# memtrace part: $(($(date +%s) - T0)) s"
