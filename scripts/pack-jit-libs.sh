#!/usr/bin/env bash
# pack-jit-libs.sh [--plain] OUTDIR [JITLIB] — the shared libraries libgxjit.so needs beyond
# what the GPU machine has (libLLVM-19, libz3, libedit; see
# docs/gpu-machine.md), xz-compressed so they fit the device tool's carry
# limit. tests/gpu/hostpolicy.sh unpacks them to prove the native back end of
# the host-policy executor on the H200. Only for that test machine: users
# install libllvm19 from their distribution, or unpack `make dist`'s
# JIT add-on, which holds them unpacked (--plain: copied, not compressed).
set -euo pipefail
plain=0
[ "${1:-}" = --plain ] && { plain=1; shift; }
out=$1
mkdir -p "$out"
jit=${2:-${GX_JITLIB:-build/lib/libgxjit.so}}
# lib_path SONAME: where the dynamic linker finds it (awk reads all of
# ldconfig's output: exiting early would kill ldconfig with SIGPIPE, which
# pipefail turns into a failure)
lib_path() { ldconfig -p | awk -v n="$1" '!f && $1 == n && /x86-64/ { print $NF; f = 1 }'; }
for need in $(readelf -d "$jit" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p'); do
	case $need in libc.so.*|ld-linux*|libelf.so.*|libm.so.*|libstdc++*|libgcc_s*) continue ;; esac
	src=$(lib_path "$need")
	[ -n "$src" ] || src=$(ls /usr/lib/llvm-19/lib/"$need" 2>/dev/null || true)
	[ -n "$src" ] || { echo "pack-jit-libs: $need not found" >&2; exit 1; }
	libs="${libs:-} $src"
	# libLLVM's own uncommon dependencies
	if [ "${need#libLLVM}" != "$need" ]; then
		for d in libz3.so.4 libedit.so.2; do
			libs="$libs $(lib_path "$d")"
		done
	fi
done
for src in $libs; do
	name=$(basename "$src")
	if [ $plain = 1 ]; then
		cp -L "$src" "$out/$name" && chmod 644 "$out/$name"
		continue
	fi
	dst=$out/$name.xz
	[ -f "$dst" ] && [ "$dst" -nt "$(readlink -f "$src")" ] && continue
	xz -9 -T1 -c "$(readlink -f "$src")" >"$dst.tmp" && mv "$dst.tmp" "$dst"
	echo "  XZ      $dst"
done
