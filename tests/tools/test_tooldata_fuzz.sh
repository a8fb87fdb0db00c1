#!/usr/bin/env bash
# Run the tool logs' fuzz target (libFuzzer, ASan+UBSan) for GX_FUZZ_TIME
# seconds (default 5: the `make test` run), seeded with the formatter tests'
# synthetic logs (tests/tools/mkdata.py) of every tool and the inputs that
# once failed.
. tests/fuzz_run.sh
fuzz_setup fuzz_tooldata
for t in kernelretsnoop threadhist launchlate memtrace; do
	for m in "" v2 lost; do
		[ "$m" = lost ] && [ $t != kernelretsnoop ] && continue
		mkdir -p "$work/$t$m" && python3 tests/tools/mkdata.py "$work/$t$m" $t $m &&
			cp "$work/$t$m"/*.events "$work/corpus/$t$m" 2>/dev/null
	done
done
# inputs that once failed (tests/tools/fuzz-regress: a kernelretsnoop cap
# tag of 103, a shift past 64 bits; a context claiming 2^32 SMs, threadhist
# summing rows it does not have; a record's grid of 2^26 blocks, a 512 MB
# array before the array was the launch's sample's; a launchlate time that
# overflowed a signed difference)
cp tests/tools/fuzz-regress/* "$work/corpus/"
fuzz_run fuzz_tooldata "$F" "$work/corpus" "$T" 65536 ", no crash or silent refusal (every tool's report of the same bytes)"
