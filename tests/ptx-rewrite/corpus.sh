#!/usr/bin/env bash
# Build the PTX corpus (tests/ptx-rewrite/corpus/corpus.list) into $BUILD/ptx-corpus
# and print one line per module:  PATH TARGET [PTXAS-FLAGS]
# (PTXAS-FLAGS is "-c" for relocatable -rdc modules). Modules are rebuilt only
# when their source or the list is newer. Two jobs at most (shared machine).
# Environment: BUILD, NVCC, CLANG, LLC, CUDA_HOME, CORPUS_JOBS, GPUEXT (the CLI,
# for compiler "fatbin"; default $BUILD/bin/gpuext).
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

# compiler "fatbin": every PTX image inside $CUDA_HOME/SRC (an archive's
# objects or one file), extracted by our CLI as $out/NAME.FILE.ARCH.ptx, its
# target read from the text (libcudadevrt carries PTX for one arch only, which
# the toolkit chooses). Extracted at test time: NVIDIA's PTX is not in the repo.
fatbin_ptx() {
	local name=$1 src=$CUDA_HOME/$2 pflags=$3 stamp=$out/$1.stamp f t n=0
	local G=${GPUEXT:-$BUILD/bin/gpuext}
	if [ ! -f "$stamp" ] || [ "$src" -nt "$stamp" ] || [ "$list" -nt "$stamp" ]; then
		[ -x "$G" ] || { echo "corpus.sh: $G not built (needed for $name)" >&2; return 1; }
		[ -f "$src" ] || { echo "corpus.sh: $src missing (for $name)" >&2; return 1; }
		local d=$out/$name.x
		rm -rf "$d" "$out/$name".*.ptx
		mkdir -p "$d"
		case $src in
		*.a) (cd "$d" && ar x "$src") ;;
		*) cp "$src" "$d/" ;;
		esac
		for o in "$d"/*; do
			"$G" fatbin extract --ptx -o "$d/ptx" "$o" >/dev/null ||
				{ echo "corpus.sh: gpuext fatbin extract $o failed (for $name)" >&2; return 1; }
		done
		for f in "$d"/ptx/*.ptx; do
			[ -f "$f" ] && mv "$f" "$out/$name.${f##*/}"
		done
		rm -rf "$d"
		touch "$stamp"
	fi
	for f in "$out/$name".*.ptx; do
		[ -f "$f" ] || continue
		t=$(sed -n 's/^[[:space:]]*\.target[[:space:]]\+\([a-z0-9_]*\).*/\1/p' "$f" | head -1)
		lines+=("$f $t${pflags:+ $pflags}")
		n=$((n + 1))
	done
	[ "$n" -gt 0 ] || { echo "corpus.sh: no PTX inside $src (for $name)" >&2; return 1; }
}

while read -r name src compiler targets flags; do
	[[ -z "$name" || "$name" == \#* ]] && continue
	if [ "$compiler" = fatbin ]; then
		pflags=""
		[[ " $flags " == *" -rdc=true "* ]] && pflags="-c"
		fatbin_ptx "$name" "$src" "$pflags" || exit 1
		continue
	fi
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
