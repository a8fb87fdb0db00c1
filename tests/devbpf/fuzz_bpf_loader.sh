#!/usr/bin/env bash
# Run the loader/verifier fuzz target (device and host options, the BTF
# reader), seeded with every compiled policy object of the tests, the host
# policies, their .BTF sections alone, and with an object that flattens past
# the loader's budget (gen_bpf_bomb: 150 programs over one 7000-insn
# subprogram, 64 KiB), and the inputs that once failed (fuzz-regress/).
# GX_FUZZ_TIME seconds (default 5: the `make test` run). No allocation may
# exceed 256 MiB, nor the process 1 GiB.
. tests/fuzz_run.sh
fuzz_setup fuzz_bpf_loader
cp "$B"/tests/devbpf/verifier/*.bpf.o "$work/corpus/" 2>/dev/null
for f in "$B"/tests/devbpf/verifier-v4/*.bpf.o; do cp "$f" "$work/corpus/v4-$(basename "$f")" 2>/dev/null; done
cp "$B"/tests/devbpf/loader/*.bpf.o "$work/corpus/" 2>/dev/null
for f in "$B"/hostbpf/*.bpf.o "$B"/hostbpf/safe/*.bpf.o "$B"/hostbpf/unsafe/*.bpf.o; do
	cp "$f" "$work/corpus/host-$(basename "$f")" 2>/dev/null
	${LLVM_OBJCOPY:-llvm-objcopy} --dump-section .BTF="$work/corpus/btf-$(basename "$f" .bpf.o)" "$f" \
		"$work/scratch.o" 2>/dev/null
done
rm -f "$work/scratch.o"
# inputs that once failed (tests/devbpf/fuzz-regress: a section symbol of a
# section without a name made the loader hand a kfunc resolver NULL)
cp tests/devbpf/fuzz-regress/* "$work/corpus/" 2>/dev/null
"$B/tests/devbpf/gen_bpf_bomb" "$work/corpus/bomb.bpf.o" 150 7000 || echo "not ok - gen_bpf_bomb writes the bomb seed"
n=$(ls "$work/corpus" | wc -l)
if [ "$n" -eq 0 ]; then echo "not ok - fuzz_bpf_loader: no seed objects in $B/tests/devbpf"; exit 1; fi
fuzz_run fuzz_bpf_loader "$F" "$work/corpus" "$T" 65536 " from $n seeds, no crash" || exit 1
