#!/usr/bin/env bash
# Run the cached-cubin header parser's fuzz target (libFuzzer, ASan+UBSan,
# leak checking) for GX_FUZZ_TIME seconds (default 5: the `make test` run),
# seeded with a good entry and broken ones.
. tests/fuzz_run.sh
fuzz_setup fuzz_cubin_entry
k=0123456789abcdef0123456789abcdef
printf 'gpuext-cubin 1\nkey %s\ncubin 4 0000000000001234\n\n\177ELF' $k >"$work/corpus/good"
printf 'gpuext-cubin 1\nkey %s\ncubin 9 0000000000001234\n\n\177ELF' $k >"$work/corpus/size"
printf 'gpuext-cubin 1\nkey %s\ncubin 4 1234\n' $k >"$work/corpus/nosep"
printf 'gpuext-mcache 1\nkey %s\n\n' $k >"$work/corpus/magic"
fuzz_run fuzz_cubin_entry "$F" "$work/corpus" "$T" 4096 ", no crash, leak or cubin outside the entry"
