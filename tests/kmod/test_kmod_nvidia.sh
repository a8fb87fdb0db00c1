#!/usr/bin/env bash
# test_kmod_nvidia.sh — our NVIDIA open-gpu-kernel-modules patch applies
# cleanly (patch --dry-run through apply.sh) to a 580.x source tree, when one
# is available: GPUEXT_NVIDIA_SRC, or else the search mirror's base tag (named
# in apply.sh) and its newest 580.x tag. With none, it says so and checks
# only that the patch is well-formed. Building NVIDIA's tree is not done here
# (see kmod/nvidia/README.md for the builds made by hand).
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
# apply.sh --dry-run on a tree with the touched files of TAG from the mirror
dry_tag() { # dry_tag TAG WHAT
	local tmp f out
	tmp=$(mktemp -d)
	for f in $files; do
		mkdir -p "$tmp/$(dirname "$f")"
		git -C "$mirror" show "$1:$f" >"$tmp/$f" 2>/dev/null || rm -f "$tmp/$f" # new file
	done
	if out=$("$ROOT/kmod/nvidia/apply.sh" --dry-run "$tmp" 2>&1); then
		echo "ok - nvidia: apply.sh --dry-run applies cleanly to $1 ($2)"
	else
		echo "not ok - nvidia: apply.sh --dry-run failed on $1 ($2): $(echo "$out" | tail -3 | tr '\n' ' ')"
	fi
	rm -rf "$tmp"
}
src=${GPUEXT_NVIDIA_SRC:-}
if [ -n "$src" ]; then
	if out=$("$ROOT/kmod/nvidia/apply.sh" --dry-run "$src" 2>&1); then
		echo "ok - nvidia: apply.sh --dry-run applies cleanly to $src"
	else
		echo "not ok - nvidia: apply.sh --dry-run failed: $(echo "$out" | tail -3 | tr '\n' ' ')"
	fi
	exit 0
fi
# The search mirror (the fetch tool's snapshot): the base tag named in
# apply.sh, and the newest tag of the same branch (580.x) it holds.
mirror=/work/.mirror/NVIDIA+open-gpu-kernel-modules/repo
tag=$(sed -n 's/^# base: //p' "$ROOT/kmod/nvidia/apply.sh" | head -1)
if [ ! -d "$mirror" ] || ! git -C "$mirror" rev-parse -q --verify "$tag^{commit}" >/dev/null 2>&1; then
	echo "# nvidia: no open-gpu-kernel-modules tree (set GPUEXT_NVIDIA_SRC) and no mirror with $tag; dry run not done"
	exit 0
fi
dry_tag "$tag" "the base"
newest=$(git -C "$mirror" tag -l "${tag%%.*}.*" | sort -V | tail -1)
if [ "$newest" != "$tag" ]; then
	dry_tag "$newest" "newest ${tag%%.*}.x in the mirror"
else
	echo "# nvidia: $tag is the newest ${tag%%.*}.x tag in the mirror"
fi
exit 0
