#!/usr/bin/env bash
# The shim's policy attach path against the fake driver (with fakedev.c's
# memory semantics): JIT cache miss + JIT, cache hit, miss without the JIT
# library (one clear line, the app runs on), no policy; __gx_devrt written,
# printk drained to stderr, map shards flushed at exit and reported by
# `gpuext tools report` (text, JSON and trace validated).
set -u
# these checks look at the instrumented module itself, so every launch runs
# it (tools default to a sample of launches: test_launch_sample.sh)
export GPUEXT_LAUNCH_SAMPLE=1
B=${BUILD:-build}
B=$(cd "$B" && pwd)
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
FAKE=$B/tests/attach/fakecuda/libcuda.so.1
APP=$B/tests/attach/attach_app
PTX=tests/ptx-rewrite/golden-passes/vadd.ptx
K=$(sed -n 's/.*\.entry \([A-Za-z0-9_]*\).*/\1/p' $PTX | head -1)
run() { # name, then env assignments
	local name=$1; shift
	env -u GPUEXT_TOOL -u GPUEXT_POLICY LD_LIBRARY_PATH=$B/lib GPUEXT_REAL_LIBCUDA=$FAKE GPUEXT_LOG=info \
		GPUEXT_TOOLS_DIR=$B/share/gpuext/tools GPUEXT_FLUSH_MS=10 "$@" \
		timeout 60 $APP $PTX $K ${MODE:-policy} >$T/$name.out 2>$T/$name.err
	echo $? >$T/$name.rc
	cat $T/$name.out
}
check() { if eval "$2"; then echo "ok - attach: $1"; else echo "not ok - attach: $1"; sed 's/^/#  /' $T/$3.err | tail -8; fi; }

mkdir -p $T/cache $T/shm1 $T/shm2 $T/shm3
run miss GPUEXT_TOOL=threadhist GPUEXT_CACHE_DIR=$T/cache GPUEXT_SHM_DIR=$T/shm1
check "miss: JIT'd through libgxjit.so" "grep -q \"policy threadhist: verified and JIT'd\" $T/miss.err" miss
check "miss: module rewritten with hooks" "grep -q 'rewritten ([1-9][0-9]* hooks)' $T/miss.err" miss
check "miss: cache entry written" "ls $T/cache/*.gxpol >/dev/null 2>&1" miss
check "miss: printk drained to stderr" "grep -q '^gpuext: hello from block 7' $T/miss.err" miss
check "miss: app exit 0" "[ \$(cat $T/miss.rc) = 0 ]" miss
$B/bin/gpuext tools report threadhist --dir $T/shm1 >$T/th.txt 2>&1
check "report: SM 0 row (the fake has one SM) has 2 blocks, 4 warps, 128 threads" "grep -Eq '^ +0 +2 +4 +128 ' $T/th.txt" miss
$B/bin/gpuext --json tools report threadhist --dir $T/shm1 --trace $T/th.trace.json >$T/th.json 2>&1
check "report: JSON is valid" "python3 -m json.tool $T/th.json >/dev/null" miss
check "report: JSON totals" "python3 -c 'import json,sys; d=json.load(open(\"$T/th.json\")); sys.exit(0 if d[\"total\"]==dict(blocks=2,warps=4,threads=128) else 1)'" miss
check "report: trace is valid JSON" "python3 -m json.tool $T/th.trace.json >/dev/null" miss
check "tool log and map files in the run folder" "ls $T/shm1/*-threadhist.events $T/shm1/*-threadhist?th_counts >/dev/null" miss

run hit GPUEXT_TOOL=threadhist GPUEXT_CACHE_DIR=$T/cache GPUEXT_SHM_DIR=$T/shm2 GPUEXT_JITLIB=/nonexistent/libgxjit.so
check "hit: from the JIT cache, no JIT library needed" "grep -q 'policy threadhist: from the JIT cache' $T/hit.err" hit
check "hit: app exit 0" "[ \$(cat $T/hit.rc) = 0 ]" hit

MODE=none run nojit GPUEXT_TOOL=launchlate GPUEXT_CACHE_DIR=$T/empty GPUEXT_SHM_DIR=$T/shm3 GPUEXT_JITLIB=/nonexistent/libgxjit.so
check "miss without JIT library: one clear line" "[ \$(grep -c 'policy launchlate: not in the JIT cache and the JIT library cannot be loaded' $T/nojit.err) = 1 ]" nojit
check "miss without JIT library: runs without the policy" "grep -q 'running without it' $T/nojit.err && [ \$(cat $T/nojit.rc) = 0 ]" nojit

