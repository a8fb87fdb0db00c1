#!/usr/bin/env bash
# Build the PTX corpus (tests/ptx-rewrite/corpus/corpus.list) into $BUILD/ptx-corpus
# and print one line per module:  PATH TARGET [PTXAS-FLAGS]
# (PTXAS-FLAGS is "-c" for relocatable -rdc modules). Modules are rebuilt only
# when their source or the list is newer. Two jobs at most (shared machine).
# Environment: BUILD, NVCC, CLANG, LLC, CUDA_HOME, CORPUS_JOBS.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BUILD=${BUILD:-build}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NVCC=${NVCC:-$CUDA_HOME/bin/nvcc}
CLANG=${CLANG:-clang-19}
LLC=${LLC:-llc-19}
out=$BUILD/ptx-corpus
mkdir -p "$out"
list=$here/corpus/corpus.list

# NVRTC driver and clang's missing-header stubs (CUDA 13 dropped two headers
# clang 19's wrapper still includes; they only declare texture helpers).
# DT_RPATH, not RUNPATH: libnvrtc dlopens libnvrtc-builtins, and only the
# executable's RPATH reaches that lookup, so the corpus builds on a machine
# whose loader cache does not list the toolkit (scripts/fresh-check.sh).
gen=$out/nvrtc_gen
if [ ! -x "$gen" ] || [ "$here/nvrtc_gen.c" -nt "$gen" ]; then
	${CC:-gcc} -O1 -o "$gen" "$here/nvrtc_gen.c" -I"$CUDA_HOME/include" \
		-L"$CUDA_HOME/lib64" -Wl,--disable-new-dtags,-rpath,"$CUDA_HOME/lib64" -lnvrtc
fi
mkdir -p "$out/clang-stub"
touch "$out/clang-stub/texture_fetch_functions.h" "$out/clang-stub/texture_indirect_functions.h"

jobs=()
lines=()
while read -r name src compiler targets flags; do
	[[ -z "$name" || "$name" == \#* ]] && continue
	for t in ${targets//,/ }; do
		dst=$out/$name.$t.ptx
		pflags=""
		[[ " $flags " == *" -rdc=true "* ]] && pflags="-c"
		lines+=("$dst $t${pflags:+ $pflags}")
		if [ ! -s "$dst" ] || [ "$here/corpus/$src" -nt "$dst" ] || [ "$list" -nt "$dst" ]; then
			case $compiler in
			nvcc) cmd="$NVCC -ptx -arch=$t $flags -o $dst.tmp $here/corpus/$src" ;;
			clang) cmd="$CLANG --cuda-device-only -S -O2 --cuda-gpu-arch=$t --cuda-path=$CUDA_HOME -Wno-unknown-cuda-version -isystem $out/clang-stub $flags -o $dst.tmp $here/corpus/$src" ;;
			llc) cmd="$LLC -march=nvptx64 -mcpu=$t -mattr=+ptx80 $flags -o $dst.tmp $here/corpus/$src" ;;
			nvrtc) cmd="$gen $here/corpus/$src $t $dst.tmp $flags" ;;
			*) echo "corpus.sh: unknown compiler '$compiler' for $name" >&2; exit 1 ;;
			esac
			jobs+=("$cmd && mv $dst.tmp $dst")
		fi
	done
done <"$list"

if [ "${#jobs[@]}" -gt 0 ]; then
	echo "corpus.sh: building ${#jobs[@]} modules" >&2
	printf '%s\0' "${jobs[@]}" | xargs -0 -P "${CORPUS_JOBS:-2}" -I{} bash -c '{} || { echo "corpus.sh: failed: {}" >&2; exit 255; }' >&2
fi
printf '%s\n' "${lines[@]}"
