#!/usr/bin/env bash
# gpuext-ptxas: a ptxas that compiles the process's device policies in
# (Triton, XLA under gpuext-run --ptxas). It answers --version like ptxas,
# passes every other option through, compiles the policies' hooks into the
# cubin (it defines __gx_devrt; with -lineinfo its carried PTX has the
# hooks), compiles exactly what ptxas would without a policy, and falls back
# to the original input when anything goes wrong.
set -u
B=${BUILD:-build}
B=$(cd "$B" && pwd)
PTXAS=${PTXAS:-/usr/local/cuda/bin/ptxas}
W=$B/bin/gpuext-ptxas
G=$B/bin/gpuext
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
check() { if eval "$2" >/dev/null 2>&1; then echo "ok - ptxas: $1"; else echo "not ok - ptxas: $1"; sed 's/^/#  /' $T/err 2>/dev/null | tail -5; fi; }
cp tests/ptx-rewrite/golden-passes/vadd.ptx $T/k.ptx
# the wrapper's temporary files in a folder of this test's own (the leak
# check below must not see another process's /tmp/gpuext-ptxas-*)
mkdir -p $T/tmp
export GPUEXT_REAL_PTXAS=$PTXAS GPUEXT_CACHE_DIR=$T/cache TMPDIR=$T/tmp
check "--version answers like ptxas" "[ \"\$($W --version)\" = \"\$($PTXAS --version)\" ]"
check "through the XLA data folder's bin/ptxas too" "[ \"\$($B/share/gpuext/cuda/bin/ptxas --version)\" = \"\$($PTXAS --version)\" ]"
check "no policy: the cubin is ptxas's, byte for byte" \
	"$W -arch=sm_90 -O3 $T/k.ptx -o $T/plain.cubin && $PTXAS -arch=sm_90 -O3 $T/k.ptx -o $T/ref.cubin && cmp $T/plain.cubin $T/ref.cubin"
check "under a tool: compiled with the hooks in (__gx_devrt defined)" \
	"GPUEXT_TOOL=threadhist $W -arch=sm_90 -lineinfo $T/k.ptx -o $T/h.cubin 2>$T/err && strings $T/h.cubin | grep -q __gx_devrt && ! strings $T/ref.cubin | grep -q __gx_devrt"
check "under a tool: the PTX the cubin carries is the rewritten one" \
	"$G fatbin extract --ptx -o $T/x $T/h.cubin && grep -q __gx_devrt $T/x/*.lineinfo.ptx"
check "options pass through (-v prints ptxas's resource usage)" \
	"GPUEXT_TOOL=threadhist $W -arch=sm_90 -v $T/k.ptx -o $T/v.cubin 2>&1 | grep -q 'Used [0-9]* registers'"
check "the input file is left as it was" "cmp $T/k.ptx tests/ptx-rewrite/golden-passes/vadd.ptx"
check "no temporary file left behind" "[ -z \"\$(ls $T/tmp)\" ]"
# Whatever ends a run, its temporary file goes: a caller that stops reading
# (`| head -n1` — the old wrapper died of SIGPIPE writing its warning, after
# retrying a ptxas that SIGPIPE had killed), a terminating signal. A fake
# ptxas that writes, pauses and writes again makes the pipe case certain.
printf '#!/bin/sh\necho one; sleep 0.3; echo two; echo three\n' >$T/slowptxas; chmod +x $T/slowptxas
printf '#!/bin/sh\nexec sleep 3\n' >$T/sleepptxas; chmod +x $T/sleepptxas
check "a closed output: no temporary file, no second run of ptxas" \
	"GPUEXT_REAL_PTXAS=$T/slowptxas GPUEXT_TOOL=threadhist $W -arch=sm_90 $T/k.ptx -o $T/s.cubin 2>&1 | head -n1 >$T/head.out; [ \"\$(cat $T/head.out)\" = one ] && [ -z \"\$(ls $T/tmp)\" ]"
check "SIGTERM while ptxas runs: the temporary file removed, the wrapper ended by the signal" \
	"GPUEXT_REAL_PTXAS=$T/sleepptxas GPUEXT_TOOL=threadhist $W -arch=sm_90 $T/k.ptx -o $T/t.cubin & p=\$!; for i in 1 2 3 4 5 6 7 8 9 10; do [ -n \"\$(ls $T/tmp)\" ] && break; sleep 0.2; done; [ -n \"\$(ls $T/tmp)\" ] && kill -TERM \$p; wait \$p; rc=\$?; [ \$rc = 143 ] && [ -z \"\$(ls $T/tmp)\" ]"
check "an unknown tool: one line, the original compiled" \
	"GPUEXT_TOOL=nosuchtool $W -arch=sm_90 -O3 $T/k.ptx -o $T/u.cubin 2>$T/err && grep -q 'policy nosuchtool: cannot read' $T/err && cmp $T/u.cubin $T/ref.cubin"
printf '.version 9.0\n.target sm_90\n.address_size 64\n.visible .entry bad() { bogus.op; ret; }\n' >$T/bad.ptx
check "through the XLA data folder's link, the tools and the JIT are found" \
	"GPUEXT_TOOL=threadhist $B/share/gpuext/cuda/bin/ptxas -arch=sm_90 $T/k.ptx -o $T/l.cubin 2>$T/err && strings $T/l.cubin | grep -q __gx_devrt"
check "PTX that fails in ptxas still fails, with ptxas's own exit status" \
	"! GPUEXT_TOOL=threadhist $W -arch=sm_90 $T/bad.ptx -o $T/bad.cubin 2>$T/err"
# jaxlib's XLA looks for <dir>/bin/ptxas over the folders of PATH: under
# gpuext-run --ptxas the first is ours, and it runs the real one past itself
check "gpuext-run --ptxas: the wrapper first on PATH, finding the real ptxas past itself" \
	"env -u GPUEXT_REAL_PTXAS PATH=$(dirname "$PTXAS"):/usr/bin:/bin $B/bin/gpuext-run --ptxas -- sh -c 'command -v ptxas | grep -q share/gpuext/cuda/bin && GPUEXT_TOOL=threadhist ptxas -arch=sm_90 $T/k.ptx -o $T/p.cubin' 2>$T/err && strings $T/p.cubin | grep -q __gx_devrt"
# XLA's ptxas command line: a temporary input with no extension
cp $T/k.ptx $T/tempfile-noext
check "an input with no .ptx extension (XLA's temporary files) is rewritten" \
	"GPUEXT_TOOL=threadhist $W $T/tempfile-noext -o $T/n.cubin -arch=sm_90a --warn-on-spills -v 2>$T/err && strings $T/n.cubin | grep -q __gx_devrt"
check "an option's value is not an input (-o naming an existing PTX file is overwritten, not read)" \
	"cp $T/k.ptx $T/out-is-ptx && GPUEXT_TOOL=threadhist $W -arch sm_90 $T/k.ptx -o $T/out-is-ptx 2>$T/err && ! grep -q '.version' $T/out-is-ptx"
