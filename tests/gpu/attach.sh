#!/usr/bin/env bash
# GPU checks of gpuext attach / detach on a running training-like loop
# (issue 37; docs/attach.md). tests/gpu/run.sh runs it over a carried build
# (`make gpu-prep` first: build/cache holds the tools' PTX, the GPU machine
# has no LLVM). The loop is tests/gpu/ml/attach_loop.py: three Triton
# kernels (cubins that carry their PTX) and a deterministic PyTorch SGD step
# per iteration, a checksum printed per iteration.
#  1. reference: the loop natively, then under the shim with nothing
#     attached: identical checksums.
#  2. attach threadhist to the running loop (cold: empty module cache and
#     driver JIT cache), detach, attach again (warm), detach: the time from
#     the `gpuext attach` command to the first instrumented launch (from the
#     process's "attach: first instrumented launch at" line), both reports
#     complete (threadhist's blocks = the blocks of the instrumented launches
#     in its launch log: none lost or duplicated), checksums identical to
#     the reference.
#  3. soak: ATTACH_CYCLES (default 200) attach/detach cycles against one
#     running loop: every command answered, host RSS and GPU memory of the
#     process before/after (reported; flat within ATTACH_RSS_SLACK_MB,
#     default 64, and ATTACH_GPU_SLACK_MB, default 64), checksums identical.
#  4. launch cost with the attach machinery idle: build/bench/launch_ab
#     with GPUEXT_ATTACH=0 (no control thread, no kept PTX) and with it on
#     (the default), in the same warm process conditions, AB_ROUNDS rounds.
# Prints ok/not ok lines and "bench:" lines; logs in $OUT/attach/. About
# 3-4 minutes with the defaults; ATTACH_CYCLES=20 for a quick pass.
set -u
ROOT=${GX_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
B=${GX_BUILD:-$ROOT/build}
OUT=${OUT:-$B/gpu-out}
L=$OUT/attach
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
CYCLES=${ATTACH_CYCLES:-200}
ITERS=${ATTACH_ITERS:-1500}
AB_ROUNDS=${AB_ROUNDS:-200}
mkdir -p "$L"
W=$(mktemp -d)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill $p 2>/dev/null; done; rm -rf "$W"' EXIT
: >"$L/summary.txt"
ok() { echo "ok - attach: $*" | tee -a "$L/summary.txt"; }
nok() { echo "not ok - attach: $*" | tee -a "$L/summary.txt"; }
bench() { echo "bench: attach: $*" | tee -a "$L/summary.txt"; }
G=$B/bin/gpuext
LOOP=$ROOT/tests/gpu/ml/attach_loop.py
[ -x "$G" ] && [ -e "$B/lib/libcuda.so.1" ] || { nok "build/ has no gpuext or shim (run make)"; exit 1; }
python3 -c 'import torch, triton' 2>/dev/null || { nok "python3 with torch and triton is needed"; exit 1; }
# The tools' JIT cache from gpu-prep, copied: the module cache starts cold.
mkdir -p "$W/cache" "$W/shm" "$W/ctl"
chmod 700 "$W/shm" "$W/ctl"
cp "$B"/cache/*.gxpol "$W/cache/" 2>/dev/null || nok "no JIT cache in $B/cache: run 'make gpu-prep' before carrying build/"
export GPUEXT_CACHE_DIR=$W/cache GPUEXT_TOOLS_DIR=$B/share/gpuext/tools GPUEXT_CTL_DIR=$W/ctl GPUEXT_SHM_DIR=$W/shm
export CUBLAS_WORKSPACE_CONFIG=:4096:8 PYTHONUNBUFFERED=1 TRITON_CACHE_DIR=$W/triton

sums() { grep '^iter ' "$1"; }
same_sums() { # REF RUN: the iterations both printed are identical
	local n m
	n=$(sums "$2" | wc -l) m=$(sums "$1" | wc -l)
	[ "$m" -lt "$n" ] && n=$m
	[ "$n" -gt 0 ] && cmp -s <(sums "$1" | head -n "$n") <(sums "$2" | head -n "$n")
}
# start NAME [env...]: the loop under the shim, in the background; $pid
start() {
	local n=$1
	shift
	rm -f "$W/$n.stop"
	env LD_LIBRARY_PATH="$B/lib" TRITON_LIBCUDA_PATH="$B/lib" GPUEXT_LOG=info CUDA_CACHE_PATH="$W/nvcache-$n" \
		ATTACH_ITERS=$ITERS ATTACH_STOP="$W/$n.stop" "$@" python3 "$LOOP" >"$L/$n.out" 2>"$L/$n.err" &
	pid=$!
	PIDS+=($pid)
	for _ in $(seq 1200); do grep -q '^ready' "$L/$n.out" && [ -e "$W/ctl/$pid.ps" ] && return 0; sleep 0.05; done
	nok "$n: the loop did not get ready under the shim: $(tail -2 "$L/$n.err" | tr '\n' ' ')"
	return 1
}
rss_kb() { awk '/^VmRSS/ {print $2}' /proc/$1/status 2>/dev/null; }
gpu_mb() { nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2>/dev/null |
	awk -F', *' -v p=$1 '$1 == p {print $2}'; }
# first instrumented launch after the k-th attach, in ms from T0 (s.ns)
first_ms() { # ERRLOG K T0
	local t
	t=$(grep -o 'attach: first instrumented launch at [0-9.]*' "$1" | sed -n "$2s/.* at //p")
	[ -n "$t" ] && python3 -c "print(round(($t - $3) * 1000, 1))"
}

# ---- 1. reference runs ----
if ! env ATTACH_ITERS=$ITERS timeout 600 python3 "$LOOP" >"$L/native.out" 2>"$L/native.err"; then
	nok "the loop without the shim failed: $(tail -2 "$L/native.err" | tr '\n' ' ')"
	exit 1
fi
ok "the loop runs without the shim ($(sums "$L/native.out" | wc -l) iterations)"
if start idle; then
	touch "$W/idle.stop"
	wait $pid
	same_sums "$L/native.out" "$L/idle.out" && ok "under the shim with nothing attached: checksums identical" ||
		nok "under the shim with nothing attached: checksums differ"
fi

# ---- 2. attach cold, detach, attach warm, detach ----
if start once; then
	t0=$(date +%s.%N)
	"$G" attach $pid --tool threadhist >"$L/once.attach1" 2>&1 && ok "attach (cold): $(head -1 "$L/once.attach1")" ||
		nok "attach (cold): $(cat "$L/once.attach1")"
	for _ in $(seq 200); do grep -q 'first instrumented launch' "$L/once.err" && break; sleep 0.05; done
	cold=$(first_ms "$L/once.err" 1 "$t0")
	sleep 1
	"$G" --json detach $pid --keep >"$L/once.detach1.json" 2>"$L/once.detach1.err" ||
		nok "detach 1: $(cat "$L/once.detach1.err")"
	d1=$(ls -d "$W"/shm/attach-$pid-* 2>/dev/null | head -1)
	t0=$(date +%s.%N)
	"$G" attach $pid --tool threadhist >"$L/once.attach2" 2>&1 || nok "attach (warm): $(cat "$L/once.attach2")"
	for _ in $(seq 200); do [ "$(grep -c 'first instrumented launch' "$L/once.err")" -ge 2 ] && break; sleep 0.05; done
	warm=$(first_ms "$L/once.err" 2 "$t0")
	sleep 1
	"$G" --json detach $pid --keep >"$L/once.detach2.json" 2>"$L/once.detach2.err" ||
		nok "detach 2: $(cat "$L/once.detach2.err")"
	touch "$W/once.stop"
	wait $pid
	bench "first instrumented launch after 'gpuext attach': cold ${cold:-?} ms, warm ${warm:-?} ms (goal warm <= 1000 ms)"
	[ -n "$warm" ] && ok "the first instrumented launch came after the warm attach" ||
		nok "no instrumented launch after the warm attach"
	grep -h 'attach: module\|attach: attached\|detached' "$L/once.err" | head -40 >"$L/once.attach-lines.txt"
	same_sums "$L/native.out" "$L/once.out" && ok "checksums identical through two attach/detach cycles" ||
		nok "checksums differ with attach/detach"
	# the report is complete: threadhist's blocks = the blocks of the
	# instrumented launches its launch log holds (none lost or duplicated)
	for k in 1 2; do
		# the k-th run folder in the order the attaches made them
		dir=$(ls -dtr "$W"/shm/attach-$pid-* 2>/dev/null | sed -n "${k}p")
		python3 - "$L/once.detach$k.json" "$dir" $pid >"$L/once.count$k.txt" 2>&1 <<'P'
import json, struct, sys, glob
rep, d, pid = sys.argv[1], sys.argv[2], sys.argv[3]
docs = [json.loads(l) for l in open(rep) if l.startswith('{')]
th = [x for x in docs if 'total' in x]
blocks = th[0]['total']['blocks'] if th else -1
b = open(glob.glob(f'{d}/{pid}-threadhist.events')[0], 'rb').read()
o = want = n = 0
while o + 8 <= len(b):
    ty, ln = struct.unpack_from('<II', b, o)
    if ln < 8: break
    if ty == 4 and ln >= 72:
        g = struct.unpack_from('<3I', b, o + 32); fl = struct.unpack_from('<I', b, o + 56)[0]
        if fl & 1:
            want += g[0] * g[1] * g[2]; n += 1
    o += ln
print(f'threadhist blocks {blocks}, instrumented launches {n} with {want} blocks')
sys.exit(0 if blocks == want and n > 0 else 1)
P
		[ $? = 0 ] && ok "report $k complete: $(cat "$L/once.count$k.txt")" ||
			nok "report $k incomplete: $(tail -1 "$L/once.count$k.txt")"
	done
fi

# ---- 3. soak: CYCLES attach/detach cycles ----
if start soak env ATTACH_SLEEP_MS=2 ATTACH_ITERS=1000000; then
	r0=$(rss_kb $pid) g0=$(gpu_mb $pid)
	fails=0 t0=$(date +%s)
	for i in $(seq "$CYCLES"); do
		"$G" attach $pid --tool threadhist >>"$L/soak.cmds" 2>&1 && "$G" detach $pid >>"$L/soak.cmds" 2>&1 ||
			fails=$((fails + 1))
		[ "$i" = 10 ] && r10=$(rss_kb $pid) g10=$(gpu_mb $pid)
		kill -0 $pid 2>/dev/null || break
	done
	r1=$(rss_kb $pid) g1=$(gpu_mb $pid)
	touch "$W/soak.stop"
	wait $pid
	rc=$?
	bench "soak: $CYCLES cycles in $(($(date +%s) - t0)) s; host RSS ${r0:-?} -> ${r10:-?} (10 cycles) -> ${r1:-?} kB; GPU memory ${g0:-?} -> ${g10:-?} -> ${g1:-?} MiB"
	[ "$fails" = 0 ] && [ "$rc" = 0 ] && ok "soak: $CYCLES attach/detach cycles, every command answered, the loop exited 0" ||
		nok "soak: $fails failed cycles, loop exit $rc: $(grep -m2 error "$L/soak.cmds" | tr '\n' ' ')"
	# flat: growth after the first 10 cycles (caches warmed) within the slack
	if [ -n "${r10:-}" ] && [ -n "${r1:-}" ] && [ $(((r1 - r10) / 1024)) -le "${ATTACH_RSS_SLACK_MB:-64}" ]; then
		ok "soak: host RSS flat ($(((r1 - r10) / 1024)) MiB after cycle 10)"
	else
		nok "soak: host RSS grew: ${r10:-?} -> ${r1:-?} kB"
	fi
	if [ -z "${g1:-}" ]; then
		echo "# soak: no GPU memory figure from nvidia-smi"
	elif [ $((g1 - ${g10:-$g1})) -le "${ATTACH_GPU_SLACK_MB:-64}" ]; then
		ok "soak: GPU memory flat (${g10:-?} -> $g1 MiB after cycle 10)"
	else
		nok "soak: GPU memory grew: ${g10:-?} -> $g1 MiB"
	fi
	same_sums "$L/native.out" "$L/soak.out" && ok "soak: checksums identical (the $(sums "$L/soak.out" | wc -l) iterations the loop ran, against the reference's first ones)" ||
		nok "soak: checksums differ"
fi

# ---- 4. launch cost with the attach machinery idle ----
AB=$B/bench/launch_ab
printf 'extern "C" __global__ void empty() {}\n' >"$W/empty.cu"
if [ ! -x "$AB" ]; then
	nok "$AB not built (make)"
elif ! timeout 120 "$NVCC" -fatbin -gencode arch=compute_90,code=[sm_90,compute_90] -o "$W/empty.fatbin" \
	"$W/empty.cu" 2>"$W/nvcc.err"; then
	nok "nvcc -fatbin: $(tail -2 "$W/nvcc.err" | tr '\n' ' ')"
else
	for r in 1 2; do
		for m in 0 1; do
			timeout 240 env LD_LIBRARY_PATH="$B/lib" GPUEXT_LOG=warn GPUEXT_ATTACH=$m \
				"$AB" "$W/empty.fatbin" empty "$AB_ROUNDS" 256 >"$L/ab.$m.$r.out" 2>&1 ||
				nok "launch_ab GPUEXT_ATTACH=$m failed: $(tail -2 "$L/ab.$m.$r.out" | tr '\n' ' ')"
		done
	done
	# "ab NAME direct_ns X shim_ns Y added_ns D ... ratio R": launch_ab
	# alternates the real driver's entry point and the shim's in one process,
	# so D (the shim's added ns, median of rounds) is what the shim costs in
	# that process; absolute times differ by several % between processes.
	# The median of D over the entry points and both runs, machinery off vs idle.
	v() { awk -v k="$1" '$1 == "ab" && $3 == "direct_ns" { for (i = 3; i < NF; i += 2) if ($i == k) print $(i + 1) }' "${@:2}" |
		sort -g | awk '{a[NR]=$1} END {print (NR ? a[int((NR+1)/2)] : "nan")}'; }
	off=$(v added_ns "$L"/ab.0.*.out) on=$(v added_ns "$L"/ab.1.*.out) t=$(v direct_ns "$L"/ab.*.out)
	bench "launch: ns the shim adds to a launch in the same process (median over entry points and 2 runs): machinery off (GPUEXT_ATTACH=0) $off ns, idle (default) $on ns; a launch is $t ns ($(python3 -c "print(f'{($on - $off) / $t * 100:+.2f} %')" 2>/dev/null) of a launch; goal <= 0.5 %)"
	[ "$off" != nan ] && [ "$on" != nan ] && ok "launch_ab ran with the machinery off and idle" || nok "launch_ab printed no figures"
fi
