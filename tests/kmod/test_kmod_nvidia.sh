#!/usr/bin/env bash
# test_kmod_nvidia.sh — our NVIDIA open-gpu-kernel-modules patch applies
# cleanly (patch --dry-run through apply.sh) to a 580.x source tree, when one
# is available: GPUEXT_NVIDIA_SRC, or a checkout of the search mirror. With
# none, it says so and checks only that the patch is well-formed.
set -u
ROOT=$(pwd)
patchf=$ROOT/kmod/nvidia/gpuext-hooks.patch
if [ -s "$patchf" ] && grep -q '^+++ ' "$patchf"; then echo "ok - nvidia: patch present and well-formed"; else echo "not ok - nvidia: $patchf missing or empty"; exit 0; fi
files=$(grep '^+++ ' "$patchf" | awk '{print $2}' | sed 's|^[ab]/||' | sort -u)
n=$(echo "$files" | wc -l)
# every touched file is documented
miss=0
for f in $files; do grep -q "$f" "$ROOT/kmod/nvidia/README.md" || { echo "not ok - nvidia: README does not list $f"; miss=1; }; done
[ $miss = 0 ] && echo "ok - nvidia: README lists the $n touched files"
src=${GPUEXT_NVIDIA_SRC:-}
tmp=""
if [ -z "$src" ]; then
	mirror=/work/.mirror/NVIDIA+open-gpu-kernel-modules/repo
	tag=$(sed -n 's/^# base: //p' "$ROOT/kmod/nvidia/apply.sh" | head -1)
	if [ -d "$mirror" ] && git -C "$mirror" rev-parse -q --verify "$tag^{commit}" >/dev/null 2>&1; then
		tmp=$(mktemp -d)
		trap 'rm -rf "$tmp"' EXIT
		for f in $files; do
			mkdir -p "$tmp/$(dirname "$f")"
			git -C "$mirror" show "$tag:$f" >"$tmp/$f" 2>/dev/null || rm -f "$tmp/$f" # new file
		done
		src=$tmp
	fi
fi
if [ -z "$src" ]; then
	echo "# nvidia: no open-gpu-kernel-modules tree (set GPUEXT_NVIDIA_SRC); dry run not done"
	exit 0
fi
if out=$("$ROOT/kmod/nvidia/apply.sh" --dry-run "$src" 2>&1); then
	echo "ok - nvidia: apply.sh --dry-run applies cleanly to $src"
else
	echo "not ok - nvidia: apply.sh --dry-run failed: $(echo "$out" | tail -3 | tr '\n' ' ')"
fi
exit 0
