#!/usr/bin/env bash
# gx_image_cubin_regs on real cubins: ptxas compiles PTX of the repository
# (the rewriter's golden and site kernels) for sm_90 and says how many
# registers each kernel got (-v); the registers read back from each cubin's
# .nv.info must be the same, kernel for kernel. Then the same cubins with
# every truncation and byte flips under ASan (test_image_asan regs).
set -u
B=${BUILD:-build}
PTXAS=${PTXAS:-/usr/local/cuda/bin/ptxas}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
ok() { echo "ok - cubin regs: $*"; }
nok() { echo "not ok - cubin regs: $*"; }
n=0
for f in tests/ptx-rewrite/golden-passes/*.ptx tests/ptx-rewrite/golden/*.ptx tests/ptx-rewrite/sites/*.ptx; do
	[ -f "$f" ] || continue
	b=$(basename "$f" .ptx)
	"$PTXAS" -arch=sm_90 -v "$f" -o "$T/$b.cubin" 2>"$T/$b.v" || continue
	awk -f tests/ptxas_regs.awk "$T/$b.v" | sort >"$T/$b.want"
	[ -s "$T/$b.want" ] || continue
	if ! "$B/tests/image/test_image" regs "$T/$b.cubin" 2>"$T/$b.err" | sort >"$T/$b.got"; then
		nok "$b: $(cat "$T/$b.err")"
	elif cmp -s "$T/$b.want" "$T/$b.got"; then
		ok "$b: $(wc -l <"$T/$b.want") kernels, registers as ptxas -v said"
	else
		nok "$b: ptxas -v said $(tr '\n' ' ' <"$T/$b.want"), read $(tr '\n' ' ' <"$T/$b.got")"
	fi
	n=$((n + 1))
done
[ "$n" -ge 5 ] && ok "$n cubins compared" || nok "only $n cubins compiled"
for c in "$T"/*.cubin; do
	[ -f "$c" ] || continue
	if "$B/tests/image/test_image_asan" regs "$c" >/dev/null 2>"$T/asan.err"; then
		ok "$(basename "$c"): truncations and byte flips under ASan"
	else
		nok "$(basename "$c") under ASan: $(tail -3 "$T/asan.err" | tr '\n' ' ')"
	fi
	break
done
