#!/usr/bin/env bash
# Run the policy cache's fuzz target (libFuzzer, ASan+UBSan, leak checking)
# for GX_FUZZ_TIME seconds (default 5: the `make test` run), seeded with real
# entries: the shipped tools JIT'd into a scratch cache, and one cut short.
. tests/fuzz_run.sh
fuzz_setup fuzz_pdesc
mkdir -p "$work/cache"
if ! "$B/bin/gpuext" tools prepare --cache-dir "$work/cache" --sm 90 >"$work/prep.log" 2>&1; then
	echo "not ok - fuzz_pdesc: seeding: gpuext tools prepare failed: $(tail -1 "$work/prep.log")"
	exit 0
fi
n=0
for f in "$work"/cache/*.gxpol; do
	[ -f "$f" ] || continue
	n=$((n + 1))
	cp "$f" "$work/corpus/seed$n"
done
if [ "$n" = 0 ]; then
	echo "not ok - fuzz_pdesc: seeding: no cache entry written"
	exit 0
fi
head -c 300 "$work/corpus/seed1" >"$work/corpus/short"
fuzz_run fuzz_pdesc "$F" "$work/corpus" "$T" 65536 ", no crash, leak, silent refusal or unstable round trip ($n seeds)"
