#!/usr/bin/env bash
# Host policies in the shim against the fake driver: gx_seq prefetches
# before a launch; a malformed struct_ops object is refused with one line
# and the application runs on without a policy.
set -u
B=${BUILD:-build}
FAKE=$PWD/$B/tests/shim/fakecuda/libcuda.so.1
T=$B/tests/hostbpf/test_hostpolicy_shim
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/shm"
run() { env LD_LIBRARY_PATH="$PWD/$B/lib" GPUEXT_REAL_LIBCUDA="$FAKE" GPUEXT_LOG=info GPUEXT_SHM_DIR="$tmp/shm" "$@"; }

run GPUEXT_POLICY="$PWD/$B/hostbpf/gx_seq.bpf.o" "$T" expect-prefetch 2>"$tmp/seq.err" | sed 's/^\(not \)\?ok - /&seq: /'
grep -q "attached memory policy 'seq'" "$tmp/seq.err" && echo "ok - seq: attach line logged" ||
	{ echo "not ok - seq: no attach line"; cat "$tmp/seq.err"; }
grep -q "hostpolicy: [1-9][0-9]* prefetch calls issued, .*(policy 'seq')" "$tmp/seq.err" &&
	echo "ok - seq: exit summary counts the prefetch calls" || echo "not ok - seq: no exit summary"
[ -z "$(ls -A "$tmp/shm")" ] && echo "ok - seq: policy map files removed at exit" ||
	echo "not ok - seq: map files left in the shm folder: $(ls "$tmp/shm")"

grep -q "attached memory policy 'seq' (native)" "$tmp/seq.err" && echo "ok - seq: native code by default" ||
	{ echo "not ok - seq: expected '(native)' in the attach line"; grep attached "$tmp/seq.err"; }

# no JIT library (the GPU machine has no libLLVM-19): one line, both
# policies interpreted, same behaviour
run GPUEXT_JITLIB=/nonexistent/libgxjit.so GPUEXT_POLICY="$PWD/$B/hostbpf/gx_seq.bpf.o:$PWD/$B/hostbpf/gx_prio.bpf.o" \
	"$T" expect-prefetch 2>"$tmp/nojit.err" | sed 's/^\(not \)\?ok - /&no JIT library: /'
[ "$(grep -c 'native code unavailable' "$tmp/nojit.err")" = 1 ] &&
	grep -q "hostpolicy: native code unavailable (.*); policies interpreted" "$tmp/nojit.err" &&
	[ "$(grep -c "attached .* policy '.*' (interpreted)" "$tmp/nojit.err")" = 2 ] &&
	echo "ok - no JIT library: one fallback line, both policies interpreted" ||
	{ echo "not ok - no JIT library: expected one fallback line and two interpreted policies"; cat "$tmp/nojit.err"; }
run GPUEXT_HOSTPOLICY_JIT=interp GPUEXT_POLICY="$PWD/$B/hostbpf/gx_seq.bpf.o" "$T" expect-prefetch 2>"$tmp/interp.err" |
	sed 's/^\(not \)\?ok - /&GPUEXT_HOSTPOLICY_JIT=interp: /'
grep -q "attached memory policy 'seq' (interpreted)" "$tmp/interp.err" && ! grep -q "native code" "$tmp/interp.err" &&
	echo "ok - GPUEXT_HOSTPOLICY_JIT=interp: interpreted, no fallback line" ||
	{ echo "not ok - GPUEXT_HOSTPOLICY_JIT=interp: expected '(interpreted)'"; cat "$tmp/interp.err"; }

# an unsafe policy (missing null check): refused by the verifier, one line,
# the program runs on without it
run GPUEXT_POLICY="$PWD/$B/hostbpf/unsafe/null_check.bpf.o" "$T" expect-none 2>"$tmp/unsafe.err" |
	sed 's/^\(not \)\?ok - /&unsafe: /'
[ "$(grep -c 'refused' "$tmp/unsafe.err")" = 1 ] &&
	grep -q "refused: program null_check insn [0-9]*: map value pointer may be null (missing null check)" "$tmp/unsafe.err" &&
	echo "ok - unsafe: refused by the verifier with one line" ||
	{ echo "not ok - unsafe: expected one refusal line"; cat "$tmp/unsafe.err"; }

