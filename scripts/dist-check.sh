#!/usr/bin/env bash
# dist-check.sh DIR [BUILD_ROOT] — may the ELF files under DIR run on a stock
# GPU host? Each must need no glibc symbol newer than GLIBC_2.34 (Ubuntu
# 22.04, RHEL 9) and no shared library outside the set every such host has;
# none may carry an RPATH/RUNPATH other than $ORIGIN-relative ones, and no
# file the build wrote (documents and headers aside) may name BUILD_ROOT (the
# folder it was built in: the install must be relocatable). Prints one line per problem and exits 1 if there is any.
# Files under DIR/lib/gpuext-llvm (the optional JIT add-on's own libraries,
# Debian 12's builds of LLVM 19, libz3 and libedit) and the add-on's libgxjit.so /
# gpuext-bpfjit.so are held to their own list and to GLIBC_2.36 (Debian's
# libLLVM needs arc4random): the add-on runs on Ubuntu 24.04, not 22.04.
set -uo pipefail
dir=${1:?usage: dist-check.sh DIR [BUILD_ROOT]}
root=${2:-}
GLIBC_MAX=2.34
ADDON_GLIBC_MAX=2.36
ALLOWED=" libc.so.6 libm.so.6 libz.so.1 libelf.so.1 libzstd.so.1 liblz4.so.1 ld-linux-x86-64.so.2 "
# The add-on needs LLVM's own libraries, shipped beside it (not libbpf:
# devbpf's loader reads BTF itself).
# (those it ships, and those every Ubuntu 24.04 base has)
ADDON_ALLOWED="$ALLOWED libLLVM.so.19.1 libedit.so.2 libz3.so.4 libstdc++.so.6 libgcc_s.so.1
  libffi.so.8 libxml2.so.2 libtinfo.so.6 libbsd.so.0 "
bad=0
problem() { echo "dist-check: $*"; bad=1; }

newer() { # is glibc version $1 newer than $2?
	[ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | tail -n1)" != "$2" ]
}

while IFS= read -r -d '' f; do
	head -c4 "$f" 2>/dev/null | grep -q $'^\x7fELF' || continue
	rel=${f#"$dir"/}
	allowed=$ALLOWED max=$GLIBC_MAX
	case $rel in lib/gpuext-llvm/*|lib/libgxjit.so|lib/gpuext-bpfjit.so) allowed=" $(echo $ADDON_ALLOWED) " max=$ADDON_GLIBC_MAX ;; esac
	# the Prometheus exporter alone may need libmicrohttpd (Ubuntu 22.04/24.04:
	# libmicrohttpd12; docs/install.md); `gpuext exporter` says so when missing
	case $rel in bin/gpuext-exporter) allowed="$allowed libmicrohttpd.so.12 " ;; esac
	# the newest glibc version any imported symbol needs
	for v in $(objdump -T "$f" 2>/dev/null | awk '$0 ~ /\*UND\*/' | grep -o 'GLIBC_[0-9.]*' | sort -uV); do
		ver=${v#GLIBC_}
		if newer "$ver" "$max"; then
			syms=$(objdump -T "$f" | awk -v v="$v" '$0 ~ /\*UND\*/ && index($0, v) {print $NF}' | tr '\n' ' ')
			problem "$rel needs $v (newer than GLIBC_$max): $syms"
		fi
	done
	for need in $(readelf -d "$f" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		case $allowed in *" $need "*) ;; *) problem "$rel needs $need (not on a stock GPU host: link it statically or leave it to the add-on)" ;; esac
	done
	for rp in $(readelf -d "$f" 2>/dev/null | sed -n 's/.*(R\(UN\)\{0,1\}PATH).*\[\(.*\)\]/\2/p' | tr ':' ' '); do
		case $rp in '$ORIGIN'*) ;; *) problem "$rel has the search path $rp (only \$ORIGIN-relative ones relocate)" ;; esac
	done
done < <(find "$dir" -type f -print0)

# What the build wrote (ELF files, BPF objects, the prepared cache) must not
# name its folder; documents may say anything ("/src" is a build folder too),
# and the add-on's Debian libraries name Debian's own build folders.
if [ -n "$root" ]; then
	while IFS= read -r -d '' f; do
		case $f in */share/doc/*|*.md|*/LICENSE|*/include/*|*/lib/gpuext-llvm/*) continue ;; esac
		grep -qF -- "$root/" "$f" && problem "${f#"$dir"/} names the build folder $root (not relocatable)"
	done < <(find "$dir" -type f -print0)
fi
exit $bad
