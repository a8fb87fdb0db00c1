#!/usr/bin/env bash
# test_image_fuzz — run the image fuzzers (libFuzzer, ASan+UBSan) for
# FUZZ_TIME seconds each (4 in `make test`, 120 in `make fuzz`). Corpora live
# in $BUILD/fuzz/corpus_*, seeded with the nvcc outputs of test_image_nvcc
# when present, and with decompression bombs (gen_bomb: one entry declaring
# 512 MiB; three of 100 MiB, two of which fit the input's 256 MiB budget);
# a crash leaves its input in $BUILD/fuzz/ and fails the test. Memory limits:
# no single allocation may exceed the budget (256 MiB for inputs this small),
# nor the process 1 GiB.
set -u
B=${BUILD:-build}
T=${FUZZ_TIME:-4}
F=$B/fuzz
OUT=$B/image-nvcc/out
run() {
	local name=$1 maxlen=$2
	shift 2
	local corpus=$F/corpus_$name
	mkdir -p "$corpus"
	for s in "$@"; do [ -f "$s" ] && cp -n "$s" "$corpus/" 2>/dev/null; done
	local log=$F/$name.$$.log
	"$F/fuzz_$name" -max_total_time="$T" -max_len="$maxlen" -rss_limit_mb=1024 -malloc_limit_mb=300 -timeout=10 \
		-artifact_prefix="$F/$name-" -print_final_stats=1 "$corpus" >"$log" 2>&1
	local rc=$?
	local runs
	runs=$(grep -ao 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
	if [ $rc = 0 ] && [ -n "$runs" ]; then
		echo "ok - fuzz_$name: ${T}s, $runs inputs, corpus $(ls "$corpus" | wc -l), no crash"
		rm -f "$log"
	else
		echo "not ok - fuzz_$name: rc $rc: $(grep -a -m2 'ERROR\|SUMMARY' "$log") (log $log, input in $F/$name-*)"
	fi
}
seeds=$(mktemp -d)
trap 'rm -rf "$seeds"' EXIT
"$B/tests/image/gen_bomb" "$seeds/bomb512.fatbin" 1 512 && "$B/tests/image/gen_bomb" "$seeds/bomb3x100.fatbin" 3 100 ||
	echo "not ok - gen_bomb writes the fuzzers' bomb seeds"
# The same bomb inside a host object's .nv_fatbin, for the host ELF scan.
[ -f "$OUT/kern.o" ] && objcopy --update-section .nv_fatbin="$seeds/bomb512.fatbin" "$OUT/kern.o" "$seeds/bomb.o" 2>/dev/null
run image 65536 "$seeds"/bomb*.fatbin "$OUT"/k_*.fatbin "$OUT"/ptxonly.fatbin "$OUT"/golden*.fatbin "$OUT"/ref.sm_90.cubin "$OUT"/li.cubin "$OUT"/li.fatbin \
	"$OUT"/x_none/k_none.sm_90.ptx
run hostelf 65536 "$seeds"/bomb.o "$OUT"/kern.o "$OUT"/rdc_main.o "$OUT"/rdc_lib.o