MODE=none run nopol GPUEXT_SHM_DIR=$T/shm3
check "no policy: nothing attached" "! grep -q 'policy' $T/nopol.err && [ \$(cat $T/nopol.rc) = 0 ]" nopol

# A device policy's knob in .rodata.cfg (issue 20): the verifier folded it,
# so the shim seals its map (0400, constant) instead of filling it from
# GPUEXT_CFG like other "cfg" maps, and `gpuext map update` refuses it.
mkdir -p $T/shm5
run knob GPUEXT_POLICY=$B/tests/devbpf/progs/cfg_knob.bpf.o GPUEXT_CFG=999 GPUEXT_CACHE_DIR=$T/cache GPUEXT_SHM_DIR=$T/shm5
kf=$(ls $T/shm5/*-cfg_knob..rodata.cfg 2>/dev/null | head -1)
check "device policy's .rodata.cfg knob: sealed (0400, const), not filled from GPUEXT_CFG" \
	"[ -n '$kf' ] && [ \$(stat -c %a '$kf') = 400 ] && GPUEXT_SHM_DIR=$T/shm5 $B/bin/gpuext map list | grep -q 'cfg_knob..rodata.cfg .* const\$' && GPUEXT_SHM_DIR=$T/shm5 $B/bin/gpuext map dump cfg_knob..rodata.cfg | grep -qx '  \[0\] 2'" knob
check "device policy's .rodata.cfg knob: map update refused" \
	"! GPUEXT_SHM_DIR=$T/shm5 $B/bin/gpuext map update cfg_knob..rodata.cfg 0 7 2>$T/knob.upd && grep -q 'read-only: its bytes are constants' $T/knob.upd" knob

MODE=none run badtool GPUEXT_TOOL=nosuchtool GPUEXT_SHM_DIR=$T/shm3
check "unknown tool: one line, app runs" "grep -q 'policy nosuchtool: cannot read' $T/badtool.err && [ \$(cat $T/badtool.rc) = 0 ]" badtool

# gpuext-run --tool: fork, wait, report; exit status of the command.
out=$(env LD_LIBRARY_PATH= GPUEXT_REAL_LIBCUDA=$FAKE GPUEXT_CACHE_DIR=$T/cache GPUEXT_SHM_DIR=$T/shm4 \
	GPUEXT_TOOLS_DIR=$B/share/gpuext/tools GPUEXT_FLUSH_MS=10 timeout 60 \
	$B/bin/gpuext-run --tool threadhist -- $APP $PTX $K policy 2>&1)
rc=$?
if [[ $rc == 0 && $out == *"threadhist: "*" 2 blocks, 4 warps, 128 threads"* ]]; then
	echo "ok - attach: gpuext-run --tool threadhist prints the report"
else
	echo "not ok - attach: gpuext-run --tool threadhist prints the report (rc $rc)"; echo "$out" | tail -5 | sed 's/^/#  /'
fi
[ -z "$(ls $T/shm4 2>/dev/null)" ] && echo "ok - attach: gpuext-run removes its run folder" \
	|| echo "not ok - attach: gpuext-run removes its run folder"
out=$(env GPUEXT_REAL_LIBCUDA=$FAKE GPUEXT_SHM_DIR=$T/shm4 timeout 30 $B/bin/gpuext-run --tool threadhist -- sh -c 'exit 3' 2>&1)
[ $? = 3 ] && echo "ok - attach: gpuext-run --tool keeps the command's exit status" \
	|| echo "not ok - attach: gpuext-run --tool keeps the command's exit status"
# A full /dev/shm (a 4 KiB tmpfs, filled; mounted when we may): the map files
# and the tool log cannot be written. Each says so in one line and the app
# runs on (a sparse map file used to raise SIGBUS on its first store).
mkdir -p $T/full
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=4k tmpfs $T/full 2>/dev/null; then
	head -c 4096 /dev/zero >$T/full/filler 2>/dev/null
	run full GPUEXT_TOOL=threadhist GPUEXT_CACHE_DIR=$T/cache GPUEXT_SHM_DIR=$T/full
	check "full shm folder: the app exits 0 (no SIGBUS)" "[ \$(cat $T/full.rc) = 0 ]" full
	check "full shm folder: the map stays private, one line with the reason" \
		"grep -q 'map threadhist.th_counts: no shared-memory copy (No space left on device)' $T/full.err" full
	check "full shm folder: one line says tool-log records are lost and why" \
		"[ \$(grep -c 'writing its tool log failed (No space left on device)' $T/full.err) = 1 ]" full
	umount $T/full
else
	echo "ok - attach: full tool-log folder # SKIP needs root to mount a tmpfs"
fi
# A cubin that carries its PTX (ptxas -lineinfo, as Triton and Inductor build
# them): under a tool the shim loads that PTX, hooks in; without one, or for
# a cubin without it, the cubin passes through untouched.
PTXAS=${PTXAS:-/usr/local/cuda/bin/ptxas}
if "$PTXAS" -arch=sm_90 -lineinfo "$PTX" -o $T/li.cubin && "$PTXAS" -arch=sm_90 "$PTX" -o $T/noli.cubin; then
	mkdir -p $T/shm5 $T/shm6
	PTX=$T/li.cubin run cubin GPUEXT_TOOL=threadhist GPUEXT_CACHE_DIR=$T/cache GPUEXT_SHM_DIR=$T/shm5 >/dev/null
	check "lineinfo cubin under a tool: reloaded from the PTX it carries, hooks in" \
		"grep -q 'rewritten ([1-9][0-9]* hooks), reloaded from sm_90 PTX carried by its cubin' $T/cubin.err" cubin
	check "lineinfo cubin under a tool: __gx_devrt written, app exit 0" \
		"grep -q '^ok - attach_app: __gx_devrt written' $T/cubin.out && [ \$(cat $T/cubin.rc) = 0 ]" cubin
	# its kernel capped at the registers the cubin states (.nv.info), no
	# JIT of the original to learn them (a PTX-only module needs one)
	mkdir -p $T/shm5b $T/cache5b
	PTX=$T/li.cubin run cubinregs GPUEXT_TOOL=threadhist GPUEXT_CACHE_DIR=$T/cache5b GPUEXT_SHM_DIR=$T/shm5b \
		GPUEXT_LOG=debug >/dev/null
	check "lineinfo cubin under a tool: the originals' registers from the cubin, no JIT for them, kernel capped" \
		"grep -q 'the originals. registers as its cubin states them (1 kernels)' $T/cubinregs.err &&
		 ! grep -q 'registers measured by a JIT' $T/cubinregs.err && grep -lq '^.maxnreg 32' $T/cache5b/modules/*.gxmod" cubinregs
	mkdir -p $T/shm5c $T/cache5c
	run ptxregs GPUEXT_TOOL=threadhist GPUEXT_CACHE_DIR=$T/cache5c GPUEXT_SHM_DIR=$T/shm5c GPUEXT_LOG=debug >/dev/null
	check "PTX module under a tool: the originals' registers measured by a JIT, kernel capped" \
		"grep -q 'registers measured by a JIT (1 kernels)' $T/ptxregs.err && grep -lq '^.maxnreg 32' $T/cache5c/modules/*.gxmod" ptxregs
	PTX=$T/noli.cubin run cubin2 GPUEXT_TOOL=threadhist GPUEXT_CACHE_DIR=$T/cache GPUEXT_SHM_DIR=$T/shm6 >/dev/null
	check "plain cubin under a tool: passed through as SASS only" \
		"grep -q 'passed through: SASS only, no PTX for sm_90' $T/cubin2.err" cubin2
	PTX=$T/li.cubin MODE=none run cubin3 >/dev/null
	check "lineinfo cubin without a tool: passed through (no JIT for nothing)" \
		"grep -q 'passed through: SASS only' $T/cubin3.err && ! grep -q 'carried by its cubin' $T/cubin3.err" cubin3
else
	echo "not ok - attach: ptxas could not build the test cubins"
fi
# Launch records (tool log revision 2): the module's hooks and the timing
# sample (a kernel's first launches are timed; GPUEXT_LAUNCH_TIMES=0: none).
flags() { python3 - "$1" <<'P'
import struct, sys, glob
for f in glob.glob(sys.argv[1] + '/*-threadhist.events'):
    d = open(f, 'rb').read(); o = 0
    while o + 8 <= len(d):
        t, n = struct.unpack_from('<II', d, o)
        if n < 8: break
        if t == 4 and n >= 72: print(struct.unpack_from('<I', d, o + 56)[0])
        o += n
P
}
mkdir -p $T/shm7 $T/shm8
run lt GPUEXT_TOOL=threadhist GPUEXT_CACHE_DIR=$T/cache GPUEXT_SHM_DIR=$T/shm7 >/dev/null
check "launch record: hooked and timed (flags 3)" "[ \"\$(flags $T/shm7 | head -1)\" = 3 ]" lt
check "the summary line at exit: 1 launch, 1 instrumented" "grep -q 'gpuext: launches: 1, 1 instrumented (100.0 %)' $T/lt.err" lt
# The timed launch asked for its LAUNCH_DONE (GX_EV_F_DONE_ASKED), which
# ends its timing pair: one GX_TEV_LTIME record; the same with LAUNCH_DONE
# after every launch (GX_LT_DONE_ALL=1, the A/B switch).
ltimes() { python3 - "$1" <<'P'
import struct, sys, glob
n = 0
for f in glob.glob(sys.argv[1] + '/*-threadhist.events'):
    d = open(f, 'rb').read(); o = 0
    while o + 8 <= len(d):
        t, l = struct.unpack_from('<II', d, o)
        if l < 8: break
        n += t == 7
        o += l
print(n)
P
}
check "timed launch: its LAUNCH_DONE came, its GPU time recorded (1 LTIME record)" "[ \"\$(ltimes $T/shm7)\" = 1 ]" lt
mkdir -p $T/shm7a
run ltall GPUEXT_TOOL=threadhist GPUEXT_CACHE_DIR=$T/cache GPUEXT_SHM_DIR=$T/shm7a GX_LT_DONE_ALL=1 >/dev/null
check "GX_LT_DONE_ALL=1: the same GPU time record (1 LTIME record)" "[ \"\$(ltimes $T/shm7a)\" = 1 ]" ltall
# Issue 40's load-time tool variants: the tool keeps its name and report,
# another build of its source runs, under its own JIT-cache key.
mkdir -p $T/shm7b $T/shm7c
run thlw GPUEXT_TOOL=threadhist GX_TH_WARP=last GPUEXT_CACHE_DIR=$T/cache GPUEXT_SHM_DIR=$T/shm7b >/dev/null
check "GX_TH_WARP=last: threadhist runs the object threadhist_lw" "grep -q 'policy threadhist: GX_TH_WARP=last: object threadhist_lw' $T/thlw.err && grep -q 'policy threadhist: verified and JIT.d' $T/thlw.err" thlw
$B/bin/gpuext tools report threadhist --dir $T/shm7b >$T/thlw.txt 2>&1
check "GX_TH_WARP=last: the same counts (SM 0: 2 blocks, 4 warps, 128 threads)" "grep -Eq '^ +0 +2 +4 +128 ' $T/thlw.txt" thlw
run krscap GPUEXT_TOOL=kernelretsnoop GX_KRS_CAP=256 GPUEXT_CACHE_DIR=$T/cache GPUEXT_SHM_DIR=$T/shm7c >/dev/null
check "GX_KRS_CAP=256: kernelretsnoop runs the object kernelretsnoop_c256" "grep -q 'policy kernelretsnoop: GX_KRS_CAP=256: object kernelretsnoop_c256' $T/krscap.err" krscap
run krsbad GPUEXT_TOOL=kernelretsnoop GX_KRS_CAP=300 GPUEXT_CACHE_DIR=$T/cache GPUEXT_SHM_DIR=$T/shm7c >/dev/null
check "GX_KRS_CAP=300: refused in one line, the default object runs" "grep -q 'GX_KRS_CAP=300: not a value this tool knows' $T/krsbad.err && ! grep -q 'object kernelretsnoop_c' $T/krsbad.err && [ \$(cat $T/krsbad.rc) = 0 ]" krsbad
# launchlate's record table (GDEV_F_RECORDS): the app writes one record
# into slot 77 as the device would; the drainer takes it on its second look
# and the report pairs it with the launch (uncalibrated: the fake driver has
# no %globaltimer). Without the record nothing is paired; GX_LL_RING=1 runs
# the ring build, whose record the app writes into the ring.
llrec() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["uncalibrated"]==int(sys.argv[2]) and d["launches"]==1 else 1)' "$T/$1.json" "$2"; }
ATTACH_APP_RECORDS=1 run llrec GPUEXT_TOOL=launchlate GPUEXT_CACHE_DIR=$T/cache GPUEXT_SHM_DIR=$T/shm7d >/dev/null
$B/bin/gpuext --json tools report launchlate --dir $T/shm7d >$T/llrec.json 2>/dev/null
check "launchlate: a record table slot reaches the report" "llrec llrec 1 && grep -q 'one record written into slot 77' $T/llrec.out" llrec
run llnone GPUEXT_TOOL=launchlate GPUEXT_CACHE_DIR=$T/cache GPUEXT_SHM_DIR=$T/shm7e >/dev/null
$B/bin/gpuext --json tools report launchlate --dir $T/shm7e >$T/llnone.json 2>/dev/null
check "launchlate: an empty record table gives no record" "llrec llnone 0" llnone
run llring GPUEXT_TOOL=launchlate GX_LL_RING=1 GPUEXT_CACHE_DIR=$T/cache GPUEXT_SHM_DIR=$T/shm7f >/dev/null
$B/bin/gpuext --json tools report launchlate --dir $T/shm7f >$T/llring.json 2>/dev/null
check "GX_LL_RING=1: launchlate_ring's ring record reaches the report" "grep -q 'object launchlate_ring' $T/llring.err && llrec llring 1" llring
# kernelretsnoop's record table: the app writes block 1 of its 4-block
# launch into the slot of launch id 77's region; the report gets the record
# once, and attributes it to the launch (4 blocks). GX_KRS_RING=1 runs the
# ring build.
krsrec() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); L=d["launches"]; sys.exit(0 if d["records"]==1 and d["unattributed"]==0 and len(L)==1 and L[0]["blocks"]==1 and L[0]["grid_blocks"]==4 else 1)' "$T/$1.json"; }
mkdir -p $T/shm7g $T/shm7h
ATTACH_APP_RECORDS=1 run krsrec GPUEXT_TOOL=kernelretsnoop GPUEXT_CACHE_DIR=$T/cache GPUEXT_SHM_DIR=$T/shm7g >/dev/null
$B/bin/gpuext --json tools report kernelretsnoop --dir $T/shm7g >$T/krsrec.json 2>/dev/null
check "kernelretsnoop: a record table slot reaches the report, attributed to its launch" "krsrec krsrec && grep -q 'one record written into slot 19713 ' $T/krsrec.out" krsrec
run krsring GPUEXT_TOOL=kernelretsnoop GX_KRS_RING=1 GPUEXT_CACHE_DIR=$T/cache GPUEXT_SHM_DIR=$T/shm7h >/dev/null
$B/bin/gpuext --json tools report kernelretsnoop --dir $T/shm7h >$T/krsring.json 2>/dev/null
check "GX_KRS_RING=1: kernelretsnoop_ring's ring record reaches the report" "grep -q 'object kernelretsnoop_ring' $T/krsring.err && python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))[\"records\"]==1 else 1)' $T/krsring.json" krsring
run lt0 GPUEXT_TOOL=threadhist GPUEXT_CACHE_DIR=$T/cache GPUEXT_SHM_DIR=$T/shm8 GPUEXT_LAUNCH_TIMES=0 >/dev/null
check "GPUEXT_LAUNCH_TIMES=0: hooked, not timed (flags 1)" "[ \"\$(flags $T/shm8 | head -1)\" = 1 ]" lt0
# A cubin gpuext-ptxas compiled (the hooks in already): loaded as it is,
# and the device runtime writes its __gx_devrt at the first launch.
if GPUEXT_TOOL=threadhist GPUEXT_CACHE_DIR=$T/cache GPUEXT_REAL_PTXAS=$PTXAS $B/bin/gpuext-ptxas -arch=sm_90 -lineinfo \
	tests/ptx-rewrite/golden-passes/vadd.ptx -o $T/wrapped.cubin 2>$T/wrap.err; then
	mkdir -p $T/shm9
	PTX=$T/wrapped.cubin run wrapped GPUEXT_TOOL=threadhist GPUEXT_CACHE_DIR=$T/cache GPUEXT_SHM_DIR=$T/shm9 >/dev/null
	check "gpuext-ptxas cubin: passed through, its hooks compiled in" \
		"grep -q 'passed through: its cubin was compiled with the hooks in (gpuext-ptxas)' $T/wrapped.err" wrapped
	check "gpuext-ptxas cubin: __gx_devrt written at its launch, the launch counted as instrumented" \
		"grep -q '^ok - attach_app: __gx_devrt written' $T/wrapped.out && grep -q 'launches: 1, 1 instrumented' $T/wrapped.err" wrapped
else
	echo "not ok - attach: gpuext-ptxas could not compile the test cubin: $(tail -2 $T/wrap.err)"
fi
