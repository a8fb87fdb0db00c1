#!/usr/bin/env bash
# Run the rewriter-notes parser's fuzz target (libFuzzer, ASan+UBSan, leak
# checking) for GX_FUZZ_TIME seconds (default 5: the `make test` run),
# seeded with notes of every shape test_bs_parse knows.
. tests/fuzz_run.sh
fuzz_setup fuzz_bs_parse
l() { printf 'persistent: %s: copy %s transformed (work descriptor: parameter %s __gx_work, loop barrier 1, unit barrier %s%s)\n' "$@"; }
l vadd __gx_pw_vadd 5 no "" >"$work/corpus/one"
{ l vadd __gx_pw_vadd 5 no ""; l vadd __gx_ps_vadd 5 no ", static only"; } >"$work/corpus/both"
{ l r __gx_ps_r 4 yes ", static only"; l r __gx_pw_r 4 yes ""; echo "hooks: 3 sites"; } >"$work/corpus/rev"
printf 'persistent: early: refused: threads may exit before a CTA barrier\n' >"$work/corpus/refused"
fuzz_run fuzz_bs_parse "$F" "$work/corpus" "$T" 4096 ", no crash, leak or broken record"
