#!/usr/bin/env bash
# Installing where the GPUs are (issue 36), on the GPU machine with only
# make dist's tarball and wheel copied over (GX_DIST, default .carry/dist,
# made by `make gpu-dist`): no build tree, no LLVM, no libbpf.
#  - wheel: `pip install --no-deps` into the Python environment that holds
#    torch, and into a fresh virtualenv; `gpuext doctor`; `gpuext-run --tool
#    threadhist` on a
#    PyTorch + Triton program (tests/gpu/ml/triton_kernels.py): the same
#    checksum as natively, a report; the time from nothing to the first
#    traced run (the two commands: pip install, gpuext-run);
#  - tarball: unpacked anywhere; `gpuext-run --sched adaptive` on a CUDA
#    binary (built here with nvcc, PTX only so the shim rewrites it): the same
#    sums; a host policy (gx_seq, interpreted) on a managed-memory program;
#    a device policy the user wrote and prepared on the build machine
#    (install/blockcount.bpf.c and its JIT cache) attaches.
set -u
ROOT=${GX_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
OUT=${OUT:-/tmp/gpu-out}
L=$OUT/install
mkdir -p "$L"
D=$(cd "${GX_DIST:-$ROOT/.carry/dist}" && pwd) || { echo "not ok - install: no GX_DIST folder (make gpu-dist)"; exit 0; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
ok() { echo "ok - install: $*"; }
nok() { echo "not ok - install: $*"; }
check() { if eval "$2"; then ok "$1"; else nok "$1"; [ -n "${3:-}" ] && tail -n 12 "$3" | sed 's/^/#  /'; fi; }
export PYTHONUNBUFFERED=1 CUBLAS_WORKSPACE_CONFIG=:4096:8
TGZ=$(ls "$D"/gpuext-*-linux-x86_64.tar.gz | head -1)
WHL=$(ls "$D"/gpuext-*.whl | head -1)
echo "commit: $(cat "$D/commit" 2>/dev/null)"
echo "dist: $(basename "$TGZ") $(stat -c %s "$TGZ") bytes, $(basename "$WHL") $(stat -c %s "$WHL") bytes" | tee "$L/sizes.txt"
ldconfig -p | grep -E 'libLLVM|libbpf' >"$L/llvm-on-host.txt" || echo "no libLLVM, no libbpf on this host" | tee "$L/llvm-on-host.txt"

# ---- the wheel: from nothing to the first traced run ----
# The user's Python environment is the one holding torch (python3 here is a
# virtualenv of its own): the two commands a user types, pip install and
# gpuext-run, timed from nothing (a cold Triton cache) to the report.
export HOME=$W/home TRITON_CACHE_DIR=$W/triton
mkdir -p "$HOME"
PY=$ROOT/tests/gpu/ml/triton_kernels.py
python3 "$PY" >"$L/triton.native.out" 2>"$L/triton.native.err"
rm -rf "$TRITON_CACHE_DIR"   # the traced run compiles as a first run would
PYBIN=$(dirname "$(python3 -c 'import sys; print(sys.executable)')")
t0=$(date +%s%N)
python3 -m pip install -q --no-deps --no-index "$WHL" >"$L/pip.log" 2>&1
pip_rc=$?
"$PYBIN/gpuext-run" --tool threadhist -- python3 "$PY" >"$L/triton.th.out" 2>"$L/triton.th.err"
rc=$?
t1=$(date +%s%N)
ms=$(( (t1 - t0) / 1000000 ))
echo "bench: install: pip install + first traced run (Triton, cold Triton cache): $ms ms" | tee "$L/first-run.txt"
check "wheel: pip install --no-deps into the torch environment, console scripts there" "[ $pip_rc = 0 ] && [ -x $PYBIN/gpuext-run ]" "$L/pip.log"
"$PYBIN/gpuext" doctor >"$L/doctor.txt" 2>&1
drc=$?
"$PYBIN/gpuext" --json doctor >"$L/doctor.json" 2>&1
cat "$L/doctor.txt"
check "wheel: gpuext doctor reports no failure" "[ $drc = 0 ]" "$L/doctor.txt"
# Under gpuext-run (the shim first, as an application sees it): nothing to fix.
"$PYBIN/gpuext-run" -- "$PYBIN/gpuext" doctor >"$L/doctor-run.txt" 2>&1
check "wheel: gpuext-run -- gpuext doctor: every line ok or info" \
	"[ \$? = 0 ] && ! grep -Eq '^(warn|fail) ' $L/doctor-run.txt && grep -Eq '^ok +interpose' $L/doctor-run.txt" "$L/doctor-run.txt"
# and into a fresh virtualenv (ensurepip may be missing: then pip from outside)
if python3 -m venv "$W/venv" >"$L/venv.log" 2>&1; then
	"$W/venv/bin/python" -m pip install -q --no-deps --no-index "$WHL" >>"$L/venv.log" 2>&1
else
	python3 -m venv --without-pip "$W/venv" >>"$L/venv.log" 2>&1 &&
		python3 -m pip --python "$W/venv/bin/python" install -q --no-deps --no-index "$WHL" >>"$L/venv.log" 2>&1
fi
check "wheel: a fresh virtualenv: pip install, gpuext version" "$W/venv/bin/gpuext version | grep -q '^gpuext '" "$L/venv.log"
sum_n=$(sed -n 's/^checksum //p' "$L/triton.native.out" | head -1)
sum_t=$(sed -n 's/^checksum //p' "$L/triton.th.out" | head -1)
check "wheel: Triton + PyTorch under threadhist: checksum identical ($sum_n)" "[ $rc = 0 ] && [ -n '$sum_n' ] && [ '$sum_n' = '$sum_t' ]" "$L/triton.th.err"
check "wheel: threadhist's report printed" "grep -q 'threadhist: .*blocks' $L/triton.th.out $L/triton.th.err" "$L/triton.th.err"
check "wheel: no 'running without it' (the tool from the wheel's JIT cache)" "! grep -q 'running without it' $L/triton.th.err" "$L/triton.th.err"
check "from nothing to the first traced run <= 60 s ($ms ms)" "[ $ms -le 60000 ]"

# ---- the tarball ----
P=$W/opt/gpuext
mkdir -p "$W/opt" && tar -xzf "$TGZ" -C "$W/opt" && mv "$W"/opt/gpuext-* "$P"
"$P/bin/gpuext" doctor >"$L/doctor-tarball.txt" 2>&1
check "tarball: gpuext doctor reports no failure" "[ \$? = 0 ]" "$L/doctor-tarball.txt"
nvcc -O2 -I"$ROOT" -gencode arch=compute_90,code=compute_90 -o "$W/sched_app" "$ROOT/tests/gpu/sched_app.cu" >"$L/nvcc.log" 2>&1 &&
	nvcc -O2 -gencode arch=compute_90,code=compute_90 -o "$W/hp_streams" "$ROOT/tests/gpu/hostpolicy_streams.cu" >>"$L/nvcc.log" 2>&1 ||
	nok "nvcc on the GPU host"
"$W/sched_app" >"$L/sched.native.out" 2>&1
GPUEXT_LOG=info "$P/bin/gpuext-run" --sched adaptive -- "$W/sched_app" >"$L/sched.adaptive.out" 2>"$L/sched.adaptive.err"
rc=$?
check "tarball: --sched adaptive: the CUDA binary's sums identical" \
	"[ $rc = 0 ] && grep -q '^sum ' $L/sched.native.out && diff <(grep '^sum ' $L/sched.native.out) <(grep '^sum ' $L/sched.adaptive.out) >/dev/null" "$L/sched.adaptive.err"
check "tarball: adaptive from the shipped JIT cache, kernels launched persistent" \
	"grep -q 'policy adaptive: from the JIT cache' $L/sched.adaptive.err && grep -qi 'persistent' $L/sched.adaptive.err" "$L/sched.adaptive.err"
"$W/hp_streams" >"$L/hp.native.out" 2>&1
GPUEXT_LOG=info "$P/bin/gpuext-run" --policy "$P/share/gpuext/host/gx_seq.bpf.o" -- "$W/hp_streams" >"$L/hp.seq.out" 2>"$L/hp.seq.err"
rc=$?
check "tarball: host policy gx_seq attached (interpreted: no LLVM here) and ran" \
	"[ $rc = 0 ] && grep -q \"attached memory policy 'seq'\" $L/hp.seq.err && grep -q 'prefetch calls issued' $L/hp.seq.err" "$L/hp.seq.err"
check "tarball: host policy: the managed-memory program's result identical" \
	"[ -n \"\$(grep RESULT $L/hp.native.out)\" ] && [ \"\$(grep RESULT $L/hp.native.out)\" = \"\$(grep RESULT $L/hp.seq.out)\" ]" "$L/hp.seq.out"
# The user's own device policy: compiled and prepared on the build machine.
mkdir -p "$HOME/.cache/gpuext" && cp "$D"/usercache/*.gxpol "$HOME/.cache/gpuext/"
GPUEXT_LOG=info "$P/bin/gpuext-run" --policy "$D/blockcount.bpf.o" -- "$W/sched_app" >"$L/user.out" 2>"$L/user.err"
rc=$?
check "tarball: the user's device policy attaches from the cache prepared on the build machine" \
	"[ $rc = 0 ] && grep -q 'policy blockcount: from the JIT cache' $L/user.err && grep -q 'rewritten ([1-9][0-9]* hooks)' $L/user.err" "$L/user.err"
check "tarball: under the user's policy the sums are identical" \
	"diff <(grep '^sum ' $L/sched.native.out) <(grep '^sum ' $L/user.out) >/dev/null" "$L/user.out"
# ---- the JIT add-on over the tarball (when carried): JIT on the GPU host ----
ADDON=$(ls "$D"/gpuext-llvm-*-linux-x86_64.tar.gz 2>/dev/null | head -1)
if [ -n "$ADDON" ]; then
	tar -xzf "$ADDON" -C "$W/opt" && cp -a "$W"/opt/gpuext-*/. "$P/" && rm -rf "$W"/opt/gpuext-*
	"$P/bin/gpuext" tools prepare --cache-dir "$W/jitcache" --sm 90 "$D/blockcount.bpf.o" >"$L/addon-prepare.log" 2>&1
	check "add-on: the user's policy verified and JIT'd on the GPU host" "ls $W/jitcache/*-sm90-*.gxpol >/dev/null 2>&1" "$L/addon-prepare.log"
	GPUEXT_LOG=info "$P/bin/gpuext-run" --policy "$P/share/gpuext/host/gx_seq.bpf.o" -- "$W/hp_streams" >"$L/hp.native.seq.out" 2>"$L/hp.native.seq.err"
	check "add-on: the host policy runs as native code" \
		"grep -q \"attached memory policy 'seq' (native)\" $L/hp.native.seq.err && [ \"\$(grep RESULT $L/hp.native.out)\" = \"\$(grep RESULT $L/hp.native.seq.out)\" ]" "$L/hp.native.seq.err"
fi
