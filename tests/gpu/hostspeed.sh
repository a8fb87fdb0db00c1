#!/usr/bin/env bash
# Why processes on the GPU machine run at different host speeds (issue 17's
# end-to-end figures): each process runs steady.py's calib() — a fixed
# pure-Python workload, no GPU — HS_PASSES times, and reports its median and
# what it ran with (transparent huge pages in its heap, CPU, minor faults).
# Configurations, interleaved (HS_PROCS processes each; HS_CFGS picks):
#   plain     python3, nothing imported
#   torch     python3 after `import torch` (the ML scripts' address space)
#   thp       PYTHONMALLOC=malloc with glibc's malloc asking for huge pages
#             (GLIBC_TUNABLES=glibc.malloc.hugetlb=1: THP, madvise)
#   pinned    plain, on one CPU (taskset -c HS_CPU)
# Prints the machine's THP, frequency governor and cgroup settings, a table of
# each configuration's calibration (min, median, max, how many processes were
# slow: over 1.3x the fastest of all), and ok lines; bench: lines per process.
# Nothing here is a test of gpuext: it tells whether a setting removes the
# slow mode, so that mlab can compare processes at one speed.
set -u
PART=hostspeed
. "$(dirname "$0")/ml/env.sh"
N=${HS_PROCS:-12}
P=${HS_PASSES:-9}
CPU=${HS_CPU:-2}
CFGS=${HS_CFGS:-plain torch thp pinned}
{
	for f in /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag \
		/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor /sys/fs/cgroup/cpu.max \
		/proc/sys/kernel/numa_balancing; do
		echo "# $f: $(cat "$f" 2>/dev/null || echo '(none)')"
	done
	echo "# cpus: $(nproc) ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'))"
	echo "# numa: $(ls -d /sys/devices/system/node/node* 2>/dev/null | wc -l) node(s)"
} | tee "$L/machine.txt"
cat >"$W/hs.py" <<'PY'
import os, statistics, sys
sys.path.insert(0, sys.argv[1])
if sys.argv[2] == 'torch':
    import torch  # noqa: F401  (the address space of the ML scripts)
from steady import calib
cal = sorted(calib() for _ in range(int(sys.argv[3])))
def field(path, key):
    try:
        for l in open(path):
            if l.startswith(key):
                return l.split()[1]
    except OSError:
        pass
    return '?'
st = open('/proc/self/stat').read().rsplit(')', 1)[1].split()
print('calib_ms %.3f min %.3f max %.3f cpu %s minflt %s anonhuge_kb %s' % (
    statistics.median(cal), cal[0], cal[-1], st[36], st[7],
    field('/proc/self/smaps_rollup', 'AnonHugePages:')))
PY
for r in $(seq 1 "$N"); do
	for cfg in $CFGS; do
		case $cfg in
		plain | torch) python3 "$W/hs.py" "$ROOT/tests/gpu/ml" "$cfg" "$P" ;;
		thp) PYTHONMALLOC=malloc GLIBC_TUNABLES=glibc.malloc.hugetlb=1 python3 "$W/hs.py" "$ROOT/tests/gpu/ml" plain "$P" ;;
		pinned) taskset -c "$CPU" python3 "$W/hs.py" "$ROOT/tests/gpu/ml" plain "$P" ;;
		*) echo "# hostspeed: unknown configuration $cfg"; continue ;;
		esac >"$L/$cfg.$r.out" 2>"$L/$cfg.$r.err"
		if [ -s "$L/$cfg.$r.out" ]; then
			echo "bench: hostspeed $cfg $r $(cat "$L/$cfg.$r.out")"
		else
			echo "# hostspeed: $cfg process $r reported nothing: $(tail -1 "$L/$cfg.$r.err")"
		fi
	done
done
python3 - "$L" "$N" $CFGS <<'P'
import re, statistics, sys
L, N, cfgs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
res = {}
for c in cfgs:
    v = []
    for r in range(1, N + 1):
        try:
            m = re.search(r'^calib_ms ([0-9.]+) .* anonhuge_kb (\S+)', open('%s/%s.%d.out' % (L, c, r)).read(), re.M)
        except OSError:
            m = None
        if m:
            v.append((float(m.group(1)), m.group(2)))
    res[c] = v
allv = [t for v in res.values() for t, _ in v]
if not allv:
    print('not ok - hostspeed: no process reported a calibration')
    sys.exit(0)
fast = min(allv)
print('| configuration | processes | calib ms min / median / max | slow (> 1.3x %.2f ms) | heap huge pages (kB, median) |' % fast)
print('|---|---|---|---|---|')
for c in cfgs:
    v = res[c]
    if not v:
        print('| %s | 0 | — | — | — |' % c)
        continue
    t = [x for x, _ in v]
    hp = [int(h) for _, h in v if h.isdigit()]
    print('| %s | %d | %.2f / %.2f / %.2f | %d | %s |' % (c, len(v), min(t), statistics.median(t), max(t),
          sum(x > 1.3 * fast for x in t), statistics.median(hp) if hp else '?'))
print('ok - hostspeed: %d processes calibrated' % len(allv))
P
