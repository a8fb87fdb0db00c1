#!/usr/bin/env bash
# GPU checks of several contexts and several GPUs (issue 7), run by
# tests/gpu/run.sh over a tree built here (`make gpu-prep` first: the tools'
# PTX comes from build/cache, the GPU machine has no LLVM).
#  1. always (one GPU is enough): tests/gpu/multi/multictx.c — per device its
#     primary context and created ones (device 0: three contexts), one thread
#     each; the same PTX as a module in every context and once as a library
#     (CUkernel launched directly and through cuKernelGetFunction in each
#     context); unload in one context; cuMemcpyPeer between contexts (and
#     peer access between devices when there are two). Output identical
#     without the shim, with it, with threadhist and with kernelretsnoop;
#     the tools' totals equal what the program launched, per device too.
#  2. with GX_MULTI=1 (tests/gpu/run.sh --multi): tests/gpu/multi/ddp.py —
#     torch.distributed on every GPU (one process per GPU, NCCL, NVLink
#     multicast off): all-reduce, all-gather, five DDP steps and a PTX kernel
#     per rank; results identical without the shim, with it, and with
#     threadhist, whose report must show every GPU. Without GX_MULTI one ok
#     line says it was skipped.
# Prints ok/not ok lines; logs and reports go to $OUT/multi/.
set -u
ROOT=${GX_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
B=${GX_BUILD:-$ROOT/build}
OUT=${OUT:-$B/gpu-out}
L=$OUT/multi
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
S=$ROOT/tests/gpu/multi
mkdir -p "$L"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
: >"$L/summary.txt"
ok() { echo "ok - multi: $*" | tee -a "$L/summary.txt"; }
nok() { echo "not ok - multi: $*" | tee -a "$L/summary.txt"; }
note() { echo "# $*" | tee -a "$L/summary.txt"; }
export GPUEXT_CACHE_DIR=${GPUEXT_CACHE_DIR:-$B/cache}
export GPUEXT_TOOLS_DIR=$B/share/gpuext/tools
export NCCL_NVLS_ENABLE=0 CUBLAS_WORKSPACE_CONFIG=:4096:8
SHIM_LLP="$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

[ -e "$B/lib/libcuda.so.1" ] && [ -x "$B/bin/gpuext-run" ] || { nok "build/ has no shim or gpuext-run (run make)"; exit 1; }
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
note "GPUs: $NGPU; GX_MULTI=${GX_MULTI:-0}"
[ "$NGPU" -ge 1 ] || { nok "nvidia-smi lists no GPU"; exit 1; }

# ---- build ----
if ! timeout 120 "$NVCC" -ptx -arch=compute_90 -o "$W/mix.ptx" "$S/mix.cu" >"$L/nvcc.log" 2>&1; then
	nok "nvcc -ptx mix.cu: $(tail -3 "$L/nvcc.log" | tr '\n' ' ')"; exit 1
fi
CCX=$(command -v gcc || command -v cc)
if ! "$CCX" -O2 -I"$CUDA_HOME/include" -o "$W/multictx" "$S/multictx.c" -L"$CUDA_HOME/lib64/stubs" -lcuda -lpthread \
	>"$L/cc.log" 2>&1; then
	nok "build multictx.c: $(tail -3 "$L/cc.log" | tr '\n' ' ')"; exit 1
fi

# A tool run: the report (JSON) on stdout, the program's stdout in a file,
# the run's data kept for text reports.
tool_run() { # TOOL NAME STDOUT CMD... -> $L/NAME.json, $L/NAME.err, data in $W/NAME.shm/run-*
	local t=$1 n=$2 o=$3
	shift 3
	mkdir -p "$W/$n.shm"
	GPUEXT_SHM_DIR="$W/$n.shm" GPUEXT_KEEP=1 GPUEXT_LOG=info timeout 400 "$B/bin/gpuext-run" --tool "$t" --json \
		--trace "$L/$n.trace.json" -- bash -c 'o=$1; shift; exec "$@" >"$o"' x "$o" "$@" >"$L/$n.json" 2>"$L/$n.err"
}

# ---- 1. several contexts ----
timeout 120 "$W/multictx" "$W/mix.ptx" "$W/base.bin" >"$L/ctx.base.out" 2>"$L/ctx.base.err"
rc=$?
if [ $rc -ne 0 ]; then
	nok "multictx without the shim exited $rc: $(tail -3 "$L/ctx.base.err" | tr '\n' ' ')"; exit 1
fi
nctx=$(grep -c '^ctx ' "$L/ctx.base.out")
ok "multictx runs without the shim ($nctx contexts on $NGPU GPU(s))"
grep -q 'per-context function handles distinct: yes' "$L/ctx.base.out" || nok "the real driver gave one function handle to two contexts?"

timeout 120 env LD_LIBRARY_PATH="$SHIM_LLP" GPUEXT_LOG=info "$W/multictx" "$W/mix.ptx" "$W/shim.bin" \
	>"$L/ctx.shim.out" 2>"$L/ctx.shim.err"
rc=$?
if [ $rc -eq 0 ] && cmp -s "$L/ctx.base.out" "$L/ctx.shim.out" && cmp -s "$W/base.bin" "$W/shim.bin"; then
	ok "multictx: output identical with the shim (modules, CUkernel, cuKernelGetFunction, unload, cuMemcpyPeer)"
else
	nok "multictx with the shim (exit $rc) differs: $(diff "$L/ctx.base.out" "$L/ctx.shim.out" | head -4 | tr '\n' ' ') $(tail -2 "$L/ctx.shim.err" | tr '\n' ' ')"
fi
nrw=$(grep -c 'rewritten (identity), reloaded' "$L/ctx.shim.err")
[ "$nrw" -ge $((nctx + 1)) ] && ! grep -q 'passed through' "$L/ctx.shim.err" &&
	ok "shim: the module rewritten in each of $nctx contexts and the library once ($nrw rewritten, none passed through)" ||
	nok "shim: $nrw modules rewritten for $nctx contexts + 1 library: $(grep -E 'passed|module' "$L/ctx.shim.err" | head -3 | tr '\n' ' ')"
narch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | sort -u | wc -l)
nre=$(grep -c 'from the module cache' "$L/ctx.shim.err")
if [ "$narch" -eq 1 ]; then
	[ "$nre" -ge "$nctx" ] && ok "shim: one rewrite for one GPU arch, the module cache serves $nre of $((nctx + 1)) loads" ||
		nok "shim: the module cache served $nre of $((nctx + 1)) loads (one arch: expected >= $nctx)"
