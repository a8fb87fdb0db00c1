#!/usr/bin/env bash
# graphmetrics.sh — kernels run through CUDA graphs, counted and timed, and
# kernelretsnoop's device map, on the GPU (issue 38, docs/metrics.md):
#  1. a JAX training loop (tests/gpu/ml/jax_train_phases.py: WARM steps,
#     PHASE 1, STEPS steps, PHASE 2) under `gpuext-run --ptxas --tool
#     kernelretsnoop`, twice: XLA's command buffers on (the default: steps
#     run as CUDA graphs) and off (XLA_FLAGS=--xla_gpu_enable_command_buffer=,
#     every kernel a launch). gpuext-exporter --once at each phase, with
#     deploy/exporter/kernelretsnoop.conf. Between the phases:
#       - graphs on: graph launches > 0 (XLA used graphs), none when off;
#       - launches per step exported, graphs on = graphs off (the kernel
#         runs counted without graphs: the independent count);
#       - kernelretsnoop's map (launches whose block 0 finished, seen on
#         the device) = the instrumented launches the host counted, in all
#         and per decoded kernel name;
#       - graph launches timed, with GPU time; the tool's report at exit
#         agrees with the last exposition (launches, graph kernel nodes);
#  2. A/B of the map's device cost: bench/tool_bench (vadd, gemm, stencil,
#     reduce) under kernelretsnoop with krs_counts and without
#     (GPUEXT_TOOLS_DIR=build/tests/gpu/krs_nocount, built by make gpu-prep),
#     alternated A B A B, medians per workload.
# ~2 minutes. Knobs: GM_STEPS (300), GM_WARM (20).
set -u
ROOT=${GX_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
B=${GX_BUILD:-$ROOT/build}
OUT=${OUT:-$B/gpu-out}
L=$OUT/graphmetrics
STEPS=${GM_STEPS:-300}
WARM=${GM_WARM:-20}
RUN=$B/bin/gpuext-run
EXP=$B/bin/gpuext-exporter
mkdir -p "$L"
W=$(mktemp -d)
# the shipped config, every kernel named (the per-kernel check compares all)
CONF=$W/exporter.conf
{ cat "$ROOT/deploy/exporter/kernelretsnoop.conf"; echo "top_kernels 1000"; } >"$CONF"
kids=()
cleanup() {
	for p in "${kids[@]}"; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$W"
}
trap cleanup EXIT
: >"$L/summary.txt"
ok() { echo "ok - graphmetrics: $*" | tee -a "$L/summary.txt"; }
nok() { echo "not ok - graphmetrics: $*" | tee -a "$L/summary.txt"; }
bench() { echo "bench: graphmetrics: $*" | tee -a "$L/summary.txt"; }
export GPUEXT_CACHE_DIR=${GPUEXT_CACHE_DIR:-$B/cache} GPUEXT_STATS_MS=200 PATH=$PATH:/usr/local/cuda/bin
export GPUEXT_TOOLS_DIR=$B/share/gpuext/tools
# the map is kernelretsnoop's opt-in variant (kernelretsnoop_counts)
export GX_KRS_COUNTS=1
"$EXP" --help >/dev/null 2>&1 || export LD_LIBRARY_PATH=$B/tests/gpu/mhd${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
"$EXP" --help >/dev/null 2>&1 || { nok "$EXP does not run: $("$EXP" --help 2>&1 | head -1)"; exit 0; }

# ---- 1. JAX, graphs on and off ----
# waitfor FILE PATTERN SECS PID: until the line comes, the time is up or PID is gone
waitfor() {
	local t=0
	while ! grep -q "$2" "$1" 2>/dev/null && [ $t -lt $(($3 * 10)) ] && kill -0 "$4" 2>/dev/null; do
		sleep 0.1
		t=$((t + 1))
	done
	grep -q "$2" "$1" 2>/dev/null
}
# jaxrun NAME XLA_FLAGS: the loop under kernelretsnoop, scraped at both phases
jaxrun() {
	local n=$1 shm=$W/shm-$1
	mkdir -m 700 "$shm"
	env GPUEXT_SHM_DIR="$shm" XLA_FLAGS="$2" JAX_COMPILATION_CACHE_DIR="$W/jaxcache-$n" WARM="$WARM" STEPS="$STEPS" \
		PAUSE_S=3 timeout 200 "$RUN" -v --ptxas --tool kernelretsnoop -- python3 "$ROOT/tests/gpu/ml/jax_train_phases.py" \
		>"$L/$n.out" 2>"$L/$n.err" &
	local p=$!
	kids+=("$p")
	for ph in 1 2; do
		if waitfor "$L/$n.out" "^PHASE $ph" $((ph == 1 ? 90 : 45)) "$p"; then
			sleep 1.5 # a stats file and a map flush since (200 ms each)
			timeout 20 "$EXP" --once --dir "$shm" --config "$CONF" >"$L/$n.phase$ph.prom" 2>"$L/$n.exp$ph.err"
		else
			nok "$n: no PHASE $ph line: $(grep -v '^gpuext: module' "$L/$n.err" | tail -3 | tr '\n' ' ')"
			pkill -9 -P "$p" 2>/dev/null
			kill -9 "$p" 2>/dev/null
			break
		fi
	done
	wait "$p"
	echo $? >"$L/$n.rc"
}
# plain NAME CMD...: the loop without the tool (no scrapes), for its time per step
plain() {
	local n=$1
	shift
	env XLA_FLAGS="" JAX_COMPILATION_CACHE_DIR="$W/jaxcache-$n" WARM="$WARM" STEPS="$STEPS" PAUSE_S=0 \
		timeout 120 "$@" python3 "$ROOT/tests/gpu/ml/jax_train_phases.py" >"$L/$n.out" 2>"$L/$n.err"
	sed -n 's/^PHASE 2 .*ms_per_step \([0-9.]*\).*/\1/p' "$L/$n.out"
}
jaxrun graphs ""
jaxrun nographs "--xla_gpu_enable_command_buffer="
# the cost of listing every exec's kernels at instantiation (no tool): the
# shim alone against native, graphs on
mkdir -m 700 "$W/shm-shim"
MS_NATIVE=$(plain native env)
MS_SHIM=$(GPUEXT_SHM_DIR=$W/shm-shim plain shim "$RUN" --)
bench "JAX step, graphs on: native ${MS_NATIVE:-?} ms, under the shim without a tool ${MS_SHIM:-?} ms"

python3 - "$L" "$STEPS" <<'P' | tee -a "$L/summary.txt"
import re, sys
L, steps = sys.argv[1], int(sys.argv[2])
def prom(path):
    s = {}
    try:
        for line in open(path):
            m = re.match(r'^([a-z_]+)\{([^}]*)\} ([0-9.e+-]+)$', line.strip())
            if m:
                lab = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
                s.setdefault(m.group(1), []).append((lab, float(m.group(3))))
    except OSError:
        pass
    return s
def total(s, name, **want):
    return sum(v for lab, v in s.get(name, []) if all(lab.get(k) == w for k, w in want.items()))
def out(good, msg):
    print('%s - graphmetrics: %s' % ('ok' if good else 'not ok', msg))
res = {}
for n in ('graphs', 'nographs'):
    a, b = prom('%s/%s.phase1.prom' % (L, n)), prom('%s/%s.phase2.prom' % (L, n))
    d = lambda name, **w: total(b, name, **w) - total(a, name, **w)
    r = {k: d('gpuext_process_' + k) for k in ('launches_total', 'launches_instrumented_total', 'graph_launches_total',
                                               'graph_kernel_launches_total', 'graph_timed_launches_total',
                                               'sampled_graph_gpu_seconds_total')}
    r['krs'] = d('gpuext_krs_launches_total')
    r['final_launches'] = total(b, 'gpuext_process_launches_total')
    r['final_gk'] = total(b, 'gpuext_process_graph_kernel_launches_total')
    # per kernel: the device's count against the host's, for names the exporter decoded
    kern = {}
    for lab, v in b.get('gpuext_krs_launches_total', []):
        if lab.get('kernel') not in (None, 'other'):
            kern[lab['kernel']] = (d('gpuext_krs_launches_total', kernel=lab['kernel']),
                                   d('gpuext_kernel_launches_total', kernel=lab['kernel']))
    r['kern'] = kern
    try:
        err, o = open('%s/%s.err' % (L, n), errors='replace').read(), open('%s/%s.out' % (L, n), errors='replace').read()
    except OSError:
        err = o = ''
    m = re.search(r'launches \(seen host-side\): (\d+), (\d+) instrumented', o + err)
    r['report'] = int(m.group(1)) if m else None
    m = re.search(r'of them (\d+) kernel nodes of (\d+) graph launches \((\d+) timed', o + err)
    r['report_gk'] = int(m.group(1)) if m else 0
    m = re.search(r'PHASE 2 loss (\S+) steps \d+ ms_per_step (\S+)', o)
    r['loss'], r['ms'] = (m.group(1), float(m.group(2))) if m else (None, 0)
    res[n] = r
    print('| %s | launches/step %.2f | instrumented/step %.2f | graph launches/step %.2f | graph kernel nodes/step %.2f '
          '| krs device launches/step %.2f | graph launches timed %d | ms/step %.4f |' %
          (n, r['launches_total'] / steps, r['launches_instrumented_total'] / steps, r['graph_launches_total'] / steps,
           r['graph_kernel_launches_total'] / steps, r['krs'] / steps, r['graph_timed_launches_total'], r['ms']))
g, ng = res['graphs'], res['nographs']
out(g['graph_launches_total'] > 0 and g['graph_kernel_launches_total'] > 0,
    'XLA command buffers on: %d graph launches running %d kernel nodes in %d steps' %
    (g['graph_launches_total'], g['graph_kernel_launches_total'], steps))
out(ng['graph_launches_total'] == 0 and ng['launches_total'] > 0,
    'command buffers off: no graph launches, %d launches' % ng['launches_total'])
lg, lng = g['launches_total'] / steps, ng['launches_total'] / steps
out(lng > 0 and abs(lg - lng) <= 0.02 * lng,
    'exported launches per step with graphs %.2f = without graphs %.2f (the kernel runs, counted directly)' % (lg, lng))
for n, r in res.items():
    out(r['krs'] > 0 and r['krs'] == r['launches_instrumented_total'],
        '%s: kernelretsnoop map, launches seen finishing on the device %d = instrumented launches counted by the host %d'
        % (n, r['krs'], r['launches_instrumented_total']))
    bad = {k: v for k, v in r['kern'].items() if v[0] != v[1]}
    out(r['kern'] and not bad, '%s: per kernel name decoded from the map (%d kernels): device = host launches%s' %
        (n, len(r['kern']), ', differing: %s' % dict(list(bad.items())[:4]) if bad else ''))
    out(r['report'] is not None and r['report'] == r['final_launches'] and r['report_gk'] == r['final_gk'],
        '%s: the tool report at exit, %s launches (%d graph kernel nodes) = the last exposition %d (%d)' %
        (n, r['report'], r['report_gk'], r['final_launches'], r['final_gk']))
out(g['graph_timed_launches_total'] > 0 and g['sampled_graph_gpu_seconds_total'] > 0,
    'graph launches timed: %d, %.3f ms of graph GPU time' %
    (g['graph_timed_launches_total'], g['sampled_graph_gpu_seconds_total'] * 1e3))
if g['graph_timed_launches_total'] > 0 and g['graph_launches_total'] > 0:
    gpl = g['sampled_graph_gpu_seconds_total'] / g['graph_timed_launches_total'] * 1e3
    print('bench: graphmetrics: mean timed graph launch %.4f ms, %.2f graph launches per step, %.4f ms per step (graphs), '
          '%.4f ms per step (no graphs)' % (gpl, g['graph_launches_total'] / steps, g['ms'], ng['ms']))
out(g['loss'] is not None and g['loss'] == ng['loss'], 'same loss with and without graphs (%s, %s)' % (g['loss'], ng['loss']))
P
for n in graphs nographs; do
	if [ "$(cat "$L/$n.rc" 2>/dev/null)" = 0 ]; then ok "$n: exit 0"; else nok "$n: exit $(cat "$L/$n.rc" 2>/dev/null)"; fi
done

# ---- 2. the map's device cost: A/B on tool_bench ----
BAPP=$B/tests/gpu/tool_bench
NOC=$B/tests/gpu/krs_nocount
if [ -x "$BAPP" ] && [ -f "$NOC/kernelretsnoop.bpf.o" ]; then
	timeout 60 "$BAPP" 21 >"$L/ab-native.txt" 2>&1
	for i in 1 2; do
		for arm in map nomap; do
			dir=$GPUEXT_TOOLS_DIR counts=1
			[ $arm = nomap ] && dir=$NOC counts=0
			[ -d "$W/ab-shm" ] || mkdir -m 700 "$W/ab-shm"
			GX_KRS_COUNTS=$counts GPUEXT_TOOLS_DIR=$dir GPUEXT_SHM_DIR=$W/ab-shm timeout 90 "$RUN" -v --tool kernelretsnoop -- "$BAPP" 21 \
				>"$L/ab-$arm-$i.txt" 2>"$L/ab-$arm-$i.err"
		done
	done
	python3 - "$L" <<'P' | tee -a "$L/summary.txt"
import re, statistics, sys
L = sys.argv[1]
def rd(f):
    try:
        return {w: float(ms) for w, ms in re.findall(r'^bench: (\S+) ([0-9.]+)', open('%s/%s' % (L, f)).read(), re.M)}
    except OSError:
        return {}
nat = rd('ab-native.txt')
arms = {a: [rd('ab-%s-%d.txt' % (a, i)) for i in (1, 2)] for a in ('map', 'nomap')}
ws = sorted(set(nat) & set.intersection(*[set(x) for v in arms.values() for x in v])) if all(all(v) for v in arms.values()) else []
print('| workload | native ms | kernelretsnoop without map ms | with krs_counts ms | map cost |')
worst = 0
for w in ws:
    m = statistics.median([x[w] for x in arms['map']])
    n = statistics.median([x[w] for x in arms['nomap']])
    c = (m - n) / n * 100 if n else 0
    worst = max(worst, c)
    print('| %s | %.3f | %.3f | %.3f | %+.1f %% |' % (w, nat.get(w, 0), n, m, c))
print('%s - graphmetrics: krs_counts A/B on tool_bench (%d workloads, A B A B, medians): worst %+.1f %% (loose bound 10 %%)' %
      ('ok' if ws and worst <= 10 else 'not ok', len(ws), worst))
P
	# the map must not change what the ring records
	for i in 1 2; do
		for arm in map nomap; do
			grep -q '^kernelretsnoop: [0-9]* launches' "$L/ab-$arm-$i.txt" || nok "A/B $arm $i: no kernelretsnoop report"
		done
	done
else
	nok "A/B: no $BAPP or $NOC/kernelretsnoop.bpf.o (make gpu-prep)"
fi
