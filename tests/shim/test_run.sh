#!/usr/bin/env bash
# gpuext-run / gpuext run: arguments, errors with hints, environment, exec,
# and the --audit redirection of absolute-path dlopen.
set -u
B=${BUILD:-build}
R=$B/bin/gpuext-run
G=$B/bin/gpuext
FAKE=$PWD/$B/tests/shim/fakecuda/libcuda.so.1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check() { if eval "$2" >/dev/null 2>&1; then echo "ok - $1"; else echo "not ok - $1: $2"; fi; }
check "gpuext-run --help exits 0 with usage" "$R --help | grep -q '^usage: gpuext-run'"
check "gpuext run --help" "$G run --help | grep -q '^usage: gpuext run'"
check "--version" "$R --version | grep -q '^gpuext [0-9]'"
check "no command: error with usage hint, exit 2" "$R; [ \$? = 2 ] && $R 2>&1 | grep -q 'no command to run (usage:'"
check "unknown option: error with hint" "! $R --frob ls && $R --frob ls 2>&1 | grep -q \"unknown option '--frob' (try '--help'\""
check "--policy without value" "! $R --policy && $R --policy 2>&1 | grep -q 'needs a value'"
check "--policy unreadable file" "! $R --policy /nonexistent ls && $R --policy /nonexistent ls 2>&1 | grep -q \"cannot read policy '/nonexistent'\""
check "--log bad level" "$R --log loud ls 2>&1 | grep -q 'use error, warn, info or debug'"
check "missing command: exit 127 with hint" "$R -- /nonexistent/cmd; [ \$? = 127 ] && $R /nonexistent/cmd 2>&1 | grep -q 'cannot run'"
lib=$(cd "$B/lib" && pwd)
check "LD_LIBRARY_PATH starts with the shim folder" "LD_LIBRARY_PATH=/x $R -- env | grep -qx 'LD_LIBRARY_PATH=$lib:/x'"
check "TRITON_LIBCUDA_PATH is the shim folder" "$R env | grep -qx 'TRITON_LIBCUDA_PATH=$lib'"
check "-v sets GPUEXT_LOG=info, -v -v debug" "$R -v env | grep -qx GPUEXT_LOG=info && $R -v -v env | grep -qx GPUEXT_LOG=debug"
check "--tool and --policy exported" "$R --tool memtrace --policy $R -- env | grep -qx GPUEXT_TOOL=memtrace && $R --policy $R env | grep -q '^GPUEXT_POLICY=/'"
check "arguments after -- reach the command untouched" "[ \"\$($R -- printf '%s|' -v --tool)\" = '-v|--tool|' ]"
check "gpuext run runs the command" "$G run -- true && ! $G run -- false"
check "a CUDA program runs under gpuext-run" "GPUEXT_REAL_LIBCUDA=$FAKE $R -v -- $B/tests/shim/test_audit $FAKE real 2>&1 | grep -q 'shim active: real driver'"
out=$(GPUEXT_REAL_LIBCUDA=$FAKE $R --audit -- "$B/tests/shim/test_audit" "$FAKE" shim 2>&1)
echo "$out" | grep -E '^(not )?ok - '
echo "$out" | grep -q '^ok - absolute-path dlopen gives the shim' || echo "not ok - --audit redirection: $(echo "$out" | tail -3 | tr '\n' ' ')"
# The driver as installed: a versioned file behind a chain of links
# (lib64/libcuda.so.1 -> libcuda.so.580.159.04), opened by any of its names.
D=$tmp/nvidia/lib64
mkdir -p "$D" && cp "$FAKE" "$D/libcuda.so.580.159.04" && ln -s libcuda.so.580.159.04 "$D/libcuda.so.1" &&
	ln -s libcuda.so.1 "$D/libcuda.so" && ln -s "$D/libcuda.so" "$tmp/libdriver-alias.so" && cp "$FAKE" "$D/libcuda_other.so"