# the same with chunked issue (copies start during the walk) and on the launch stream
run GPUEXT_HOSTPOLICY_CHUNK=4096 GPUEXT_POLICY="$PWD/$B/hostbpf/gx_seq.bpf.o" "$T" expect-prefetch 2>"$tmp/chunk.err" |
	sed 's/^\(not \)\?ok - /&seq chunked: /'
run GPUEXT_HOSTPOLICY_STREAM=own GPUEXT_POLICY="$PWD/$B/hostbpf/gx_seq.bpf.o" "$T" expect-prefetch 2>"$tmp/ls.err" |
	sed 's/^\(not \)\?ok - /&seq on its own prefetch stream: /'

printf '\177ELF garbage struct_ops/x' >"$tmp/bad.bpf.o"
run GPUEXT_POLICY="$tmp/bad.bpf.o" "$T" expect-none 2>"$tmp/bad.err" | sed 's/^\(not \)\?ok - /&bad: /'
[ "$(grep -c 'refused' "$tmp/bad.err")" = 1 ] && echo "ok - bad: one refusal line" ||
	{ echo "not ok - bad: expected one refusal line"; cat "$tmp/bad.err"; }

run GPUEXT_POLICY="$PWD/$B/hostbpf/gx_seq.bpf.o,no_such_knob=3" "$T" expect-none 2>"$tmp/knob.err" |
	sed 's/^\(not \)\?ok - /&bad knob: /'
grep -q "refused: knob 'no_such_knob'" "$tmp/knob.err" && echo "ok - bad knob: refused with the knob named" ||
	{ echo "not ok - bad knob: no refusal"; cat "$tmp/knob.err"; }

run GPUEXT_POLICY="$PWD/$B/hostbpf/gx_seq.bpf.o:$PWD/$B/hostbpf/gx_prio.bpf.o,max_queues=1" "$T" expect-reject \
	2>"$tmp/prio.err" | sed 's/^\(not \)\?ok - /&prio: /'
grep -q "attached scheduling policy 'prio'" "$tmp/prio.err" && grep -q "attached memory policy 'seq'" "$tmp/prio.err" &&
	echo "ok - prio: memory and scheduling policies attached together" ||
	{ echo "not ok - prio: both policies should attach"; cat "$tmp/prio.err"; }
grep -q "rejected by 'prio'" "$tmp/prio.err" && echo "ok - prio: rejection logged" ||
	echo "not ok - prio: no rejection line"
! grep -q "gpuext: policy" "$tmp/prio.err" && echo "ok - prio: struct_ops entries not taken for device policies" ||
	echo "not ok - prio: device-policy code tried a struct_ops object: $(grep 'gpuext: policy' "$tmp/prio.err" | head -1)"

# stream priorities: hx_prioset gives every stream the queue priority of
# its knob; the fake driver's range is [-5, 0] (lower is higher)
for qp in 7:-5 3:-2 0:0; do
	run GPUEXT_POLICY="$PWD/$B/hostbpf/hx_prioset.bpf.o,prio=${qp%:*}" "$T" expect-priority "${qp#*:}" \
		2>"$tmp/prioset.err" | sed "s/^\(not \)\?ok - /&priority ${qp%:*}: /"
	grep -q "hostpolicy: 3 streams created under 'prioset', 3 with the policy's priority, 0 refused" "$tmp/prioset.err" &&
		echo "ok - priority ${qp%:*}: exit line counts 3 streams with the policy's priority" ||
		{ echo "not ok - priority ${qp%:*}: no exit line for the streams"; cat "$tmp/prioset.err"; }
done
# gx_prio keeps the application's priority (identity through the mapping)
run GPUEXT_POLICY="$PWD/$B/hostbpf/gx_prio.bpf.o" "$T" expect-priority -4 keep 2>"$tmp/prioid.err" |
	sed 's/^\(not \)\?ok - /&gx_prio keeps priorities: /'
