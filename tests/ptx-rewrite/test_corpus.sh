#!/usr/bin/env bash
# Identity round trip over the PTX corpus (tests/ptx-rewrite/corpus.sh): for every
# module, `gpuext ptx check` parses it, emits it, re-parses the output and
# requires the same text (fixpoint); then ptxas must accept the emitted text
# for the module's target with exactly the original's resource figures
# (`ptxas -v`: registers, stack, spills, shared memory, per function).
set -u
export BUILD=${BUILD:-build} PTXAS=${PTXAS:-/usr/local/cuda/bin/ptxas}
export G=$BUILD/bin/gpuext OUT=$BUILD/ptx-roundtrip
mkdir -p "$OUT"
list=$(tests/ptx-rewrite/corpus.sh) || { echo "not ok - corpus builds: tests/ptx-rewrite/corpus.sh failed"; exit 1; }
n=$(printf '%s\n' "$list" | grep -c .)
if [ "$n" -ge 40 ]; then echo "ok - corpus has $n modules"; else echo "not ok - corpus has $n modules (want >= 40)"; fi

# ptxas -v output without timings and file names.
norm() { grep -v -e 'Compile time' -e '^ptxas.*\.ptx' || true; }
export -f norm

one() {
	local p=$1 t=$2 f=${3:-} b
	b=$(basename "$p" .ptx)
	if ! err=$("$G" ptx check -o "$OUT/$b.ptx" "$p" 2>&1 >/dev/null); then
		echo "not ok - roundtrip $b: $err"
		return
	fi
	echo "ok - roundtrip $b (parse, emit, fixpoint)"
	# The original's figures are cached next to it.
	local ref=$p.ptxas-v
	if [ ! -s "$ref" ] || [ "$p" -nt "$ref" ]; then
		"$PTXAS" -arch="$t" $f -v "$p" -o /dev/null >"$ref.tmp" 2>&1 || { echo "not ok - ptxas $b: original rejected"; rm -f "$ref.tmp"; return; }
		norm <"$ref.tmp" >"$ref"; rm -f "$ref.tmp"
	fi
	local got
	if ! got=$("$PTXAS" -arch="$t" $f -v "$OUT/$b.ptx" -o /dev/null 2>&1); then
		echo "not ok - ptxas $b: $(printf '%s\n' "$got" | grep -m3 error | tr '\n' ' ')"
		return
	fi
	if diff <(printf '%s\n' "$got" | norm) "$ref" >/dev/null; then
		echo "ok - ptxas $b ($t): same resource usage as the original"
	else
		echo "not ok - ptxas $b ($t): resource usage differs: $(diff <(printf '%s\n' "$got" | norm) "$ref" | head -4 | tr '\n' ' ')"
	fi
}
export -f one
printf '%s\n' "$list" | xargs -P 2 -L 1 bash -c 'one "$@"' _