audit_case() { # WANT PATH DESCRIPTION
	local o
	o=$(GPUEXT_REAL_LIBCUDA=$D/libcuda.so.1 $R --audit -- "$B/tests/shim/test_audit" "$2" "$1" 2>&1)
	if echo "$o" | grep -q '^not ok' || ! echo "$o" | grep -q "^ok - absolute-path dlopen gives the"; then
		echo "not ok - --audit, $3: $(echo "$o" | grep -v '^ok' | tail -3 | tr '\n' ' ')"
	else
		echo "ok - --audit, $3"
	fi
}
audit_case shim "$D/libcuda.so.580.159.04" "dlopen of the versioned file (libcuda.so.580.159.04) gives the shim"
audit_case shim "$D/libcuda.so" "dlopen of the libcuda.so link gives the shim"
audit_case shim "$tmp/libdriver-alias.so" "dlopen of a link whose target is the driver gives the shim"
audit_case real "$D/libcuda_other.so" "a library of another name (libcuda_other.so) is not redirected"
# Device hooks need PTX: CuPy's own kernels are asked for as PTX when device
# code is attached (a tool or a device policy), never over the user's value,
# and not for host policies alone.
check "--tool sets CUPY_COMPILE_WITH_PTX=1" "$R --print-env --tool threadhist -- true | grep -qx 'CUPY_COMPILE_WITH_PTX=1'"
check "a device --policy sets CUPY_COMPILE_WITH_PTX=1" \
	"$R --print-env --policy $B/share/gpuext/tools/threadhist.bpf.o -- true | grep -qx 'CUPY_COMPILE_WITH_PTX=1'"
check "a host --policy alone does not" "! $R --print-env --policy $B/hostbpf/gx_seq.bpf.o -- true | grep -q CUPY_COMPILE_WITH_PTX"
# SIGTERM to gpuext-run --tool (timeout, kill, a service manager) reaches
# the application, which ends; before, it ran on orphaned (GPU run 97)
GPUEXT_SHM_DIR=$tmp $R --tool threadhist -- sh -c "echo \$\$ >$tmp/app.pid; exec sleep 30" >/dev/null 2>&1 &
rp=$!
for _ in $(seq 100); do [ -s $tmp/app.pid ] && break; sleep 0.05; done
kill -TERM $rp
wait $rp
trc=$?
sleep 0.2
check "SIGTERM to gpuext-run --tool is passed to the application: it ends too, status 143" \
	"[ -s $tmp/app.pid ] && ! kill -0 \$(cat $tmp/app.pid) && [ $trc = 143 ]"
check "--jit-async sets GPUEXT_JIT_ASYNC=1" "$R --print-env --jit-async --tool threadhist -- true | grep -qx 'GPUEXT_JIT_ASYNC=1'"
check "--launch-sample sets GPUEXT_LAUNCH_SAMPLE" "$R --print-env --launch-sample 16,first=4 --tool threadhist -- true | grep -qx 'GPUEXT_LAUNCH_SAMPLE=16,first=4'"
check "--every-launch sets GPUEXT_LAUNCH_SAMPLE=1" "$R --print-env --every-launch --tool threadhist -- true | grep -qx 'GPUEXT_LAUNCH_SAMPLE=1'"
check "no --launch-sample: GPUEXT_LAUNCH_SAMPLE left to the shim's default" "! env -u GPUEXT_LAUNCH_SAMPLE $R --print-env --tool threadhist -- true | grep -q 'GPUEXT_LAUNCH_SAMPLE'"
check "--launch-sample with a bad value: exit 2 before the run, one error line" \
	"! $R --launch-sample 16,first= --tool threadhist -- true 2>$tmp/ls.err && grep -q 'expected N\[,first=K\]' $tmp/ls.err && ! $R --launch-sample 0 -- true 2>/dev/null"
check "--tool puts XLA on gpuext-ptxas (first on PATH, XLA_FLAGS), Triton untouched" \
	"$R --print-env --tool threadhist -- true >$tmp/env && grep -q '^PATH=.*share/gpuext/cuda/bin:' $tmp/env && grep -q '^XLA_FLAGS=.*xla_gpu_enable_libnvptxcompiler=false' $tmp/env && ! grep -q TRITON_PTXAS_PATH $tmp/env"
check "a host --policy alone leaves PATH and XLA_FLAGS" \
	"$R --print-env --policy $B/hostbpf/gx_seq.bpf.o -- true >$tmp/env && ! grep -qE '^(PATH|XLA_FLAGS)=' $tmp/env"
check "--ptxas puts Triton on it too" "$R --print-env --ptxas -- true | grep -q '^TRITON_PTXAS_PATH=.*gpuext-ptxas'"
check "the user's CUPY_COMPILE_WITH_PTX stays" \
	"! CUPY_COMPILE_WITH_PTX=0 $R --print-env --tool threadhist -- true | grep -q CUPY_COMPILE_WITH_PTX"
