#!/usr/bin/env bash
# `gpuext ptx check|rewrite` front end: reports, JSON, output files, error
# wording (path:line:col: message), flag validation.
set -u
G=${BUILD:-build}/bin/gpuext
W=${BUILD:-build}/ptx-cli
mkdir -p "$W"
IN=tests/ptx-rewrite/golden/body.ptx
check() { if eval "$2" >/dev/null 2>&1; then echo "ok - $1"; else echo "not ok - $1: $2"; fi; }
check "ptx check reports counts" "$G ptx check $IN | grep -q '^$IN: ok: [0-9]* lines, 1 kernels, 1 functions, [0-9]* instructions, [0-9]* memory ops'"
check "ptx check --json" "$G --json ptx check $IN | grep -q '\"kernels\":1,\"functions\":1,.*\"fixpoint\":true'"
check "ptx check -o writes the emitted text" "$G ptx check -o $W/body.out $IN && cmp -s $W/body.out tests/ptx-rewrite/golden/body.out"
printf '.version 8.0\n.entry k()\n{\n\tmov.u32 %%r1, 1\n}\n' >"$W/bad.ptx"
check "syntax error is path:line:col: message" "$G ptx check $W/bad.ptx 2>&1 | grep -qx \"gpuext: error: $W/bad.ptx:5:1: expected ',' or ';' after an operand, found '}'\""
check "syntax error exits 1" "$G ptx check $W/bad.ptx; [ \$? = 1 ]"
# Absurd inputs are errors with line:col, not "ok" (issue 20): an empty file,
# a NUL inside the text (trailing NULs are padding), register counts and
# array sizes beyond the parser's limits, integers beyond 64 bits.
: >"$W/empty.ptx"
check "empty file is an error" "$G ptx check $W/empty.ptx 2>&1 | grep -qx \"gpuext: error: $W/empty.ptx:1:1: empty input: no PTX (expected .version)\""
printf '.version 8.0\n.entry k()\n{\n\tret;\0\n}\n' >"$W/nul.ptx"
check "NUL inside the text is an error" "! $G ptx check $W/nul.ptx && $G ptx check $W/nul.ptx 2>&1 | grep -qx \"gpuext: error: $W/nul.ptx:4:6: NUL byte in the text (a PTX image ends at its first NUL)\""
check "... for rewrite too" "$G ptx rewrite $W/nul.ptx -o $W/x.ptx 2>&1 | grep -q \"$W/nul.ptx:4:6: NUL byte\""
printf '.version 8.0\n.entry k()\n{\n\tret;\n}\n\0\0\0\0' >"$W/pad.ptx"
check "trailing NULs are padding" "$G ptx check $W/pad.ptx | grep -q ': ok: 5 lines, 1 kernels'"
printf '.version 8.0\n.entry k()\n{\n\t.reg .b32 %%r<99999999999999999999999>;\n}\n' >"$W/regs.ptx"
check "register count beyond 2^64 is an error" "$G ptx check $W/regs.ptx 2>&1 | grep -qx \"gpuext: error: $W/regs.ptx:4:15: register count 99999999999999999999999 out of range (at most 16777215)\""
printf '.version 8.0\n.global .b8 a[99999999999999999999999999];\n' >"$W/arr.ptx"
check "array size beyond 2^64 is an error" "$G ptx check $W/arr.ptx 2>&1 | grep -qx \"gpuext: error: $W/arr.ptx:2:15: array size 99999999999999999999999999 out of range (at most 2^48 elements)\""
check "--json error" "$G --json ptx check $W/bad.ptx | grep -q '^{\"error\":\"$W/bad.ptx:5:1: '"
check "missing file" "$G ptx check $W/nope.ptx 2>&1 | grep -q \"cannot read '$W/nope.ptx'\""
check "ptx check needs one file" "! $G ptx check"
check "unknown ptx subcommand" "! $G ptx frob && $G ptx frob 2>&1 | grep -q \"unknown command 'ptx frob'\""
check "rewrite identity writes stdout" "$G ptx rewrite $IN | cmp -s - tests/ptx-rewrite/golden/body.out"
check "rewrite identity -o" "$G ptx rewrite $IN -o $W/id.ptx && cmp -s $W/id.ptx tests/ptx-rewrite/golden/body.out"
check "rewrite syntax error" "$G ptx rewrite $W/bad.ptx -o $W/x.ptx 2>&1 | grep -q \"$W/bad.ptx:5:1: \""
check "rewrite --hooks validates names" "$G ptx rewrite --hooks entry,frob $IN 2>&1 | grep -q \"unknown hook 'frob'\""
check "rewrite --bind validates" "$G ptx rewrite --policy-ptx $IN --bind entry $IN 2>&1 | grep -q 'bind wants HOOK:FUNC'"
check "rewrite --bind needs --policy-ptx" "$G ptx rewrite --bind entry:f $IN 2>&1 | grep -q 'go together'"
check "rewrite --max-ptx validates" "$G ptx rewrite --max-ptx 9 $IN 2>&1 | grep -q 'max-ptx wants X.Y'"
check "rewrite --hooks all --json" "$G --json ptx rewrite --hooks all --stubs call $IN -o $W/all.ptx | grep -q '\"kernels\":1,\"hooks\":[1-9]'"
check "rewrite --hooks all (empty handlers elided)" "$G --json ptx rewrite --hooks all $IN -o $W/alle.ptx | grep -q '\"kernels\":1,\"hooks\":0'"
check "rewrite --stubs bad is refused" "! $G ptx rewrite --hooks all --stubs bad $IN -o /dev/null 2>/dev/null"
# -o to a device must write through it, never replace it (temp+rename)
mkfifo "$W/fifo" 2>/dev/null
( cat "$W/fifo" >"$W/fifo.out" ) &
check "rewrite -o FIFO writes through the pipe" "$G ptx rewrite $IN -o $W/fifo && wait && [ -p $W/fifo ] && cmp -s $W/fifo.out tests/ptx-rewrite/golden/body.out"
rm -f "$W/fifo"
# --persistent=copy: the accepted kernel stays, its transformed copy is added
# (one log line naming it and its parameter count), ptxas takes the result.
R=tests/ptx-rewrite/golden-passes/reduce.ptx
PTXAS=${PTXAS:-/usr/local/cuda/bin/ptxas}
rtarget=$(sed -n 's/^[[:space:]]*\.target[[:space:]]\+\([a-z0-9_]*\).*/\1/p' "$R" | head -1)
check "rewrite --persistent=copy keeps the kernel and adds __gx_pw_reduce" "$G ptx rewrite --hooks all --persistent=copy $R -o $W/pcopy.ptx 2>$W/pcopy.log && grep -q '^.visible .entry reduce(' $W/pcopy.ptx && grep -q '^.visible .entry __gx_pw_reduce(' $W/pcopy.ptx"
check "rewrite --persistent=copy logs the copy and its parameters" "grep -q '^persistent: reduce: copy __gx_pw_reduce transformed (work descriptor: parameter [0-9]* __gx_work, loop barrier [0-9]*, unit barrier yes)' $W/pcopy.log"
check "rewrite --persistent=copy output passes ptxas" "$PTXAS -arch=$rtarget $W/pcopy.ptx -o /dev/null"
check "rewrite --persistent=copy --kernels: a kernel not matching gets no copy, said in the log" "$G ptx rewrite --persistent=copy --kernels 'other*' $R -o $W/psel.ptx 2>$W/psel.log && ! grep -q '__gx_pw_reduce' $W/psel.ptx && grep -q '^persistent: reduce: not selected (kernels=other\*)' $W/psel.log && cmp -s <(grep -v '^//' $W/psel.ptx) <($G ptx rewrite $R -o - 2>/dev/null | grep -v '^//')"
check "rewrite --persistent=copy --kernels 'red*': the matching kernel gets its copy" "$G ptx rewrite --persistent=copy --kernels 'red*' $R -o - 2>/dev/null | grep -q '^.visible .entry __gx_pw_reduce('"
check "rewrite --persistent=frob is refused" "! $G ptx rewrite --persistent=frob $R -o $W/x.ptx"
# --policy FILE.bpf.o: the object's device programs JIT'd (libgxjit.so) and
# bound as their sections say; threadhist (entry) is inlined.
T=${BUILD:-build}/share/gpuext/tools
V=tests/ptx-rewrite/golden-passes/vadd.ptx
check "rewrite --policy threadhist.bpf.o: JIT'd, bound, inlined" "$G ptx rewrite --policy $T/threadhist.bpf.o $V -o $W/pol.ptx && grep -q '^.func .* __gx_p_gxp_threadhist(' $W/pol.ptx && grep -q 'elect.sync' $W/pol.ptx && ! grep -q 'call' $W/pol.ptx"
check "rewrite --policy output passes ptxas" "$PTXAS -arch=sm_90 $W/pol.ptx -o /dev/null"
check "rewrite --policy memtrace.bpf.o (mem, sampled: counted, called by every lane) passes ptxas" "$G ptx rewrite --policy $T/memtrace.bpf.o $V -o $W/pol2.ptx 2>/dev/null && grep -q '^.func .* __gx_p_gxp_memtrace(' $W/pol2.ptx && grep -qE '^[[:space:]]+call.*\\(__gx_cq, ' $W/pol2.ptx && $PTXAS -arch=sm_90 $W/pol2.ptx -o /dev/null"
check "rewrite --policy memtrace_prog.bpf.o (mem, unsampled: inlined) passes ptxas" "$G ptx rewrite --policy $T/memtrace_prog.bpf.o $V -o $W/pol3.ptx 2>/dev/null && ! grep -qE '^[[:space:]]+call' $W/pol3.ptx && $PTXAS -arch=sm_90 $W/pol3.ptx -o /dev/null"
# The empty device probe (bench/empty_probe.bpf.o, entry and exit programs
# returning 0) through the user's path: both sites are made and inlined (no
# call), and ptxas folds them away: vadd's SASS is the original's size, where
# the same sites calling an empty function (--stubs call) make it larger.
EP=${BUILD:-build}/bench/empty_probe.bpf.o
text_size() { local h; h=$(readelf -SW "$1" 2>/dev/null | sed 's/^ *\[ *[0-9]*\] *//' | awk '$1 == ".text.vadd" { print $5 }'); [ -n "$h" ] && echo $((16#$h)); }
check "rewrite --policy empty_probe.bpf.o: 2 sites, inlined" "$G --json ptx rewrite --policy $EP $V -o $W/empty.ptx | grep -q '\"hooks\":2,' && [ \$(grep -c 'elect.sync' $W/empty.ptx) = 2 ] && ! grep -q 'call' $W/empty.ptx"
$PTXAS -arch=sm_90 $V -o $W/orig.cubin 2>/dev/null
$PTXAS -arch=sm_90 $W/empty.ptx -o $W/empty.cubin 2>/dev/null
$G ptx rewrite --hooks entry,exit --stubs call $V -o $W/called.ptx 2>/dev/null && $PTXAS -arch=sm_90 $W/called.ptx -o $W/called.cubin 2>/dev/null
check "empty probe: ptxas folds the sites (vadd's SASS as large as the original's)" "o=\$(text_size $W/orig.cubin) && [ -n \"\$o\" ] && [ \"\$(text_size $W/empty.cubin)\" = \"\$o\" ]"
check "empty function called at the sites: vadd's SASS is larger" "[ \"\$(text_size $W/called.cubin)\" -gt \"\$(text_size $W/orig.cubin)\" ]"
check "rewrite --policy with --bind is refused" "$G ptx rewrite --policy $T/threadhist.bpf.o --bind entry:f $V 2>&1 | grep -q 'policy takes its bindings from the object'"
check "rewrite --policy missing object" "$G ptx rewrite --policy $W/nope.bpf.o $V 2>&1 | grep -q \"$W/nope.bpf.o: cannot read\""
