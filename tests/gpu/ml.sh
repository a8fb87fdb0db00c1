#!/usr/bin/env bash
# Device hooks in the kernels of real ML stacks (issue 17): five workloads
# (tests/gpu/ml/: hand-written Triton, torch.compile, CuPy, JAX jit(grad),
# PyTorch eager), each run natively, under gpuext-run with no tool, with
# threadhist (twice: the second from the module and compiler caches) and
# with kernelretsnoop. Checks: identical checksums everywhere (bit for bit:
# every workload is deterministic), reports never fail. Prints per workload
# a table row: launches, launches instrumented, the share of the launches of
# kernels the stack generated that ran instrumented (goal >= 95 % for
# Triton, torch.compile, CuPy, JAX), the share of GPU time instrumented, and
# the steady-state time under threadhist against native (goal <= 3 % for the
# compiled workloads). ML_ONLY=regex picks workloads; ML_LS=N also runs
# threadhist with --launch-sample N (a `bench: ml` line each); ML_PROBE=1 also tries
# JAX with XLA's flag variants and logs what reaches the driver.
set -u
PART=ml
. "$(dirname "$0")/ml/env.sh"
ok() { echo "ok - ml: $*"; }
nok() { echo "not ok - ml: $*"; }
python3 -c 'import torch, triton, cupy, jax; print("versions: torch", torch.__version__, "triton", triton.__version__,
"cupy", cupy.__version__, "jax", jax.__version__)' 2>&1 | tail -1 | tee "$L/versions.txt"

# One run: name, config, then the command's arguments. Fresh compiler caches
# per config (except threadhist2, which reuses threadhist1's): compilation
# happens under the config being measured.
one() {
	local name=$1 cfg=$2 cache=$W/cache-$1-$2
	shift 2
	[ "$cfg" = threadhist2 ] && cache=$W/cache-$name-threadhist1
	mkdir -p "$cache"
	local t0 t1
	t0=$(date +%s%N)
	env TRITON_CACHE_DIR="$cache/triton" TORCHINDUCTOR_CACHE_DIR="$cache/inductor" CUPY_CACHE_DIR="$cache/cupy" \
		JAX_COMPILATION_CACHE_DIR="$cache/jax" GPUEXT_SHM_DIR="$W/shm-$name-$cfg" \
		timeout 240 "$@" >"$L/$name.$cfg.out" 2>"$L/$name.$cfg.err"
	local rc=$?
	t1=$(date +%s%N)
	echo "$(( (t1 - t0) / 1000000 ))" >"$L/$name.$cfg.wall_ms"
	return $rc
}
sum() { sed -n 's/^checksum //p' "$L/$1.$2.out" | head -1; }
tms() { sed -n 's/^time_ms //p' "$L/$1.$2.out" | head -1; }

echo "| workload | launches | instrumented | generated kernels instrumented | GPU time instrumented | native ms | threadhist ms (warm) | overhead | wall cold / warm | modules |"
declare -A PY=([triton]=triton_kernels.py [compile]=torch_compile.py [cupy]=cupy_default.py [jax]=jax_grad.py
	[eager]=torch_eager.py)
