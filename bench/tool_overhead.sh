#!/usr/bin/env bash
# Overhead of each tool on four workloads (bench/tool_bench.cu: vector add,
# GEMM, stencil, reduction; each timed batch >= 1 ms on the H200), median of
# REPS batches: direct (no shim) vs the shim without a tool vs each tool.
# Prints a markdown table of medians and ratios to direct, `bench:` lines,
# and ok/not ok for the goal (<= 3 % over direct for kernelretsnoop,
# threadhist, launchlate; memtrace and kernelretsnoop_all, which records
# every block of large launches, reported as measured). Checksums must not
# change under any configuration. Needs the JIT cache (make gpu-prep).
# Time: the whole benchmark keeps within TOOL_BENCH_BUDGET seconds (a run
# is cut at what is left; the table shows the workloads it finished), and
# memtrace, the slow tool, times REPS_SLOW batches (medians either way).
# Env: GX_BUILD, GX_BENCH_OUT (logs), REPS (21), REPS_SLOW (REPS, at most 5),
# TOOL_BENCH_TIMEOUT (300 s per run), TOOL_BENCH_BUDGET (900 s in all),
# TOOL_BENCH_CONFIGS (a subset or order of the configurations, `direct`
# first), GPUEXT_TOOLS_DIR (the tools' objects: an A/B of a tool's variant),
# TOOL_BENCH_WL (the workloads, comma-separated: the default four, or with
# rowsoftmax, whose warps meet at barriers: reported, not held to the goal).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=${GX_BUILD:-$ROOT/build}
OUTD=${GX_BENCH_OUT:-${OUT:-$B/gpu-out}/tools}
REPS=${REPS:-21}
REPS_SLOW=${REPS_SLOW:-$((REPS < 5 ? REPS : 5))}
TMO=${TOOL_BENCH_TIMEOUT:-300}
BUDGET=${TOOL_BENCH_BUDGET:-900}
T0=$(date +%s)
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
mkdir -p "$OUTD"
export GPUEXT_CACHE_DIR=${GPUEXT_CACHE_DIR:-$B/cache}
export GPUEXT_TOOLS_DIR=${GPUEXT_TOOLS_DIR:-$B/share/gpuext/tools}
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
APP=$B/tests/gpu/tool_bench
if [ ! -x "$APP" ]; then
	APP=$W/tool_bench
	timeout 300 "$NVCC" -O2 -arch=sm_90 -gencode arch=compute_90,code=compute_90 -o "$APP" "$ROOT/bench/tool_bench.cu" \
		>"$OUTD/bench-nvcc.log" 2>&1 || { echo "not ok - bench: nvcc tool_bench.cu failed"; exit 1; }
fi
configs=${TOOL_BENCH_CONFIGS:-direct shim kernelretsnoop kernelretsnoop_all threadhist launchlate memtrace}
WL=${TOOL_BENCH_WL:-vadd,gemm,stencil,reduce}
for cfg in $configs; do
	log=$OUTD/bench-$cfg.log
	left=$((BUDGET - ($(date +%s) - T0)))
	tmo=$((left < TMO ? left : TMO))
	if [ "$tmo" -lt 5 ]; then
		echo "not ok - bench: $cfg not run: the ${BUDGET} s budget is spent"; continue
	fi
	reps=$REPS
	[ "$cfg" = memtrace ] && reps=$REPS_SLOW
	t1=$(date +%s)
	case $cfg in
	direct) timeout "$tmo" "$APP" "$reps" "$WL" >"$log" 2>&1 ;;
	shim) timeout "$tmo" env LD_LIBRARY_PATH="$B/lib" GPUEXT_LOG=info "$APP" "$reps" "$WL" >"$log" 2>"$log.err" ;;
	*) GPUEXT_SHM_DIR=$W/shm timeout "$tmo" "$B/bin/gpuext-run" -v --tool "$cfg" -- "$APP" "$reps" "$WL" >"$log" 2>"$log.err" ;;
	esac
	rc=$?
	echo "bench: tool_overhead wall $cfg $(($(date +%s) - t1)) s ($reps batches per workload)"
	[ $rc -eq 0 ] || echo "not ok - bench: $cfg run exited $rc (log $log)"
	# the tool's own summary line: records kept and dropped (never silent)
	sum=$(grep -E "^$cfg: " "$log" 2>/dev/null | head -1)
	[ -n "$sum" ] && echo "bench: tool_overhead summary $sum"
	rm -rf "$W/shm"
	if [ "$cfg" != direct ] && [ "$cfg" != shim ] && grep -q "running without it" "$log.err" 2>/dev/null; then
		echo "not ok - bench: $cfg was not attached: $(grep 'running without it' "$log.err" | head -1)"
	fi
done
python3 - "$OUTD" "$WL" $configs <<'P'
import sys, re
d, wl, cfgs = sys.argv[1], sys.argv[2].split(','), sys.argv[3:]
goal_wl = ('vadd', 'gemm', 'stencil', 'reduce')  # the goal's workloads
med, ck = {}, {}
for c in cfgs:
    try:
        for l in open('%s/bench-%s.log' % (d, c)):
            m = re.match(r'bench: (\S+) ([0-9.]+) ([0-9.]+)', l)
            if m: med[(c, m.group(1))] = float(m.group(2))
            m = re.match(r'checksum: (\S+) (\S+)', l)
            if m: ck[(c, m.group(1))] = m.group(2)
    except OSError:
        pass
print('| workload | ' + ' | '.join(cfgs) + ' |')
print('|---' * (len(cfgs) + 1) + '|')
for w in wl:
    base = med.get(('direct', w))
    cells = []
    for c in cfgs:
        v = med.get((c, w))
        if v is None: cells.append('—')
        elif c == 'direct' or not base: cells.append('%.3f ms' % v)
        else: cells.append('%.3f ms (%+.1f %%)' % (v, (v / base - 1) * 100))
    print('| %s | %s |' % (w, ' | '.join(cells)))
for w in wl:
    base = med.get(('direct', w))
    for c in cfgs[1:]:
        v = med.get((c, w))
        if base and v:
            print('bench: tool_overhead %s %s %.2f%%' % (w, c, (v / base - 1) * 100))
            if c in ('kernelretsnoop', 'threadhist', 'launchlate') and w in goal_wl:
                print('%s - bench: %s on %s within 3 %% of direct (%+.2f %%)' % ('ok' if v <= base * 1.03 else 'not ok', c, w, (v / base - 1) * 100))
        if ck.get(('direct', w)) and ck.get((c, w)):
            print('%s - bench: %s output of %s unchanged' % ('ok' if ck[(c, w)] == ck[('direct', w)] else 'not ok', c, w))
P
