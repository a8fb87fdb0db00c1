#!/usr/bin/env bash
# Run the control messages' fuzz target (libFuzzer, ASan+UBSan) for
# GX_FUZZ_TIME seconds (default 5: the `make test` run), seeded with the
# requests and replies gpuext attach/detach exchange.
. tests/fuzz_run.sh
fuzz_setup fuzz_ctl
printf 'gpuext-ctl 1\nseq 17\nop attach\ntool threadhist\ntool launchlate\ndir /dev/shm/gpuext-0/attach-1-abc\n' >"$work/corpus/attach"
printf 'gpuext-ctl 1\nseq 18\nop attach\npolicy /x/p.bpf.o,k=1\nsched /x/s.bpf.o\ndir /d\n' >"$work/corpus/policy"
printf 'gpuext-ctl 1\nseq 20\nop attach\ntool kernelretsnoop\nsample 64,first=4\ndir /d\n' >"$work/corpus/sample"
printf 'gpuext-ctl 1\nseq 19\nop detach\nwhat --all\n' >"$work/corpus/detach"
printf 'gpuext-ctl 1\nseq 19\nop reply\nmsg detached threadhist\nattached threadhist\ndir /d\nstatus -16\nmodules 3\nms 12\n' >"$work/corpus/reply"
fuzz_run fuzz_ctl "$F" "$work/corpus" "$T" 20000 ", no crash, silent refusal or unstable round trip (5 seeds)"
