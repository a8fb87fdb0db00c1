#!/usr/bin/env bash
# Every tool attaches the way it must on the GPU machine: no LLVM there (the
# shim is copied into a folder without libgxjit.so, GPUEXT_JITLIB unset), the
# JIT cache filled beforehand exactly as `make gpu-prep` does (`gpuext tools
# prepare --sm 90`), tool data in a run folder on a plain file system, and a
# driver that refuses to pin pages of file mappings (FAKEDEV_PIN_ANON_ONLY:
# what Linux >= 6.5 does to cuMemHostRegister on files outside tmpfs, which
# kept kernelretsnoop, launchlate and memtrace from attaching on the H200).
# Per tool: from the cache, hooks inserted, __gx_devrt written, not a single
# "running without it" line, one ring record (if the tool has a ring)
# reaches the report. A failing setup must say which tool and why. One fake
# device (FAKECUDA_DEVICES=1): the machine has one H200, and the policy is
# JIT'd for the lowest arch of all devices (the fake's default two differ).
set -u
# these checks look at the instrumented module itself, so every launch runs
# it (tools default to a sample of launches: test_launch_sample.sh)
export GPUEXT_LAUNCH_SAMPLE=1
B=${BUILD:-build}
B=$(cd "$B" && pwd)
T=$(mktemp -d "$B/tests/attach/attach-cache.XXXXXX"); trap "[ -n \"${KEEP:-}\" ] || rm -rf $T" EXIT
FAKE=$B/tests/attach/fakecuda/libcuda.so.1
APP=$B/tests/attach/attach_app
PTX=tests/ptx-rewrite/golden-passes/vadd.ptx
K=$(sed -n 's/.*\.entry \([A-Za-z0-9_]*\).*/\1/p' $PTX | head -1)
mkdir -p $T/lib $T/cache
# The shim without the JIT library beside it (the GPU machine's situation).
for f in $B/lib/libcuda.so*; do cp -P "$f" $T/lib/; done
[ ! -e $T/lib/libgxjit.so ] && echo "ok - cache: shim copied without libgxjit.so" ||
	echo "not ok - cache: shim copied without libgxjit.so"
if $B/bin/gpuext tools prepare --cache-dir $T/cache --sm 90 >$T/prepare.log 2>&1 &&
	[ "$(ls $T/cache/*.gxpol | wc -l)" = 13 ]; then
	echo "ok - cache: gpuext tools prepare --sm 90 cached the five tool objects and the nine variants (memtrace_gate is memtrace's own build: one entry)"
else
	echo "not ok - cache: gpuext tools prepare --sm 90 cached the five tool objects and the nine variants (memtrace_gate is memtrace's own build: one entry)"; sed 's/^/#  /' $T/prepare.log
fi

run() { # tool, out name, extra env...
	local t=$1 n=$2; shift 2
	mkdir -p $T/shm-$n
	env -u GPUEXT_TOOL -u GPUEXT_POLICY -u GPUEXT_JITLIB LD_LIBRARY_PATH=$T/lib GPUEXT_REAL_LIBCUDA=$FAKE \
		GPUEXT_LOG=info GPUEXT_TOOLS_DIR=$B/share/gpuext/tools GPUEXT_FLUSH_MS=10 GPUEXT_TOOL=$t \
		GPUEXT_CACHE_DIR=$T/cache GPUEXT_SHM_DIR=$T/shm-$n FAKEDEV_PIN_ANON_ONLY=1 FAKECUDA_DEVICES=1 \
		ATTACH_APP_RECORDS=1 "$@" \
		timeout 60 $APP $PTX $K ${MODE:-policy} >$T/$n.out 2>$T/$n.err
	echo $? >$T/$n.rc
}
check() { if eval "$2"; then echo "ok - cache: $1"; else echo "not ok - cache: $1"; sed 's/^/#  /' $T/$3.err | tail -6; fi; }

for t in kernelretsnoop kernelretsnoop_all threadhist launchlate memtrace; do
	run $t $t
	check "$t: from the JIT cache without the JIT library" "grep -q 'policy $t: from the JIT cache' $T/$t.err" $t
	check "$t: no 'running without it'" "! grep -q 'running without it' $T/$t.err" $t
	check "$t: module rewritten with hooks" "grep -q 'rewritten ([1-9][0-9]* hooks)' $T/$t.err" $t
	check "$t: __gx_devrt written with a valid block" "grep -q '^ok - attach_app: __gx_devrt written' $T/$t.out" $t
	check "$t: app exit 0" "[ \$(cat $T/$t.rc) = 0 ]" $t
	src=tools/${t%_all}.bpf.c
	[ -f "$src" ] || echo "not ok - $t: its source $src is missing"
	# the app writes one record into each ring and each record table
	# (attach_app.c); a tool has one or the other
	if [ $t = launchlate ] || [ $t = kernelretsnoop ]; then
		kind="record table's" written='one record written into slot'
	else
		kind="ring" written='one record written into ring'
	fi
	if grep -q 'RINGBUF\|GDEV_F_RECORDS' "$src"; then
		# tool log: framed records {u32 type, u32 len}; type 5 = a ring record
		check "$t: the $kind record reached the tool log, once" \
			"grep -q '$written' $T/$t.out && python3 - $T/shm-$t/*-$t.events <<'P'
