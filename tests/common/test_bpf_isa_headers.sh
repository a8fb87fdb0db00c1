#!/usr/bin/env bash
# test_bpf_isa_headers.sh — the BPF-ISA users build against the oldest UAPI
# headers `make deps` can leave behind (Debian 12's linux-libc-dev 6.1).
# Every object whose dependency file names common/gx_bpf_isa.h is rebuilt into
# a scratch folder with a copy of the installed <linux/bpf.h> from which the
# ISA additions since 6.1 are removed, put first on the include path. A file
# that uses a newer encoding without gx_bpf_isa.h fails to compile here, on
# any machine, whatever linux-libc-dev it has.
set -u
B=${BUILD:-build}
fail() { echo "not ok - bpf-isa headers: $*"; exit 0; }
hdr=$(printf '#include <linux/bpf.h>\n' | ${CC:-gcc} -E -M -x c - 2>/dev/null | tr ' \\' '\n\n' | grep '/linux/bpf.h$' | head -n 1)
[ -f "$hdr" ] || fail "no <linux/bpf.h> installed (run make deps)"
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/inc/linux"
# The names Linux added to the instruction set after 6.1.
grep -Ev '^#define[[:space:]]+(BPF_MEMSX|BPF_JCOND)[[:space:]]' "$hdr" >"$tmp/inc/linux/bpf.h"
grep -Eq '^#define[[:space:]]+(BPF_MEMSX|BPF_JCOND)[[:space:]]' "$tmp/inc/linux/bpf.h" &&
	fail "could not strip the newer names from $hdr"
echo "ok - bpf-isa headers: a 6.1-like <linux/bpf.h> made from $hdr"

# (Only objects whose source still exists: a build folder may keep the
# dependency files of moved sources.)
objs=$(grep -l 'common/gx_bpf_isa.h' $(find "$B/obj" -name '*.d') 2>/dev/null | while read -r d; do
	src=${d#"$B"/obj/}
	[ -f "${src%.d}.c" ] && echo "$d"
done | sed "s|^$B/|$tmp/b/|; s|\.d$|.o|")
n=$(echo "$objs" | grep -c .)
[ "$n" -ge 10 ] || fail "only $n objects depend on gx_bpf_isa.h (build first: make tests)"
if make -s -j"$(nproc)" BUILD="$tmp/b" UAPI_INC="-I$tmp/inc" $objs >"$tmp/log" 2>&1; then
	echo "ok - bpf-isa headers: $n objects build without BPF_MEMSX/BPF_JCOND in <linux/bpf.h>"
else
	grep -m 5 'error' "$tmp/log"
	echo "not ok - bpf-isa headers: objects fail to build against 6.1-era headers (see above)"
fi
# The same build must fail when gx_bpf_isa.h does not supply the names, or
# this test could not tell the difference.
one=$(echo "$objs" | grep -m1 'verifier_cfg\.o$')
[ -n "$one" ] || fail "devbpf/verifier_cfg.o not among the users"
if make -s BUILD="$tmp/b2" UAPI_INC="-I$tmp/inc -DGX_BPF_ISA_NO_COMPAT" "${one/$tmp\/b/$tmp/b2}" >/dev/null 2>&1; then
	echo "not ok - bpf-isa headers: verifier_cfg.o built with the compat names off (the check cannot fail)"
else
	echo "ok - bpf-isa headers: without the compat names verifier_cfg.o fails, as on a bare 6.1 machine"
fi
