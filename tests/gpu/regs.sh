#!/usr/bin/env bash
# GPU (issue 40): the registers of perf's kernels natively and under each
# tool, to tell whether a tool's cost on a short kernel is a lost resident
# block rather than the probe's own time. Runs tests/gpu/ml/perkernel.py
# natively once (Triton and CuPy, two launches each) with its caches in a
# scratch folder, then compiles every PTX module those caches hold with
# ptxas -v: as it came, whole (the driver's JIT of a PTX module), and with
# -c, relocatable, as the shim's cubin route (cuLink) compiles a rewritten
# module: as it came, and under threadhist, launchlate and kernelretsnoop
# without the register cap (GX_PTX_REG_CAP=0) and with it (the default,
# the whole compile's counts given as --regs: what the shim measures).
# Prints `| ` table rows and `bench: regs KERNEL CONFIG NATIVE N`.
set -u
# shellcheck disable=SC2034 # PART: read by env.sh
PART=regs
# shellcheck source=tests/gpu/ml/env.sh
. "$(dirname "$0")/ml/env.sh"
PY=${PYTHON:-python3}
PTXAS=${PTXAS:-$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)}
GX=$B/bin/gpuext
TD=$B/share/gpuext/tools
ok() { echo "ok - regs: $*"; }
nok() { echo "not ok - regs: $*"; }
sm=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '.')
sm=${sm:-90}
mkdir -p "$W/cupy" "$W/triton" "$W/ptx"
if ! CUPY_CACHE_DIR=$W/cupy TRITON_CACHE_DIR=$W/triton CUPY_COMPILE_WITH_PTX=1 PERF_LAUNCHES=2 PERF_REPS=1 \
	timeout -k 5 120 "$PY" tests/gpu/ml/perkernel.py triton,cupy >"$L/perkernel.out" 2>"$L/perkernel.err"; then
	nok "perkernel.py natively: $(tail -2 "$L/perkernel.err" | tr '\n' ' ')"
fi
# every PTX text the caches hold (CuPy's files carry a header before it)
"$PY" - "$W" <<'EOF'
import os, sys
W = sys.argv[1]
n = 0
for d in ('cupy', 'triton'):
    for root, _, files in os.walk(os.path.join(W, d)):
        for f in files:
            b = open(os.path.join(root, f), 'rb').read()
            i = b.find(b'.version')
            if i < 0 or b.find(b'.entry', i) < 0:
                continue
            n += 1
            open(os.path.join(W, 'ptx', '%s_%d.ptx' % (d, n)), 'wb').write(b[i:].split(b'\0')[0])
print('# regs: %d PTX modules from the caches' % n)
EOF
# regs FILE [-c]: "kernel regs" per entry, from ptxas -v
regs() {
	# shellcheck disable=SC2086 # $2: an option or nothing
	"$PTXAS" -arch=sm_"$sm" -v ${2:-} "$1" -o /dev/null 2>&1 | awk -f tests/ptxas_regs.awk
}
echo "| kernel | native | native -c | threadhist -c: uncapped / capped | launchlate -c | kernelretsnoop -c |"
echo "|---|---|---|---|---|---|"
for f in "$W"/ptx/*.ptx; do
	[ -f "$f" ] || continue
	regs "$f" >"$f.native"
	[ -s "$f.native" ] || continue
	kr=$(awk '{printf "%s%s=%s", (NR > 1 ? "," : ""), $1, $2}' "$f.native")
	regs "$f" -c >"$f.c"
	for t in threadhist launchlate kernelretsnoop; do
		GX_PTX_REG_CAP=0 "$GX" ptx rewrite --policy "$TD/$t.bpf.o" "$f" -o "$f.$t.nocap.ptx" 2>>"$L/rewrite.log" &&
			regs "$f.$t.nocap.ptx" -c >"$f.$t.nocap"
		"$GX" ptx rewrite --policy "$TD/$t.bpf.o" --regs "$kr" "$f" -o "$f.$t.ptx" 2>>"$L/rewrite.log" &&
			regs "$f.$t.ptx" -c >"$f.$t"
	done
	while read -r k n; do
		v=$(awk -v k="$k" '$1 == k {print $2}' "$f.c")
		row="| $k | $n | ${v:-—}"
		[ -n "$v" ] && echo "bench: regs $k native-c $n $v" >>"$L/bench.txt"
		for t in threadhist launchlate kernelretsnoop; do
			u=$(awk -v k="$k" '$1 == k {print $2}' "$f.$t.nocap" 2>/dev/null)
			v=$(awk -v k="$k" '$1 == k {print $2}' "$f.$t" 2>/dev/null)
			row="$row | ${u:-—} / ${v:-—}"
			[ -n "$u" ] && echo "bench: regs $k $t-nocap $n $u" >>"$L/bench.txt"
			[ -n "$v" ] && echo "bench: regs $k $t $n $v" >>"$L/bench.txt"
		done
		echo "$row |"
	done <"$f.native"
done
if [ -s "$L/bench.txt" ]; then
	cat "$L/bench.txt"
	ok "registers natively and under the tools for $(wc -l <"$L/bench.txt") kernel x tool pairs"
else
	nok "no register counts (see $L/perkernel.err, $L/rewrite.log)"
fi