import struct, sys
b = open(sys.argv[1], 'rb').read(); o = n = 0
while o + 8 <= len(b):
    ty, ln = struct.unpack_from('<II', b, o)
    if ln < 8: break
    n += ty == 5; o += ln
sys.exit(0 if n == 1 else 1)
P" $t
		$B/bin/gpuext --json tools report $t --dir $T/shm-$t >$T/$t.json 2>$T/$t.rep.err
		check "$t: JSON report valid" "python3 -m json.tool $T/$t.json >/dev/null" $t
	fi
done

# memtrace's sample gate through the shim (docs/devbpf-tools.md): 1 in 1024
# by default, a countdown at each memory site, and the kernel capped at the
# registers the driver gave the original (the fake says 16: .maxnreg 32);
# GX_MT_GATE=0 runs memtrace_prog (the program samples: no gate);
# GX_PTX_MEM_CAP=0 keeps the gate without the cap; GPUEXT_MEM_SAMPLE=1 (the
# full trace) has no gate. Each run starts with an empty module cache, and
# the checks count the modules it wrote (none found fails).
mods() { grep -l "$1" $T/cache/modules/*.gxmod 2>/dev/null; }
nmods() { mods "$1" | wc -l; }
mtrun() { rm -rf $T/cache/modules; run "$@"; }
cn='sub.u32.*_cn1024, .*_cn1024, 1;'
mtrun memtrace mt-default
check "memtrace (default): the 1-in-1024 countdown at its memory sites" \
	"[ \$(cat $T/mt-default.rc) = 0 ] && [ \$(nmods \"$cn\") -ge 1 ] && [ \$(nmods 'setp.lo.u32') = 0 ]" mt-default
# every kernel with memory sites keeps the original's registers, gate or not
# (GPU run 94: the default memtrace raised a 1,024-thread gemm past what its
# blocks allow, and the driver refused its launches)
check "memtrace (default): its kernel capped at the original's registers (.maxnreg 32)" \
	"[ \$(nmods 'gxp_memtrace') -ge 1 ] && [ \$(mods 'gxp_memtrace' | xargs grep -L '^.maxnreg 32' | wc -l) = 0 ]" mt-default
mtrun memtrace mt-prog GX_MT_GATE=0
check "memtrace GX_MT_GATE=0: memtrace_prog, no gate in the shim's module, still capped" \
	"grep -q 'object memtrace_prog' $T/mt-prog.err && [ \$(nmods 'gxp_memtrace') -ge 1 ] && [ \$(nmods '_cn[0-9]') = 0 ] && [ \$(nmods 'mov.u32.*%clock;') = 0 ] && [ \$(mods 'gxp_memtrace' | xargs grep -L '^.maxnreg 32' | wc -l) = 0 ]" mt-prog
mtrun memtrace mt-gate GX_MT_GATE=1
check "memtrace GX_MT_GATE=1: memtrace_gate, the same countdown and .maxnreg 32" \
	"grep -q 'object memtrace_gate' $T/mt-gate.err && [ \$(nmods \"$cn\") -ge 1 ] && [ \$(mods \"$cn\" | xargs grep -L '^.maxnreg 32' | wc -l) = 0 ]" mt-gate
mtrun memtrace mt-nocap GX_PTX_MEM_CAP=0
check "memtrace GX_PTX_MEM_CAP=0: gated, not capped" \
	"[ \$(cat $T/mt-nocap.rc) = 0 ] && [ \$(nmods \"$cn\") -ge 1 ] && [ \$(mods \"$cn\" | xargs grep -l maxnreg | wc -l) = 0 ]" mt-nocap
mtrun memtrace mt-full GPUEXT_MEM_SAMPLE=1
check "memtrace GPUEXT_MEM_SAMPLE=1: the full trace, no gate" \
	"[ \$(cat $T/mt-full.rc) = 0 ] && [ \$(nmods 'gxp_memtrace') -ge 1 ] && [ \$(nmods '_cn[0-9]') = 0 ]" mt-full
mtrun "" mt-knob GPUEXT_POLICY="$B/share/gpuext/tools/memtrace.bpf.o,gx_mem_sample=64"
check "memtrace as a policy with the knob gx_mem_sample=64: 1 in 64" \
	"[ \$(cat $T/mt-knob.rc) = 0 ] && grep -q 'knobs gx_mem_sample=64' $T/mt-knob.err && [ \$(nmods 'sub.u32.*_cn64, .*_cn64, 1;') -ge 1 ]" mt-knob

# A launch the driver refuses for its resources (an instrumented kernel's
# registers past what its blocks allow: GPU run 89) is said once, with the
# kernel, and the error goes back to the application as it came.
run threadhist oor FAKECUDA_OOR_THREADS=1
check "a launch refused with CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: one warning naming the kernel" \
	"[ \$(grep -c 'refused by the driver: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES' $T/oor.err) = 1 ] && grep -q \"launch of $K (blocks of\" $T/oor.err" oor

# Rings live in device memory; their host mirrors are only pinned when the
# driver lets us: a refused pin leaves the tool attached, its records
# (copied through staging) still reach the log, and the app runs.
run launchlate fail FAKEDEV_PIN_NONE=1 GX_LL_RING=1
check "refused pin of a ring mirror: the tool stays attached" \
	"! grep -q 'running without it' $T/fail.err && grep -q 'one record written into ring map 0 of policy 0' $T/fail.out && [ \$(stat -c %s $T/shm-fail/*-launchlate.events) -gt 200 ]" fail
check "refused pin of a ring mirror: the app runs on" "[ \$(cat $T/fail.rc) = 0 ]" fail

# Several device policies in one process (GPUEXT_TOOL=a,b; a tool beside
# GPUEXT_POLICY): each from the cache, called in order at shared hooks, each
# with its own maps, ring and tool log; the second reaches its runtime block
# through the first one's next[0].
run launchlate,threadhist two
check "two tools: both from the cache" \
	"grep -q 'policy launchlate: from the JIT cache' $T/two.err && grep -q 'policy threadhist: from the JIT cache' $T/two.err" two
check "two tools: one line with the order" "grep -q 'policy: 2 device policies, called in this order at shared hooks: launchlate, threadhist' $T/two.err" two
check "two tools: no 'running without it'" "! grep -q 'running without it' $T/two.err" two
check "two tools: hooks of both at the entry site (2 hooks)" "grep -q 'rewritten (2 hooks)' $T/two.err" two
check "two tools: the second policy's block in its own __gx_devrt__p1" "grep -q '^ok - attach_app: policy 1 has its own runtime block (1 maps)' $T/two.out" two
check "two tools: launchlate's record in its own log" "grep -q 'one record written into slot 77 of array map 0 of policy 0' $T/two.out && [ \$(stat -c %s $T/shm-two/*-launchlate.events) -gt 200 ]" two
$B/bin/gpuext --json tools report threadhist --dir $T/shm-two >$T/two-th.json 2>&1
check "two tools: threadhist's counters reached its report" \
	"python3 -c 'import json,sys; d=json.load(open(\"$T/two-th.json\")); sys.exit(0 if d[\"total\"]==dict(blocks=2,warps=4,threads=128) else 1)'" two
run threadhist two-pol GPUEXT_POLICY=$B/share/gpuext/tools/kernelretsnoop.bpf.o
check "policy + tool: the policy first, then the tool" \
	"grep -q 'called in this order at shared hooks: kernelretsnoop, threadhist' $T/two-pol.err && grep -q 'rewritten (2 hooks)' $T/two-pol.err" two-pol
run threadhist,threadhist dup
check "a tool named twice is attached once" "grep -q 'policy threadhist: listed twice; attached once' $T/dup.err && grep -q 'rewritten (1 hooks)' $T/dup.err" dup
# gpuext-run --tool a --tool b: one report each
out=$(env LD_LIBRARY_PATH= GPUEXT_REAL_LIBCUDA=$FAKE FAKECUDA_DEVICES=1 GPUEXT_CACHE_DIR=$T/cache GPUEXT_SHM_DIR=$T/shm5 \
	GPUEXT_TOOLS_DIR=$B/share/gpuext/tools GPUEXT_FLUSH_MS=10 GPUEXT_JITLIB=/nonexistent timeout 60 \
	$B/bin/gpuext-run --tool threadhist --tool launchlate -- $APP $PTX $K policy 2>&1)
if [[ $out == *"threadhist: "*" 2 blocks, 4 warps, 128 threads"* && $out == *"launchlate: 1 launches"* ]]; then
	echo "ok - cache: gpuext-run --tool threadhist --tool launchlate prints both reports"
else
	echo "not ok - cache: gpuext-run --tool threadhist --tool launchlate prints both reports"; echo "$out" | tail -8 | sed 's/^/#  /'
fi
# the CLI joins repeated options into the environment the shim reads
env=$($B/bin/gpuext-run --tool threadhist --tool=launchlate --policy $B/share/gpuext/tools/memtrace.bpf.o \
	--policy $B/share/gpuext/tools/kernelretsnoop.bpf.o --print-env -- true 2>&1)
if [[ $env == *"GPUEXT_TOOL=threadhist,launchlate"* &&
	$env == *"GPUEXT_POLICY=$B/share/gpuext/tools/memtrace.bpf.o:$B/share/gpuext/tools/kernelretsnoop.bpf.o"* ]]; then
	echo "ok - cache: repeated --tool/--policy joined (GPUEXT_TOOL=a,b, GPUEXT_POLICY=p:q)"
else
	echo "not ok - cache: repeated --tool/--policy joined: $env"
fi