for name in triton compile cupy jax eager; do
	if [ -n "${ML_ONLY:-}" ] && ! [[ $name =~ $ML_ONLY ]]; then continue; fi
	py=$ROOT/tests/gpu/ml/${PY[$name]}
	mkdir -p "$W/shm-$name-native"
	if ! one $name native python3 "$py"; then
		nok "$name: runs natively: $(tail -3 "$L/$name.native.err" | tr '\n' ' ')"; continue
	fi
	ref=$(sum $name native)
	[ -n "$ref" ] || { nok "$name: no checksum natively"; continue; }
	cfgs="shim threadhist1 threadhist2 kernelretsnoop"
	# compilers that run ptxas themselves: also through gpuext-ptxas
	[[ $name =~ ^(triton|jax)$ ]] && cfgs="$cfgs ptxas"
	# ML_LS=N: also threadhist on a sample of launches (--launch-sample N)
	[ -n "${ML_LS:-}" ] && cfgs="$cfgs ls"
	for cfg in $cfgs; do
		mkdir -p "$W/shm-$name-$cfg"
		case $cfg in
		shim) one $name $cfg "$RUN" -v -- python3 "$py" ;;
		threadhist*) one $name $cfg "$RUN" -v --tool threadhist --json --trace "$L/$name.$cfg.trace.json" -- python3 "$py" ;;
		kernelretsnoop) one $name $cfg "$RUN" -v --tool kernelretsnoop --json -- python3 "$py" ;;
		ls) one $name $cfg "$RUN" -v --launch-sample "$ML_LS" --tool threadhist --json -- python3 "$py" ;;
		# XLA logs which ptxas it found (its search over PATH and its roots)
		ptxas) TF_CPP_MIN_LOG_LEVEL=0 TF_CPP_VMODULE=subprocess_compilation=3,assemble_compilation_provider=4 \
			one $name $cfg "$RUN" -v --ptxas --tool threadhist --json -- python3 "$py" ;;
		esac
		rc=$?
		got=$(sum $name $cfg)
		if [ $rc = 0 ] && [ "$got" = "$ref" ]; then
			ok "$name under $cfg: exit 0, checksum $got identical to native"
		else
			nok "$name under $cfg: rc $rc, checksum '$got' vs native '$ref': $(grep -v '^gpuext: module' "$L/$name.$cfg.err" | tail -3 | tr '\n' ' ')"
		fi
		if [[ $cfg != shim ]]; then
			# the report (JSON, on stdout after the program's lines) must exist
			grep -q '"tool":' "$L/$name.$cfg.out" && ok "$name under $cfg: the report came" ||
				nok "$name under $cfg: no report: $(grep 'gpuext: error' "$L/$name.$cfg.err" | head -2 | tr '\n' ' ')"
		fi
	done
	if [[ " $cfgs " == *" ls "* ]]; then
		awk -v n="$(tms $name native)" -v t="$(tms $name ls)" -v w="$name" -v k="$ML_LS" 'BEGIN {
			if (n > 0 && t > 0) printf "bench: ml %s threadhist --launch-sample %s: %.1f ms vs native %.1f ms (%+.1f %%)\n", w, k, t, n, 100 * (t / n - 1) }'
	fi
	# the table row, from threadhist1's report and logs (and --ptxas's)
	for c in threadhist1 $([[ $cfgs == *ptxas* ]] && echo ptxas); do
	python3 - "$L" "$name" "$c" <<'P'
import json, re, sys
L, name, cfg = sys.argv[1], sys.argv[2], sys.argv[3]
def rd(p):
    try:
        return open(p, errors='replace').read()
    except OSError:
        return ''
err = rd('%s/%s.%s.err' % (L, name, cfg))
out = rd('%s/%s.%s.out' % (L, name, cfg))
rew = len(re.findall(r'module \d+ \([^)]*\): rewritten \([1-9]', err))
cub = len(re.findall(r'carried by its cubin', err))
psd = len(re.findall(r'passed through', err))
rep = None
for line in out.splitlines():
    if line.startswith('{"tool":'):
        rep = json.loads(line)
h = (rep or {}).get('host_launches', {})
# kernels the stack generated (not its precompiled libraries)
gen = {'triton': r'_kernel$|^triton', 'compile': r'^triton_', 'cupy': r'saxpy|sqplus|^cupy_',
       'jax': r'^(loop|input|fusion|wrapped|gemm_fusion|triton|reduce|transpose|copy|concatenate|broadcast|convert|select|add|multiply|subtract|divide|negate|tanh|exp)',
       'eager': r'^$'}[name]
n = ni = g = gi = 0
for k in h.get('kernels', []):
    n += k['launches']; ni += k['instrumented']
    if re.search(gen, k['kernel']):
        g += k['launches']; gi += k['instrumented']
def tm(c):
    m = re.search(r'^time_ms ([0-9.]+)', rd('%s/%s.%s.out' % (L, name, c)), re.M)
    return float(m.group(1)) if m else None
tn, t2 = tm('native'), tm('threadhist2' if cfg == 'threadhist1' else cfg)
gp = h.get('gpu_ns', 0)
print('| %s | %d | %d | %s | %s | %s | %s | %s | %s | %d rewritten (%d from cubins), %d passed through |' % (
    name + (' --ptxas' if cfg == 'ptxas' else ''), n, ni, '%d/%d = %.1f %%' % (gi, g, 100.0 * gi / g) if g else 'n/a',
    '%.1f %%' % (100.0 * h.get('gpu_ns_instrumented', 0) / gp) if gp else 'n/a',
    '%.1f' % tn if tn else '?', '%.1f' % t2 if t2 else '?',
    '%+.1f %%' % (100.0 * (t2 / tn - 1)) if tn and t2 else '?',
    '%s / %s ms' % (rd('%s/%s.%s.wall_ms' % (L, name, cfg)).strip(), rd('%s/%s.threadhist2.wall_ms' % (L, name)).strip()),
    rew, cub, psd))