else
	note "GPU archs: $narch; the module cache served $nre loads"
fi
grep -q 'cuMemcpyPeer.*DIFFERENT' "$L/ctx.shim.out" && nok "cuMemcpyPeer copied different bytes with the shim" ||
	ok "cuMemcpyPeer between contexts: $(grep -c 'cuMemcpyPeer.*identical' "$L/ctx.shim.out") copies identical"
if [ "$NGPU" -ge 2 ]; then
	grep -q 'peer read dev 0 -> dev 1 kernel: [0-9a-f]' "$L/ctx.shim.out" && ok "peer access: a kernel on GPU 1 read GPU 0's memory, same result" ||
		note "peer access between GPU 0 and 1: $(grep 'peer read' "$L/ctx.shim.out")"
fi
read -r _ blocks warps threads < <(sed -n 's/^launched blocks=\([0-9]*\) warps=\([0-9]*\) threads=\([0-9]*\)/x \1 \2 \3/p' "$L/ctx.base.out")

for t in threadhist kernelretsnoop; do
	tool_run $t ctx.$t "$L/ctx.$t.out" "$W/multictx" "$W/mix.ptx" "$W/$t.bin"
	rc=$?
	if [ $rc -ne 0 ]; then
		nok "multictx under $t exited $rc: $(grep -v '^{' "$L/ctx.$t.err" | tail -3 | tr '\n' ' ')"; continue
	fi
	if grep -q "policy $t: .*running without it" "$L/ctx.$t.err"; then
		nok "$t not attached: $(grep "policy $t" "$L/ctx.$t.err" | head -2 | tr '\n' ' ')"; continue
	fi
	cmp -s "$L/ctx.base.out" "$L/ctx.$t.out" && cmp -s "$W/base.bin" "$W/$t.bin" &&
		ok "multictx: output identical under $t" || nok "multictx: output under $t differs: $(diff "$L/ctx.base.out" "$L/ctx.$t.out" | head -4 | tr '\n' ' ')"
	nh=$(grep -c 'rewritten ([1-9][0-9]* hooks)' "$L/ctx.$t.err")
	[ "$nh" -ge $((nctx + 1)) ] && ok "$t: the module hooked in every context and the library ($nh)" ||
		nok "$t: only $nh modules rewritten with hooks for $nctx contexts + 1 library"
	d=$(ls -d "$W/ctx.$t.shm"/run-* 2>/dev/null | head -1)
	[ -n "$d" ] && "$B/bin/gpuext" tools report $t --dir "$d" >"$L/ctx.$t.txt" 2>&1
	# every context's copy of threadhist's counters, merged and per GPU
	[ -n "$d" ] && [ $t = threadhist ] && GPUEXT_SHM_DIR="$d" "$B/bin/gpuext" --json map dump th_counts --devices \
		>"$L/ctx.mapdump.json" 2>"$L/ctx.mapdump.err"
