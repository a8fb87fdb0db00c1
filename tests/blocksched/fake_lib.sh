# fake_lib.sh — the common set-up of the blocksched tests that run through
# the shim against the fake driver (test_bs_launch.sh, test_bs_side.sh):
# paths, ok/nok, a scratch folder removed at exit, and run CMD..., which
# runs CMD with the shim in front of the fake driver and its caches there.
# shellcheck shell=bash
B=${BUILD:-build}
FAKE=$PWD/$B/tests/shim/fakecuda/libcuda.so.1
P=$PWD/$B/share/gpuext/sched
G=$B/bin/gpuext
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() { env LD_LIBRARY_PATH="$PWD/$B/lib" GPUEXT_REAL_LIBCUDA="$FAKE" GPUEXT_LOG=info GPUEXT_CACHE_DIR="$tmp/cache" \
	GPUEXT_SHM_DIR="$tmp/shm" GPUEXT_JITLIB="$PWD/$B/lib/libgxjit.so" "$@"; }
