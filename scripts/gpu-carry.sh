#!/usr/bin/env bash
# gpu-carry.sh — what a GPU run (tests/gpu/run.sh on the device machine)
# needs from this machine's build, in .carry/build (ignored by git) and
# under the device tool's 64 MiB: `make gpu-prep` first (the JIT cache and
# the native back end's libraries, for a machine without LLVM), then build/
# without what only the CPU tests use (objects, fuzzers, corpora, the VM).
# On the device machine: `rm -rf build && mv .carry/build build`, then run.
set -euo pipefail
cd "$(dirname "$0")/.."
make -s gpu-prep
rm -rf .carry/build && mkdir -p .carry
tar -C build --exclude=./dist --exclude=./gpu-out --exclude=./obj --exclude=./fuzz --exclude=./kmod-vm --exclude=./ptx-passes --exclude=./image-nvcc \
	--exclude=./ptx-corpus --exclude=./ptx-roundtrip --exclude=./ptx-sites --exclude=./kmod --exclude='*.d' \
	--exclude=./tests/kmod --exclude=./tests/ptx-rewrite --exclude=./tests/hostexec --exclude=./tests/tools \
	--exclude=./tests/attach --exclude=./tests/devbpf/verifier --exclude=./tests/devbpf/verifier-v4 \
	--exclude=./tests/devbpf/loader --exclude='./tests/devbpf/test_*' --exclude=./tests/image/test_image_asan \
	--exclude='./tests/shim/test_[^a]*' --exclude=./tests/shim/fakecuda \
	--exclude='./lib/libgx[!bc]*.a' --exclude=./lib/libgxblocksched.a --exclude=./tests/blocksched --exclude=./tests/tenant --exclude=./tests/common --exclude=./tests/image \
	-cf - . | { mkdir -p .carry/build && tar -C .carry/build -xf -; }
# tests/gpu/limits.sh's holder (the exclusions above drop the shim's tests)
cp build/tests/shim/test_memlimit .carry/build/tests/shim/ 2>/dev/null || true
# the build's commit, for the GPU run's env.txt (tests/gpu/run.sh): the
# device copy's own HEAD need not be the commit the carried build came from
echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' (+ uncommitted changes)')" >.carry/build/.gx-commit
echo "gpu-carry: .carry/build is $(du -sh .carry/build | cut -f1) at $(cat .carry/build/.gx-commit)"
