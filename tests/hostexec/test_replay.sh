#!/usr/bin/env bash
# Differential test on recorded event streams: record_app runs under the
# shim and the fake driver with GPUEXT_HOSTPOLICY_RECORD (gx_seq and gx_prio
# attached), then test_hostexec replays the recording — and the streams kept
# in tests/hostbpf/streams/ — under every policy, native and interpreted,
# and requires identical decisions.
set -u
B=${BUILD:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/shm"
env LD_LIBRARY_PATH="$PWD/$B/lib" GPUEXT_REAL_LIBCUDA="$PWD/$B/tests/shim/fakecuda/libcuda.so.1" GPUEXT_LOG=info \
	GPUEXT_SHM_DIR="$tmp/shm" GPUEXT_HOSTPOLICY_RECORD="$tmp/rec-%p.ev" \
	GPUEXT_POLICY="$PWD/$B/hostbpf/gx_seq.bpf.o:$PWD/$B/hostbpf/gx_prio.bpf.o" \
	timeout 120 "$B/tests/hostexec/record_app" 2>"$tmp/rec.err"
f=$(ls "$tmp"/rec-*.ev 2>/dev/null | head -1)
if [ -z "$f" ]; then
	echo "not ok - record: no stream written ($(head -3 "$tmp/rec.err" | tr '\n' ' '))"
	exit 0
fi
cnt() { grep -c "^$1 " "$f"; }
[ "$(cnt alloc)" -ge 6 ] && [ "$(cnt touch)" -ge 50 ] && [ "$(grep -c '^sync$' "$f")" -ge 8 ] && [ "$(cnt free)" -ge 4 ] &&
	[ "$(cnt qcreate)" -ge 4 ] && [ "$(cnt qrekey)" -ge 3 ] && [ "$(cnt qdestroy)" -ge 3 ] &&
	echo "ok - record: the shim recorded $(grep -vc '^#' "$f") events ($(cnt alloc) alloc, $(cnt touch) touch, $(grep -c '^sync$' "$f") sync, $(cnt free) free, $(cnt qcreate) queues)" ||
	{ echo "not ok - record: unexpected stream"; head -20 "$f"; }
shopt -s nullglob
"$B/tests/hostexec/test_hostexec" "$B/hostbpf" --replay "$f" tests/hostbpf/streams/*.ev
