#!/usr/bin/env bash
# The shim's thread-local storage stays small. Its TLS block is static
# (STATIC_TLS: hostexec's guard needs an initial-exec variable), and a
# library dlopen'ed late into a big process gets only glibc's surplus,
# about 1.6 KB, for all of it: at 1644 bytes PyTorch could not load the
# shim ("cannot allocate memory in static TLS block", run 60). Buffers go on
# the heap (common/gx_tls.h); this holds the block under 512 bytes, and
# checks that a program with a large static TLS of its own still loads it.
set -u
B=${BUILD:-build}
SHIM=$B/lib/libcuda.so.1
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; }
[ -f "$SHIM" ] || { nok "tls: $SHIM not built"; exit 0; }
sz=$(readelf -lW "$SHIM" | awk '$1 == "TLS" {print $6}')
if [ -z "$sz" ]; then
	ok "tls: the shim has no TLS segment"
elif [ $((sz)) -le 512 ]; then
	ok "tls: the shim's TLS block is $((sz)) bytes (at most 512)"
else
	nok "tls: the shim's TLS block is $((sz)) bytes (over 512: move buffers to common/gx_tls.h)"
	readelf -sW "$SHIM" | awk '$4 == "TLS"' | sort -k3 -n | tail -5 | sed 's/^/# /'
fi
# A process whose libraries dlopen'ed before the shim already hold most of
# the static TLS surplus (glibc 2.36: ~1664 bytes; PyTorch's do) still
# dlopens it: here one of 1024 bytes.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/big.c" <<'C'
__thread char big_tls[1024] __attribute__((tls_model("initial-exec")));
char *big(void) { return big_tls; }
C
cat >"$tmp/load.c" <<'C'
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!dlopen(argv[i], RTLD_NOW | RTLD_LOCAL)) {
			printf("%s\n", dlerror());
			return 1;
		}
	return 0;
}
C
if cc -shared -fPIC -o "$tmp/libbig.so" "$tmp/big.c" && cc -o "$tmp/load" "$tmp/load.c" -ldl; then
	out=$(GPUEXT_LOG=error "$tmp/load" "$tmp/libbig.so" "$PWD/$SHIM" 2>&1)
	[ $? -eq 0 ] && ok "tls: dlopen of the shim after a library holding 1024 bytes of static TLS" ||
		nok "tls: dlopen of the shim after 1024 bytes of static TLS: $out"
else
	nok "tls: cannot build the dlopen check"
fi
