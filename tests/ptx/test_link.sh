#!/usr/bin/env bash
# Link test: compile tests/ptx/link/policy.c to PTX with clang-19 (LLVM's
# NVPTX back end, as the devbpf JIT does), link it into golden-passes/edge.ptx
# with bindings (test_link checks the text), then ptxas every linked module.
set -u
BUILD=${BUILD:-build}
CLANG=${CLANG:-clang-19}
PTXAS=${PTXAS:-/usr/local/cuda/bin/ptxas}
W=$BUILD/ptx-passes/link
mkdir -p "$W"
if ! "$CLANG" --target=nvptx64-nvidia-cuda -march=sm_90 -S -O2 -I. -x c \
	tests/ptx/link/policy.c -o "$W/policy.ptx" 2>"$W/clang.log"; then
	echo "not ok - link: clang NVPTX build of the policy failed: $(head -1 "$W/clang.log")"
	exit 1
fi
echo "ok - link: policy compiled by $CLANG to PTX"
"$BUILD/tests/ptx/test_link" tests/ptx/golden-passes/edge.ptx "$W/policy.ptx" "$W"
rc=$?
for f in linked capped devrt; do
	[ -f "$W/$f.ptx" ] || continue
	if "$PTXAS" -arch=sm_90 "$W/$f.ptx" -o /dev/null 2>"$W/$f.ptxas"; then
		echo "ok - link: ptxas accepts $f.ptx"
	else
		echo "not ok - link: ptxas $f.ptx: $(grep -m1 -i 'error\|fatal' "$W/$f.ptxas")"
	fi
done
exit $rc
