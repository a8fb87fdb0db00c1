#!/bin/sh
# The tests' ptxas for the shim's cubins (shim/cubin_ptxas.c): the fake
# driver's "cubin" is its PTX behind a marker (tests/shim/fakecuda/fake.c,
# FAKE_CUBIN), as its cuLinkComplete makes. FAKECUDA_LINK_FAIL=1 fails like
# a ptxas error; FAKECUDA_LINK_US=N takes N microseconds (a slow compile).
out="" in="" arch=""
while [ $# -gt 0 ]; do
	case $1 in
	-o) out=$2; shift 2 ;;
	-arch=*) arch=${1#-arch=}; shift ;;
	*) in=$1; shift ;;
	esac
done
[ -n "$out" ] && [ -n "$in" ] && [ -n "$arch" ] || { echo "fake ptxas: usage: -arch=sm_N -o OUT IN" >&2; exit 2; }
if [ -n "${FAKECUDA_LINK_FAIL:-}" ]; then
	echo "ptxas fatal   : fake failure (FAKECUDA_LINK_FAIL)" >&2
	exit 255
fi
[ -n "${FAKECUDA_LINK_US:-}" ] && sleep "$(awk -v u="$FAKECUDA_LINK_US" 'BEGIN { printf "%.6f", u / 1e6 }')"
[ -n "${FAKE_PTXAS_LOG:-}" ] && echo "$arch" >>"$FAKE_PTXAS_LOG"
{ printf '\177ELF fake cubin\n'; cat "$in"; printf '\0'; } >"$out"