# /dev/gpuext present (a stand-in ioctl channel): launches become hints to the
# module, once per allocation between syncs; no cuMemPrefetchAsync.
FK=$PWD/$B/tests/hostbpf/fake_gpuext.so
: >"$tmp/gpuext"
run GPUEXT_DEV="$tmp/gpuext" LD_PRELOAD="$FK" GPUEXT_POLICY="$PWD/$B/hostbpf/gx_seq.bpf.o" "$T" expect-kmod \
	2>"$tmp/kmod.err" | sed 's/^\(not \)\?ok - /&kmod: /'
grep -q "/dev/gpuext present (backend 'fake')" "$tmp/kmod.err" && echo "ok - kmod: channel opened, executor off" ||
	{ echo "not ok - kmod: no /dev/gpuext line"; cat "$tmp/kmod.err"; }
n=$(grep -c "^fake-gpuext: PREFETCH space=7 prio=0 n=1 va=0x[0-9a-f]* len=32768$" "$tmp/kmod.err")
[ "$n" = 3 ] && echo "ok - kmod: one 32 KiB hint per launch after each sync (3 for 5 launches)" ||
	{ echo "not ok - kmod: expected 3 hints of 32768 bytes, got $n"; cat "$tmp/kmod.err"; }
grep -q "hostpolicy: 3 prefetch hints (3 ranges, 24 pages queued) sent to /dev/gpuext (backend 'fake'), 0 failed" \
	"$tmp/kmod.err" && echo "ok - kmod: exit summary counts hints and pages" ||
	{ echo "not ok - kmod: no exit summary"; grep hints "$tmp/kmod.err"; }
! grep -q "attached memory policy" "$tmp/kmod.err" && echo "ok - kmod: the shim does not run the policy itself" ||
	echo "not ok - kmod: executor attached a policy although the module is there"
run GPUEXT_DEV="$tmp/gpuext" LD_PRELOAD="$FK" FAKE_GPUEXT_ABI=9 GPUEXT_POLICY="$PWD/$B/hostbpf/gx_seq.bpf.o" "$T" \
	expect-prefetch 2>"$tmp/kmod9.err" | sed 's/^\(not \)\?ok - /&kmod ABI 9: /'
grep -q "/dev/gpuext unusable (Protocol error); running the policies in the shim" "$tmp/kmod9.err" &&
	grep -q "attached memory policy 'seq'" "$tmp/kmod9.err" &&
	echo "ok - kmod ABI 9: other ABI refused with one line, executor runs the policy" ||
	{ echo "not ok - kmod ABI 9: expected a fallback to the executor"; cat "$tmp/kmod9.err"; }

# Device-side gdev_mem_prefetch requests (runtime ring, drained by the shim's
# thread) go to the host policy: a device policy (devprefetch) gives the
# ring, gx_seq the decision; launch arguments are switched off so only the
# request counts. The app writes the record itself (the fake has no GPU).
TF=$PWD/$B/tests/attach/fakecuda/libcuda.so.1
PTXF=tests/ptx-rewrite/golden-passes/vadd.ptx
K=$(sed -n 's/.*\.entry \([A-Za-z0-9_]*\).*/\1/p' $PTXF | head -1)
mkdir -p "$tmp/cache"
env LD_LIBRARY_PATH="$PWD/$B/lib" GPUEXT_REAL_LIBCUDA="$TF" GPUEXT_LOG=info GPUEXT_SHM_DIR="$tmp/shm" \
	GPUEXT_CACHE_DIR="$tmp/cache" GPUEXT_FLUSH_MS=10 GPUEXT_HOSTPOLICY_LAUNCH_ARGS=0 \
	GPUEXT_POLICY="$PWD/$B/hostbpf/gx_seq.bpf.o:$PWD/$B/hostbpf/devprefetch.bpf.o" \
	timeout 60 "$B/tests/hostbpf/devreq_app" "$PTXF" "$K" 2>"$tmp/devreq.err"
grep -q "; 1 device requests (0 outside managed memory) (policy 'seq')" "$tmp/devreq.err" && echo "ok - devreq: exit line counts the device request" ||
	{ echo "not ok - devreq: no device request counted"; tail -5 "$tmp/devreq.err"; }
