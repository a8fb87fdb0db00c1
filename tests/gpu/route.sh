#!/usr/bin/env bash
# What the shim's compile route does to kernels (issue 40; shim/cubin.c):
# bench/tool_bench.cu's vadd, gemm (shared-memory tiles), stencil, reduce and
# rowsoftmax, direct against the shim without a tool and threadhist, each
# with the three ways a rewritten module reaches the GPU: the default (a
# cubin ptxas compiled whole), GPUEXT_CUBIN=link (the driver's linker:
# relocatable code) and GPUEXT_CUBIN=0 (the PTX load: the driver's JIT).
# Two processes per configuration, alternating; each figure the lower of the
# two medians of 11 batches. Prints a table (% over direct), ok/not ok: the
# default route within 1 % of direct on every kernel without a tool, outputs
# identical everywhere. Logs under $OUT/route.
set -u
B=${GX_BUILD:-$PWD/build}
L=$OUT/route
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mkdir -p "$L"
APP=$B/tests/gpu/tool_bench
if [ ! -x "$APP" ]; then
	APP=$W/tool_bench
	timeout 300 /usr/local/cuda/bin/nvcc -O2 -arch=sm_90 -gencode arch=compute_90,code=compute_90 -o "$APP" \
		bench/tool_bench.cu >"$L/nvcc.log" 2>&1 || { echo "not ok - route: nvcc tool_bench.cu failed"; exit 1; }
fi
export GPUEXT_CACHE_DIR=$W/cache GPUEXT_TOOLS_DIR=$B/share/gpuext/tools GPUEXT_SHM_DIR=$W/shm
mkdir -p "$GPUEXT_SHM_DIR"
cp -r "$B/cache" "$GPUEXT_CACHE_DIR" 2>/dev/null
WL=vadd,gemm,stencil,reduce,rowsoftmax
run() {
	local n=$1
	shift
	timeout 120 "$@" "$APP" 11 $WL >"$L/$n.log" 2>"$L/$n.err" || echo "not ok - route: $n exited $?"
}
for r in 1 2; do
	run direct$r env
	run shim$r env LD_LIBRARY_PATH="$B/lib" GPUEXT_LOG=info
	run shimlink$r env LD_LIBRARY_PATH="$B/lib" GPUEXT_LOG=info GPUEXT_CUBIN=link
	run shimptx$r env LD_LIBRARY_PATH="$B/lib" GPUEXT_LOG=info GPUEXT_CUBIN=0
	run th$r "$B/bin/gpuext-run" -v --tool threadhist --
	run thlink$r env GPUEXT_CUBIN=link "$B/bin/gpuext-run" -v --tool threadhist --
	run thptx$r env GPUEXT_CUBIN=0 "$B/bin/gpuext-run" -v --tool threadhist --
done
grep -h "cubins:\|module 1 " "$L"/*1.err | sort | uniq -c
python3 - "$L" <<'P'
import collections, os, re, sys
d = sys.argv[1]
v, ck = collections.defaultdict(list), collections.defaultdict(set)
for f in sorted(os.listdir(d)):
    if not f.endswith('.log'):
        continue
    cfg = re.sub(r'\d+\.log$', '', f)
    for l in open(os.path.join(d, f)):
        m = re.match(r'bench: (\S+) ([\d.]+)', l)
        if m:
            v[(m.group(1), cfg)].append(float(m.group(2)))
        m = re.match(r'checksum: (\S+) (\S+)', l)
        if m:
            ck[(m.group(1), cfg)].add(m.group(2))
cfgs = ['direct', 'shim', 'shimlink', 'shimptx', 'th', 'thlink', 'thptx']
names = {'shim': 'shim (ptxas)', 'shimlink': 'shim, link', 'shimptx': 'shim, PTX load',
         'th': 'threadhist (ptxas)', 'thlink': 'threadhist, link', 'thptx': 'threadhist, PTX load'}
print('| kernel | ' + ' | '.join(names.get(c, c) for c in cfgs) + ' |')
print('|---' * (len(cfgs) + 1) + '|')
for k in ['vadd', 'gemm', 'stencil', 'reduce', 'rowsoftmax']:
    base = min(v.get((k, 'direct')) or [0])
    row = []
    for c in cfgs:
        x = v.get((k, c))
        if not x or not base:
            row.append('—')
        elif c == 'direct':
            row.append('%.3f ms' % base)
        else:
            pct = (min(x) / base - 1) * 100
            row.append('%+.1f %%' % pct)
            print('bench: route %s %s %+.2f' % (k, c, pct), file=sys.stderr)
    print('| %s | %s |' % (k, ' | '.join(row)))
    x = v.get((k, 'shim'))
    if x and base:
        pct = (min(x) / base - 1) * 100
        print('%sok - route: the shim without a tool on %s: %+.1f %% (goal <= 1 %%)' % ('' if pct <= 1 else 'not ', k, pct))
bad = [(k, c) for (k, c), s in ck.items() if s != ck.get((k, 'direct'))]
print(('not ok' if bad or not ck else 'ok') + ' - route: outputs identical to direct in every configuration %s' % (bad or ''))
P
