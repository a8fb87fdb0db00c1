#!/usr/bin/env bash
# Golden files of the parser/emitter: tests/ptx-rewrite/golden/NAME.ptx through
# `gpuext ptx check -o` must give NAME.out exactly (GX_UPDATE_GOLDEN=1
# rewrites the .out files), and ptxas must accept both for the file's target.
set -u
BUILD=${BUILD:-build}
PTXAS=${PTXAS:-/usr/local/cuda/bin/ptxas}
G=$BUILD/bin/gpuext
D=tests/ptx-rewrite/golden
W=$BUILD/ptx-golden
mkdir -p "$W"
for in in "$D"/*.ptx; do
	name=$(basename "$in" .ptx)
	exp=$D/$name.out
	got=$W/$name.out
	if ! err=$("$G" ptx check -o "$got" "$in" 2>&1 >/dev/null); then
		echo "not ok - golden $name: check failed: $err"
		continue
	fi
	[ "${GX_UPDATE_GOLDEN:-0}" = 1 ] && cp "$got" "$exp"
	if [ ! -f "$exp" ]; then
		echo "not ok - golden $name: $exp missing (GX_UPDATE_GOLDEN=1 creates it)"
	elif cmp -s "$got" "$exp"; then
		echo "ok - golden $name: emitted text as expected"
	else
		echo "not ok - golden $name: emitted text differs from $exp"
		diff "$exp" "$got" | head -20
	fi
	arch=$(sed -n 's/^\.target[[:space:]]*\([a-z0-9_]*\).*/\1/p' "$in" | head -1)
	for f in "$in" "$got"; do
		if out=$("$PTXAS" -c -arch="$arch" "$f" -o /dev/null 2>&1); then
			echo "ok - golden $name: ptxas $arch accepts $(basename "$f")"
		else
			echo "not ok - golden $name: ptxas $arch rejects $f: $(echo "$out" | head -2 | tr '\n' ' ')"
		fi
	done
done
