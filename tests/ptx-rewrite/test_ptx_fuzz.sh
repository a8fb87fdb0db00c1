#!/usr/bin/env bash
# Run the PTX parser fuzzer (libFuzzer, ASan+UBSan, leak checking on) for
# PTX_FUZZ_TIME seconds (10 in `make test`, 300 with `make fuzz-ptx`),
# seeded from the golden files and the corpus. A crash, hang or leak leaves
# the input in $BUILD/fuzz/ptx-* and fails the test.
set -u
B=${BUILD:-build}
T=${PTX_FUZZ_TIME:-10}
F=$B/fuzz
# Short runs (make test) start from the seeds only, so loading a corpus grown
# by earlier long runs does not eat the time; `make fuzz-ptx` keeps growing
# $F/corpus_ptx.
if [ "$T" -le 30 ]; then
	corpus=$F/corpus_ptx_short
	rm -rf "$corpus"
else
	corpus=$F/corpus_ptx
fi
mkdir -p "$corpus"
if [ -z "$(ls -A "$corpus")" ]; then
	cp tests/ptx-rewrite/golden/*.ptx tests/ptx-rewrite/sites/*.ptx "$corpus/" 2>/dev/null
	# small corpus modules only: libFuzzer mutates better on short inputs
	for s in "$B"/ptx-corpus/*.ptx; do
		[ -f "$s" ] && [ "$(stat -c %s "$s")" -lt 20000 ] && cp "$s" "$corpus/"
	done
fi
log=$F/ptx.log
"$F/fuzz_ptx" -dict=tests/ptx-rewrite/fuzz_ptx.dict -max_total_time="$T" -max_len=65536 -rss_limit_mb=2048 -timeout=10 \
	-artifact_prefix="$F/ptx-" -print_final_stats=1 "$corpus" >"$log" 2>&1
rc=$?
runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
if [ $rc = 0 ] && [ -n "$runs" ]; then
	echo "ok - fuzz_ptx: ${T}s, $runs inputs, corpus $(ls "$corpus" | wc -l), no crash/hang/leak"
else
	echo "not ok - fuzz_ptx: rc $rc: $(grep -m3 'ERROR\|SUMMARY\|bad error\|fixpoint\|does not parse' "$log" | tr '\n' ' ') (input in $F/ptx-*)"
fi
