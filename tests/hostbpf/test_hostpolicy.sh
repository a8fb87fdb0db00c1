#!/usr/bin/env bash
# Host policies in the shim against the fake driver: gx_seq prefetches
# before a launch; a malformed struct_ops object is refused with one line
# and the application runs on without a policy.
set -u
B=${BUILD:-build}
FAKE=$PWD/$B/tests/fakecuda/libcuda.so.1
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
