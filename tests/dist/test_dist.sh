#!/usr/bin/env bash
# make dist's payload, used the way a GPU host without LLVM uses it:
# - scripts/dist-check.sh refuses binaries a stock GPU host cannot run
#   (a glibc symbol newer than 2.34, a library outside the allowed set, an
#   absolute RPATH, a file naming the build folder) and passes a clean one;
# - the tarball unpacked into another folder, with a scratch HOME, no JIT
#   library and the fake driver: the CLI finds its lib/ and share/, a tool
#   and a schedule policy attach from the shipped JIT cache, a host policy
#   runs interpreted, gpuext-run prints the tool's report;
# - the JIT add-on unpacked over it: libgxjit.so finds LLVM beside itself
#   and JITs a policy;
# - the wheel installed with pip into a fresh virtualenv (no network): its
#   console scripts run the same programs, and a traced run works.
set -u
B=${BUILD:-build}
B=$(cd "$B" && pwd)
ROOT=$(pwd)
V=$(sed -n 's/^#define GX_VERSION "\([^"]*\)".*/\1/p' common/gx_util.h)
T=$(mktemp -d /tmp/gx-dist.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
FAKE=$B/tests/attach/fakecuda/libcuda.so.1
APP=$B/tests/attach/attach_app
PTX=$ROOT/tests/ptx-rewrite/golden-passes/vadd.ptx
K=$(sed -n 's/.*\.entry \([A-Za-z0-9_]*\).*/\1/p' "$PTX" | head -1)
check() { # what, condition, log to show on failure
	if eval "$2"; then echo "ok - dist: $1"; else
		echo "not ok - dist: $1"
		[ -n "${3:-}" ] && [ -f "$3" ] && tail -n 8 "$3" | sed 's/^/#  /'
	fi
}

# ---- dist-check on binaries made to fail it ----
mkdir -p "$T/neg"/{new,lib,rpath,path,clean}/bin
printf '#include <stdlib.h>\nint main(void){return (int)(arc4random() & 1);}\n' >"$T/new.c"
printf 'int main(void){return 0;}\n' >"$T/ok.c"
printf '#include <crypt.h>\nint f(void){return crypt("a","ab") != 0;}\n' >"$T/lib.c"
cc -o "$T/neg/new/bin/x" "$T/new.c" && cc -o "$T/neg/clean/bin/x" "$T/ok.c" &&
	cc -shared -fPIC -o "$T/neg/lib/bin/x.so" "$T/lib.c" -lcrypt &&
	cc -o "$T/neg/rpath/bin/x" "$T/ok.c" -Wl,-rpath,/opt/somewhere &&
	cp "$T/neg/clean/bin/x" "$T/neg/path/bin/x" && echo "built in $ROOT/build" >"$T/neg/path/bin/note" &&
	mkdir -p "$T/neg/clean/share/doc" && echo "see $ROOT/build" >"$T/neg/clean/share/doc/x.md" ||
	echo "not ok - dist: cannot build the dist-check samples"
scripts/dist-check.sh "$T/neg/new" >"$T/new.log" 2>&1
check "dist-check refuses a symbol newer than GLIBC_2.34 and names it" \
	"[ \$? != 0 ] && grep -q 'bin/x needs GLIBC_2.36 .*arc4random' $T/new.log" "$T/new.log"
scripts/dist-check.sh "$T/neg/lib" >"$T/lib.log" 2>&1
check "dist-check refuses a library outside the allowed set" \
	"[ \$? != 0 ] && grep -q 'bin/x.so needs libcrypt.so.1' $T/lib.log" "$T/lib.log"
scripts/dist-check.sh "$T/neg/rpath" >"$T/rpath.log" 2>&1
check "dist-check refuses an absolute RPATH" "[ \$? != 0 ] && grep -q '/opt/somewhere' $T/rpath.log" "$T/rpath.log"
scripts/dist-check.sh "$T/neg/path" "$ROOT" >"$T/path.log" 2>&1
check "dist-check refuses a file naming the build folder" "[ \$? != 0 ] && grep -q 'bin/note names the build folder' $T/path.log" "$T/path.log"
scripts/dist-check.sh "$T/neg/clean" "$ROOT" >"$T/clean.log" 2>&1
check "dist-check passes a clean binary (a document may name any folder)" "[ \$? = 0 ] && [ ! -s $T/clean.log ]" "$T/clean.log"

# ---- make dist ----
if ! scripts/dist.sh "$B" "$V" >"$T/dist.log" 2>&1 ||
	! SOURCE_DATE_EPOCH=315532800 python3 scripts/wheel.py "$B/dist/gpuext-$V" "$V" "$B/dist" >>"$T/dist.log" 2>&1; then
	echo "not ok - dist: scripts/dist.sh and wheel.py build the payload"
	sed 's/^/#  /' "$T/dist.log" | tail -n 20
	exit 0
fi
echo "ok - dist: scripts/dist.sh and wheel.py build the payload"
TGZ=$B/dist/gpuext-$V-linux-x86_64.tar.gz
ADDON=$B/dist/gpuext-llvm-$V-linux-x86_64.tar.gz
WHL=$B/dist/gpuext-$V-py3-none-manylinux_2_34_x86_64.whl
check "tarball within the 30 MB goal ($(($(stat -c %s "$TGZ") >> 10)) KiB)" "[ \$(stat -c %s $TGZ) -le $((30 << 20)) ]"
tar -tzf "$TGZ" >"$T/list"
missing=""
for f in bin/gpuext bin/gpuext-run bin/gpuext-ptxas bin/gpuext-exporter bin/gx_seq lib/libcuda.so.1 lib/libcuda.so lib/gpuext-audit.so \
	share/gpuext/tools/threadhist.bpf.o share/gpuext/sched/adaptive.bpf.o share/gpuext/host/gx_seq.bpf.o \
	share/gpuext/tenant/gx_lcslo.bpf.o share/gpuext/include/gpuext/gdev_helpers.h share/gpuext/cuda/bin/ptxas \
	share/gpuext/exporter/threadhist.conf share/gpuext/exporter/kernelretsnoop.conf share/gpuext/exporter/gpuext.json \
	share/doc/gpuext/DESIGN.md share/doc/gpuext/LICENSES/GPL-2.0-only.txt LICENSE README.md; do
	grep -qx "gpuext-$V/$f" "$T/list" || missing="$missing $f"
done
check "tarball holds programs, shim, policies, headers, docs and licences${missing:+ (missing:$missing)}" "[ -z '$missing' ]"
check "tarball holds no JIT library (that is the add-on)" "! grep -q 'libgxjit\|libLLVM' $T/list"
# 5 tools + their 7 load-time variants with their own code (gx_tools.h;
# memtrace_gate is memtrace's build) + 5 schedule policies,
# for sm_70 75 80 86 87 89 90
ncache=$(grep -c "gpuext-$V/share/gpuext/cache/.*\.gxpol$" "$T/list")
check "shipped JIT cache: 18 objects x 7 architectures ($ncache entries)" "[ $ncache = 126 ]"
check "tarball entries owned by root" "tar -tvzf $TGZ | awk '{print \$2}' | sort -u | grep -qx '0/0'"

# ---- the tarball on a host without LLVM: another folder, scratch HOME ----
P=$T/opt/gx
mkdir -p "$T/opt" "$T/home" && tar -xzf "$TGZ" -C "$T/opt" && mv "$T/opt/gpuext-$V" "$P"
hostenv() { env -i PATH=/usr/bin:/bin HOME="$T/home" GPUEXT_REAL_LIBCUDA="$FAKE" FAKECUDA_DEVICES=1 \
	GPUEXT_SHM_DIR="$T/shm" GPUEXT_FLUSH_MS=10 "$@"; }
mkdir -p "$T/shm"
check "unpacked: gpuext version" "hostenv $P/bin/gpuext version | grep -qx 'gpuext $V'"
hostenv "$P/bin/gpuext" tools >"$T/tools.log" 2>&1
check "unpacked: gpuext tools finds every object in share/" "grep -q threadhist $T/tools.log && ! grep -q 'object missing' $T/tools.log" "$T/tools.log"
hostenv "$P/bin/gpuext-run" --print-env -- true >"$T/env.log" 2>&1
check "unpacked: gpuext-run puts the unpacked lib/ first" "grep -q '^LD_LIBRARY_PATH=$P/lib' $T/env.log" "$T/env.log"
hostenv "$P/bin/gpuext-run" -v --every-launch --tool threadhist -- timeout 60 "$APP" "$PTX" "$K" policy >"$T/th.out" 2>"$T/th.err"
rc=$?
check "unpacked: threadhist from the shipped JIT cache" \
	"grep -q 'policy threadhist: from the JIT cache ($P/share/gpuext/cache' $T/th.err" "$T/th.err"
check "unpacked: the module rewritten, nothing running without it" \
	"grep -q 'rewritten ([1-9][0-9]* hooks)' $T/th.err && ! grep -q 'running without it' $T/th.err" "$T/th.err"
check "unpacked: gpuext-run prints threadhist's report, exit 0" \
	"[ $rc = 0 ] && grep -q 'threadhist: .* 2 blocks, 4 warps, 128 threads' $T/th.out $T/th.err" "$T/th.err"
check "unpacked: nothing written into the install" "[ -z \"\$(find $P -newer $TGZ -type f)\" ]"
hostenv GPUEXT_LOG=info GPUEXT_SCHED=adaptive timeout 60 "$P/bin/gpuext-run" --sched adaptive -- "$APP" "$PTX" "$K" policy \
	>"$T/sched.out" 2>"$T/sched.err"
check "unpacked: --sched adaptive from the shipped JIT cache" \
	"grep -q 'policy adaptive: from the JIT cache ($P/share/gpuext/cache' $T/sched.err" "$T/sched.err"
# (the app runs without gpuext-run here: LD_LIBRARY_PATH by hand, as a container image would)
hostenv LD_LIBRARY_PATH="$P/lib" GPUEXT_LOG=info GPUEXT_POLICY="$P/share/gpuext/host/gx_seq.bpf.o" \
	timeout 60 "$APP" "$PTX" "$K" none >"$T/host.out" 2>"$T/host.err"
check "unpacked: a host policy runs interpreted (no LLVM)" \
	"grep -q \"attached memory policy 'seq' (interpreted)\" $T/host.err" "$T/host.err"

# ---- the JIT add-on over the install ----
tar -xzf "$ADDON" -C "$T/opt" && cp -a "$T/opt/gpuext-$V/." "$P/" && rm -rf "$T/opt/gpuext-$V"
ldd "$P/lib/libgxjit.so" >"$T/ldd.log" 2>&1
check "add-on: libgxjit.so finds LLVM beside itself and needs no libbpf" \
	"grep -q 'libLLVM.so.19.1 => $P/lib/gpuext-llvm/' $T/ldd.log && ! grep -q 'libbpf' $T/ldd.log" "$T/ldd.log"
# run by a bare name (argv[0] without a folder, as the wheel's scripts do)
hostenv LD_DEBUG=libs PATH="$P/bin:/usr/bin:/bin" gpuext tools prepare --cache-dir "$T/usercache" --sm 80 \
	"$P/share/gpuext/sched/greedy.bpf.o" >"$T/prep.log" 2>&1
check "add-on: gpuext tools prepare JITs a policy on the host" "ls $T/usercache/*-sm80-*.gxpol >/dev/null 2>&1" "$T/prep.log"
for l in libLLVM.so.19.1 libz3.so.4 libedit.so.2; do
	check "add-on: $l loaded from lib/gpuext-llvm, not the system's" \
		"grep -q 'calling init: $P/lib/gpuext-llvm/$l' $T/prep.log" "$T/prep.log"
done

# ---- the wheel in a fresh virtualenv ----
if ! python3 -m venv "$T/venv" >"$T/venv.log" 2>&1; then
	echo "not ok - dist: python3 -m venv (python3-venv missing? run make deps)"; exit 0
fi
"$T/venv/bin/pip" install -q --no-deps --no-index "$WHL" >"$T/pip.log" 2>&1
check "wheel: pip install --no-deps --no-index into a virtualenv" "[ \$? = 0 ] && [ -x $T/venv/bin/gpuext-run ]" "$T/pip.log"
W=$("$T/venv/bin/python" -c 'import gpuext; print(gpuext.prefix())' 2>/dev/null)
check "wheel: gpuext.prefix() is the installed payload" "[ -x '$W/bin/gpuext' ] && [ -f '$W/lib/libcuda.so.1' ]"
check "wheel: the gpuext console script" "hostenv $T/venv/bin/gpuext version | grep -qx 'gpuext $V'"
hostenv PATH="$T/venv/bin:/usr/bin:/bin" gpuext-run -v --every-launch --tool threadhist -- timeout 60 "$APP" "$PTX" "$K" policy \
	>"$T/wth.out" 2>"$T/wth.err"
rc=$?
check "wheel: gpuext-run --tool threadhist from the wheel's JIT cache, report printed" \
	"[ $rc = 0 ] && grep -q 'policy threadhist: from the JIT cache ($W/share/gpuext/cache' $T/wth.err && grep -q 'threadhist: .* 2 blocks, 4 warps, 128 threads' $T/wth.out $T/wth.err" "$T/wth.err"
# The wheel cannot hold links: its cuda/bin/ptxas is a copy that must still
# find the real ptxas, not itself or bin/gpuext-ptxas (no loop).
out=$(hostenv PATH="$W/share/gpuext/cuda/bin:$W/bin:/usr/local/cuda/bin:/usr/bin:/bin" \
	timeout 20 "$W/share/gpuext/cuda/bin/ptxas" --version 2>&1)
check "wheel: the copied ptxas reaches the real ptxas" "[[ \"\$out\" == *'Cuda compilation tools'* ]]"