done
python3 - "$L" "$blocks" "$warps" "$threads" "$nctx" <<'P' | tee -a "$L/summary.txt"
import json, re, sys
L = sys.argv[1]
blocks, warps, threads, nctx = map(int, sys.argv[2:6])
perdev = {int(m.group(1)): int(m.group(2)) for m in re.finditer(r'^per-device blocks dev (\d+): (\d+)$', open(L + '/ctx.base.out').read(), re.M)}
def check(c, msg):
    print(('ok' if c else 'not ok') + ' - multi: ' + msg)
def load(n):
    try:
        return json.load(open('%s/%s.json' % (L, n)))
    except Exception as e:
        print('not ok - multi: %s: no JSON report (%s)' % (n, e)); return None
d = load('ctx.threadhist')
if d:
    tot = d['total']
    check(tot == dict(blocks=blocks, warps=warps, threads=threads),
          'threadhist over %d contexts: totals equal the launches (%s vs blocks=%d warps=%d threads=%d)' % (nctx, tot, blocks, warps, threads))
    if 'gpus' in d:
        got = {g['dev']: g['blocks'] for g in d['gpus']}
        check(got == perdev, 'threadhist per GPU: %s (launched %s)' % (got, perdev))
    else:
        print('# threadhist report has no per-GPU section (older tree)')
d = load('ctx.mapdump')
if d:
    e = d['entries'][0] if d['entries'] else {'merged': [0, 0, 0], 'gpus': {}}
    got = {int(k): v[0] for k, v in e['gpus'].items()}
    check(e['merged'] == [blocks, warps, threads] and got == perdev and len(d['copies']) == nctx,
          'gpuext map dump --devices: %d copies merged %s, per GPU %s (launched %s)' % (len(d['copies']), e['merged'], got, perdev))
d = load('ctx.kernelretsnoop')
if d:
    L_ = d['launches']
    check(d['unattributed'] == 0 and d['drops'] == 0 and all(l['blocks'] == l['blocks_expected'] for l in L_)
          and sum(l['blocks_expected'] for l in L_) == blocks,
          'kernelretsnoop: every block of every launch in every context attributed (%d launches, %d records, %d unattributed)'
          % (len(L_), d['records'], d['unattributed']))
    ctxs = set((l['pid'], l['ctx']) for l in L_)
    check(len(ctxs) == nctx, 'kernelretsnoop: launches seen in %d contexts (%d)' % (nctx, len(ctxs)))
P

# ---- 2. several GPUs: torch.distributed + NCCL ----
if [ "${GX_MULTI:-0}" != 1 ]; then
	ok "torch.distributed/NCCL part skipped (tests/gpu/run.sh --multi runs it; $NGPU GPU(s) here)"
	exit 0
