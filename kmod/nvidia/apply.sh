#!/usr/bin/env bash
# apply.sh — add gpuext's hooks to an NVIDIA open-gpu-kernel-modules tree.
# Usage: kmod/nvidia/apply.sh [--dry-run] PATH/TO/open-gpu-kernel-modules
# Copies gpuext's backend headers into kernel-open/common/inc/ and applies
# gpuext-hooks.patch (patch -p1). --dry-run only checks that it applies.
# base: 580.142
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dry=""
if [ "${1:-}" = "--dry-run" ]; then dry=--dry-run; shift; fi
src=${1:-}
if [ -z "$src" ] || [ ! -f "$src/kernel-open/nvidia-uvm/uvm_pmm_gpu.c" ]; then
	echo "apply.sh: '$src' is not an open-gpu-kernel-modules tree" >&2
	echo "usage: $0 [--dry-run] PATH/TO/open-gpu-kernel-modules" >&2
	exit 2
fi
patch -p1 --forward --batch $dry -d "$src" <"$here/gpuext-hooks.patch"
if [ -z "$dry" ]; then
	mkdir -p "$src/kernel-open/common/inc/gpuext"
	cp "$here/../gpuext_backend.h" "$src/kernel-open/common/inc/"
	cp "$here/../../include/gpuext/gpu_ext.h" "$src/kernel-open/common/inc/gpuext/"
	echo "apply.sh: hooks added; build the modules as usual, then load gpuext.ko before nvidia.ko/nvidia-uvm.ko"
fi
