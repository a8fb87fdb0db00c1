# shellcheck shell=bash
# live_lib.sh — shared by the live attach tests (test_live.sh,
# test_live_kinds.sh, test_live_sched.sh): sourced, not run. Sets up what
# they all use: B, the scratch folder T (build/tests/attach/LIVE_TMP.XXXXXX,
# removed at exit unless KEEP, with every live_app started still running
# killed), FAKE, APP, G, PTX and its first kernel K, the module cache,
# shm and control folders; the test's name in LIVE_NAME prefixes every check.
B=${BUILD:-build}
B=$(cd "$B" && pwd)
T=$(mktemp -d "$B/tests/attach/${LIVE_TMP:-live}.XXXXXX")
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	[ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
FAKE=$B/tests/attach/fakecuda/libcuda.so.1
APP=$B/tests/attach/live_app
# shellcheck disable=SC2034 # used by the tests that source this
G="$B/bin/gpuext"
PTX=tests/ptx-rewrite/golden-passes/vadd.ptx
K=$(sed -n 's/.*\.entry \([A-Za-z0-9_]*\).*/\1/p' $PTX | head -1)
mkdir -p $T/cache $T/shm $T/ctl
chmod 700 $T/shm $T/ctl
export GPUEXT_CTL_DIR=$T/ctl GPUEXT_SHM_DIR=$T/shm
check() { if eval "$2"; then echo "ok - $LIVE_NAME: $1"; else echo "not ok - $LIVE_NAME: $1"; [ -n "${3:-}" ] && tail -5 "$3" | sed 's/^/#  /'; fi; }

# start NAME MODE [env...]: live_app in the background; its pid in $pid
start() {
	local n=$1 mode=$2; shift 2
	rm -f $T/$n.stop
	env LD_LIBRARY_PATH=$B/lib GPUEXT_REAL_LIBCUDA=$FAKE GPUEXT_LOG=info GPUEXT_TOOLS_DIR=$B/share/gpuext/tools \
		GPUEXT_CACHE_DIR=$T/cache GPUEXT_FLUSH_MS=10 FAKECUDA_DEVICES=1 "$@" \
		$APP $PTX $K $T/$n.stop $mode >$T/$n.out 2>$T/$n.err &
	pid=$!
	PIDS+=($pid)
	for _ in $(seq 500); do [ -e $T/ctl/$pid.ps ] && grep -q ready $T/$n.out && break; sleep 0.02; done
	[ -e $T/ctl/$pid.ps ] && grep -q ready $T/$n.out ||
		{ echo "not ok - $LIVE_NAME: $n: live_app started under the shim"; tail -3 $T/$n.err | sed 's/^/#  /'; }
}
stop() { # NAME PID: ask it to end, wait, its exit status in $rc
	touch $T/$1.stop
	wait $2
	rc=$?
}
wait_for() { # FILE PATTERN
	for _ in $(seq 250); do grep -q "$2" "$1" && return 0; sleep 0.02; done
	return 1
}
wait_count() { # FILE PATTERN N: until PATTERN is on N lines
	for _ in $(seq 250); do [ "$(grep -c "$2" "$1")" -ge "$3" ] && return 0; sleep 0.02; done
	return 1
}