P
	done
	grep 'gpuext: launches:' "$L/$name.threadhist1.err" | head -1 | sed "s/^/# $name: /"
done

# JAX's routes to the driver (ML_PROBE=1): which XLA flags this jaxlib
# accepts, and what then reaches the driver (rewritten modules) under a tool.
if [ "${ML_PROBE:-0}" = 1 ]; then
	mkdir -p "$W/fakecuda/bin"
	cat >"$W/fakecuda/bin/ptxas" <<'S'
#!/bin/sh
echo "ptxas $*" >>"$PTXAS_LOG"
exec "$REAL_PTXAS" "$@"
S
	chmod +x "$W/fakecuda/bin/ptxas"
	export PTXAS_LOG=$L/jax.ptxas.log REAL_PTXAS=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
	NOJIT=""
	for flags in "--xla_gpu_enable_libnvptxcompiler=false" "--xla_gpu_autotune_level=0" \
		"--xla_gpu_unsafe_fallback_to_driver_on_ptxas_not_found=true" "--xla_gpu_libnvjitlink_mode=disabled" \
		"--xla_gpu_libnvjitlink_mode=DISABLED" "--xla_gpu_libnvjitlink_mode=LIB_NV_JIT_LINK_MODE_DISABLED" \
		"--xla_gpu_libnvjitlink_mode=2" "--xla_gpu_enable_llvm_module_compilation_parallelism=true"; do
		if XLA_FLAGS="$flags" timeout 60 python3 -c 'import jax; jax.jit(lambda x: x + 1)(1.0).block_until_ready()' \
			>"$W/flag.out" 2>&1; then
			echo "# jax accepts $flags"
			[[ -z $NOJIT && $flags == *libnvjitlink_mode* ]] && NOJIT=$flags
		else echo "# jax refuses $flags: $(tail -1 "$W/flag.out")"; fi
	done
	# XLA's own account of how it compiles PTX (its decision log, VLOG 4)
	XLA_FLAGS="--xla_gpu_enable_libnvptxcompiler=false --xla_gpu_cuda_data_dir=$W/fakecuda" TF_CPP_MIN_LOG_LEVEL=0 \
		TF_CPP_VMODULE=assemble_compilation_provider=4,subprocess_compilation=3,nvjitlink=3,ptx_compiler=3 \
		timeout 60 python3 -c 'import jax; jax.jit(lambda x: x + 1)(1.0).block_until_ready()' >"$L/jax.decision.log" 2>&1
	grep -iE 'nvjitlink|nvptxcompiler|ptxas|driver|compilation' "$L/jax.decision.log" | head -20 | sed 's/^/# xla: /'
	v=0
	for flags in "--xla_gpu_enable_libnvptxcompiler=false --xla_gpu_cuda_data_dir=$W/fakecuda" \
		"--xla_gpu_enable_libnvptxcompiler=false --xla_gpu_enable_llvm_module_compilation_parallelism=true --xla_gpu_unsafe_fallback_to_driver_on_ptxas_not_found=true --xla_gpu_cuda_data_dir=$W/fakecuda" \
		${NOJIT:+"$NOJIT --xla_gpu_enable_libnvptxcompiler=false --xla_gpu_cuda_data_dir=$W/nocuda --xla_gpu_unsafe_fallback_to_driver_on_ptxas_not_found=true"} \
		"--xla_gpu_enable_libnvptxcompiler=false --xla_gpu_cuda_data_dir=$W/nocuda --xla_gpu_unsafe_fallback_to_driver_on_ptxas_not_found=true"; do
		v=$((v + 1))
		: >"$PTXAS_LOG"
		mkdir -p "$W/shm-jax-probe$v"
		XLA_FLAGS="$flags" one jax probe$v "$RUN" -v --tool threadhist --json -- python3 "$ROOT/tests/gpu/ml/jax_grad.py"
		echo "# jax probe $v (XLA_FLAGS=$flags): rc $?, checksum $(sum jax probe$v), $(grep -c 'rewritten (' "$L/jax.probe$v.err") rewritten, $(grep -c 'passed through' "$L/jax.probe$v.err") passed through, ptxas calls $(wc -l <"$PTXAS_LOG"), $(grep 'gpuext: launches' "$L/jax.probe$v.err" | head -1)"
		head -3 "$PTXAS_LOG" | sed 's/^/#   /'
	done
fi
