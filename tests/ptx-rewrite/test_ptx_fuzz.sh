#!/usr/bin/env bash
# Run the PTX parser fuzzer (libFuzzer, ASan+UBSan, leak checking on) for
# PTX_FUZZ_TIME seconds (10 in `make test`, 300 with `make fuzz-ptx`),
# seeded from the golden files, the corpus and the absurd inputs of issue 20
# (an empty file, a NUL inside the text, register counts, array sizes and
# integers beyond their limits). A crash, hang, leak or an allocation over
# 256 MiB (1 GiB in all) leaves the input in $BUILD/fuzz/ptx-* and fails the
# test.
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
	# loops in and out of reach (the deferred memory sites, site_defer.c)
	cp tests/ptx-rewrite/defer/loops.ptx "$corpus/defer-loops.ptx"
	# the persistent transform's inputs: barriers, joins, refusals (its CFG analysis)
	for s in tests/ptx-rewrite/golden-passes/*.ptx tests/ptx-rewrite/golden-passes/refuse/*.ptx; do
		cp "$s" "$corpus/passes-$(basename "$s")"
	done
	# small corpus modules only: libFuzzer mutates better on short inputs
	for s in "$B"/ptx-corpus/*.ptx; do
		[ -f "$s" ] && [ "$(stat -c %s "$s")" -lt 20000 ] && cp "$s" "$corpus/"
	done
fi
H='.version 8.0\n.target sm_90\n.address_size 64\n'
: >"$corpus/absurd-empty.ptx"
printf "$H"'.visible .entry k()\n{\n\tret;\0\n}\n' >"$corpus/absurd-nul.ptx"
printf "$H"'.visible .entry k()\n{\n\t.reg .b32 %%r<99999999999999999999999>;\n\tret;\n}\n' >"$corpus/absurd-regs.ptx"
printf "$H"'.global .b8 a[99999999999999999999999999];\n.global .b8 b[65536][65536][65537];\n' >"$corpus/absurd-array.ptx"
printf "$H"'.visible .entry k()\n{\n\tmov.u64 %%rd1, 0x10000000000000000;\n\tld.u32 %%r1, [%%rd1+0x1000000000000000];\n}\n' >"$corpus/absurd-int.ptx"
log=$F/ptx.log
"$F/fuzz_ptx" -dict=tests/ptx-rewrite/fuzz_ptx.dict -max_total_time="$T" -max_len=65536 -rss_limit_mb=1024 -malloc_limit_mb=256 -timeout=10 \
	-artifact_prefix="$F/ptx-" -print_final_stats=1 "$corpus" >"$log" 2>&1
rc=$?
runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
if [ $rc = 0 ] && [ -n "$runs" ]; then
	echo "ok - fuzz_ptx: ${T}s, $runs inputs, corpus $(ls "$corpus" | wc -l), no crash/hang/leak"
else
	echo "not ok - fuzz_ptx: rc $rc: $(grep -m3 'ERROR\|SUMMARY\|bad error\|fixpoint\|does not parse' "$log" | tr '\n' ' ') (input in $F/ptx-*)"
fi