fi
if ! python3 -c 'import torch, torch.distributed as d; assert torch.cuda.is_available() and d.is_nccl_available()' 2>"$L/torch.err"; then
	nok "torch with CUDA and NCCL not importable: $(tail -1 "$L/torch.err")"; exit 0
fi
ddp() { # NAME [env...] : runs ddp.py with NGPU ranks -> $W/NAME/rank*.txt
	local n=$1
	shift
	mkdir -p "$W/$n"
	timeout 300 env "$@" python3 "$S/ddp.py" "$W/$n" "$W/mix.ptx" "$NGPU" >"$L/ddp.$n.out" 2>"$L/ddp.$n.err"
}
if ! ddp base; then
	nok "ddp.py without the shim failed: $(tail -3 "$L/ddp.base.err" | tr '\n' ' ')"; exit 0
fi
cat "$W"/base/rank*.txt >"$L/ddp.base.txt"
ok "torch.distributed on $NGPU GPU(s) without the shim: $(ls "$W"/base/rank*.txt | wc -l) ranks"
ddp shim LD_LIBRARY_PATH="$SHIM_LLP" GPUEXT_LOG=info
rc=$?
cat "$W"/shim/rank*.txt >"$L/ddp.shim.txt" 2>/dev/null
[ $rc -eq 0 ] && cmp -s "$L/ddp.base.txt" "$L/ddp.shim.txt" &&
	ok "all-reduce, all-gather, DDP losses and parameters identical with the shim ($NGPU ranks)" ||
	nok "ddp with the shim (exit $rc) differs: $(diff "$L/ddp.base.txt" "$L/ddp.shim.txt" | head -4 | tr '\n' ' ') $(tail -2 "$L/ddp.shim.err" | tr '\n' ' ')"
grep -q 'rewritten (identity)' "$L/ddp.shim.err" && ok "ddp with the shim: the PTX kernel rewritten" ||
	nok "ddp with the shim: no module rewritten"
mkdir -p "$W/tool"
tool_run threadhist ddp.threadhist "$L/ddp.tool.out" python3 "$S/ddp.py" "$W/tool" "$W/mix.ptx" "$NGPU"
rc=$?
cat "$W"/tool/rank*.txt >"$L/ddp.tool.txt" 2>/dev/null
[ $rc -eq 0 ] && cmp -s "$L/ddp.base.txt" "$L/ddp.tool.txt" &&
	ok "all-reduce, all-gather, DDP losses and parameters identical with threadhist attached" ||
	nok "ddp with threadhist (exit $rc) differs: $(diff "$L/ddp.base.txt" "$L/ddp.tool.txt" | head -4 | tr '\n' ' ') $(grep -v '^{' "$L/ddp.threadhist.err" | tail -2 | tr '\n' ' ')"
d=$(ls -d "$W/ddp.threadhist.shm"/run-* 2>/dev/null | head -1)
[ -n "$d" ] && "$B/bin/gpuext" tools report threadhist --dir "$d" >"$L/ddp.threadhist.txt" 2>&1
python3 - "$L" "$NGPU" <<'P' | tee -a "$L/summary.txt"
import json, sys
L, n = sys.argv[1], int(sys.argv[2])
def check(c, msg):
    print(('ok' if c else 'not ok') + ' - multi: ' + msg)
try:
    d = json.load(open(L + '/ddp.threadhist.json'))
except Exception as e:
    print('not ok - multi: ddp threadhist: no JSON report (%s)' % e); sys.exit(0)
want = sum(50 * (r + 1) for r in range(n))
check(d['total']['blocks'] >= want, 'ddp threadhist: %d blocks counted, >= the %d of the PTX kernels' % (d['total']['blocks'], want))
if 'gpus' in d:
    got = {g['dev']: g['blocks'] for g in d['gpus']}
    check(sorted(got) == list(range(n)) and all(got[r] >= 50 * (r + 1) for r in range(n)),
          'ddp threadhist: one entry per GPU with its rank\'s kernel (%s)' % got)
else:
    print('# threadhist report has no per-GPU section (older tree)')
P
exit 0
