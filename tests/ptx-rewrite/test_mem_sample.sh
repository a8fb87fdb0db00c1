#!/usr/bin/env bash
# The sample gate of memory sites (ptx-rewrite/site_sample.c): a program that
# declares gx_mem_sample (memtrace_gate: 1024) gets one 1-in-N test per mem
# site, limit 2^32/N, made by the elected leader after the election (no
# vote), or with GX_PTX_SAMPLE_EARLY=1 before it (voted, a uniform branch);
# --sample N (opts.mem_sample) replaces its N, 1 = the full trace, no gate;
# a mem program without the variable is never gated; the register cap of
# kernels with gated sites (--regs, GX_PTX_MEM_CAP=0); memtrace's handler
# inlined at every memory site (GPU run 98: the leader's call split warps),
# past the module's budget called by every lane with the leader flag first
# (gated: the flag takes the leader's test), GX_PTX_MEM_INLINE=0 and
# GX_PTX_MEM_CALL_ALL=0 for the old forms; ptxas accepts what is made.
set -u
G=${BUILD:-build}/bin/gpuext
W=${BUILD:-build}/ptx-sample
T=${BUILD:-build}/share/gpuext/tools
PTXAS=${PTXAS:-/usr/local/cuda/bin/ptxas}
V=tests/ptx-rewrite/golden-passes/vadd.ptx
mkdir -p "$W"
check() { if eval "$2" >/dev/null 2>&1; then echo "ok - $1"; else echo "not ok - $1: $2"; fi; }
n_mem=$(grep -cE '^[[:space:]]+(ld|st)\.global' $V)
gates() { grep -c 'mov.u32.*%clock' "$1"; }

$G ptx rewrite --policy $T/memtrace_gate.bpf.o --sample 1024 $V -o $W/s1024.ptx 2>/dev/null
GX_PTX_SAMPLE_EARLY=1 $G ptx rewrite --policy $T/memtrace_gate.bpf.o --sample 1024 $V -o $W/early.ptx 2>/dev/null
$G ptx rewrite --policy $T/memtrace_gate.bpf.o --sample 1 $V -o $W/s1.ptx 2>/dev/null
$G ptx rewrite --policy $T/memtrace_gate.bpf.o $V -o $W/s0.ptx 2>/dev/null
$G ptx rewrite --policy $T/memtrace_gate.bpf.o --sample 3 --regs vadd=12 $V -o $W/cap.ptx 2>/dev/null
GX_PTX_MEM_CAP=0 $G ptx rewrite --policy $T/memtrace_gate.bpf.o --sample 3 --regs vadd=12 $V -o $W/nocap.ptx 2>/dev/null
$G ptx rewrite --policy $T/memtrace_gate.bpf.o --sample 1 --regs vadd=12 $V -o $W/s1cap.ptx 2>/dev/null
$G ptx rewrite --policy ${BUILD:-build}/tests/devbpf/progs/jit_count.bpf.o --sample 16 $V -o $W/other.ptx 2>/dev/null

check "1 in 1024: one gate per memory site ($n_mem)" "[ \"\$(gates $W/s1024.ptx)\" = $n_mem ]"
check "1 in 1024: limit 2^32/1024 = 4194304" "[ \"\$(grep -c 'setp.lo.u32.*, 4194304;' $W/s1024.ptx)\" = $n_mem ]"
# the leader's test: election, the non-leaders' branch to the end, %clock,
# the test's branch to the same end, the lane register restored, then the
# context and the call; no vote
check "the leader tests after the election, before the context and the call" \
	"awk '/elect.sync/ { e = NR } /mov.u32.*%clock/ && e && NR == e + 2 { c = NR } /setp.lo.u32.*4194304/ && c { s = NR } /bra/ && s && NR == s + 1 { b++ } /mov.u32.*%laneid/ && s && NR == s + 2 { l++; e = c = s = 0 } END { exit !(b == $n_mem && l == $n_mem) }' $W/s1024.ptx && ! grep -q vote.sync $W/s1024.ptx"
check "the leader's test reads registers only (no memory between %clock and its branch)" \
	"awk '/mov.u32.*%clock/ { g = 1 } g && /(ld|st|atom|red|call)[. \t]/ { bad = 1 } /setp.lo.u32/ { g = 0 } END { exit bad }' $W/s1024.ptx"
check "the leader's test and the non-leaders leave to the same label (before bar.warp.sync)" \
	"awk '/@!%__gx_q bra/ { t[\$NF]++ } END { for (k in t) if (t[k] != 2) exit 1; exit !length(t) }' $W/s1024.ptx"
check "GX_PTX_SAMPLE_EARLY=1: one gate per memory site ($n_mem)" "[ \"\$(gates $W/early.ptx)\" = $n_mem ]"
check "GX_PTX_SAMPLE_EARLY=1: the gate leaves by a uniform branch before the election" \
	"awk '/vote.sync.any.pred/ { v = NR } /bra.uni/ && v && NR == v + 1 { u++ } /elect.sync/ && v && NR > v + 1 { e++; v = 0 } END { exit !(u == $n_mem && e == $n_mem) }' $W/early.ptx"
check "GX_PTX_SAMPLE_EARLY=1: the gate reads registers only (no memory before the election)" \
	"awk '/mov.u32.*%clock/ { g = 1 } g && /(ld|st|atom|red)\\./ { bad = 1 } /elect.sync/ { g = 0 } END { exit bad }' $W/early.ptx"
check "the program's own N (gx_mem_sample = 1024) without --sample" "[ \"\$(grep -c 'setp.lo.u32.*, 4194304;' $W/s0.ptx)\" = $n_mem ]"
check "--sample 1: the full trace, no gate, the handler inlined" "[ \"\$(gates $W/s1.ptx)\" = 0 ] && ! grep -qE '^[[:space:]]+call' $W/s1.ptx && grep -q elect.sync $W/s1.ptx"
check "a mem program without gx_mem_sample is never gated (--sample 16)" "grep -q 'elect.sync' $W/other.ptx && [ \"\$(gates $W/other.ptx)\" = 0 ]"
check "1 in 3: limit 1431655765" "grep -q 'setp.lo.u32.*, 1431655765;' $W/cap.ptx"
check "gated kernel capped at max(32, its registers)" "grep -q '^.maxnreg 32' $W/cap.ptx"
check "GX_PTX_MEM_CAP=0: gated, not capped" "[ \"\$(gates $W/nocap.ptx)\" = $n_mem ] && ! grep -q maxnreg $W/nocap.ptx"
check "no gate (the full trace, the handler called at every access): capped too (a launch the original fits must not fail)" "grep -q '^.maxnreg 32' $W/s1cap.ptx"
# the default memtrace samples in its program (memtrace_gate is the gated
# build, GX_MT_GATE=1 at load): no gate from `gpuext tools rewrite memtrace`
check "gpuext tools rewrite memtrace: no gate (the default program samples itself)" \
	"$G tools rewrite memtrace $V -o $W/tool.ptx && [ \"\$(gates $W/tool.ptx)\" = 0 ]"
check "the gated build with --sample 16: 1 in 16" \
	"$G ptx rewrite --policy $T/memtrace_gate.bpf.o --sample 16 $V -o $W/tool16.ptx 2>/dev/null && grep -q 'setp.lo.u32.*, 268435456;' $W/tool16.ptx"
# GX_PTX_SAMPLE_COUNT=1: a countdown per function, set at its start from a
# geometric draw (lg2.approx), decremented and voted at each site before
# the election; the hash and a new draw only on the sampled path
GX_PTX_SAMPLE_COUNT=1 $G ptx rewrite --policy $T/memtrace_gate.bpf.o --sample 1024 $V -o $W/count.ptx 2>/dev/null
check "GX_PTX_SAMPLE_COUNT=1: one decrement, vote and uniform branch per memory site, before the election" \
	"awk '/sub.u32.*_cn1024, .*_cn1024, 1;/ { d = NR } /setp.eq.u32.*_cn1024, 0;/ && d == NR - 1 { s = NR } /vote.sync.any.pred/ && s && NR == s + 2 { v = NR } /bra.uni/ && v && NR == v + 1 { b = NR } /elect.sync/ && b && NR > b { n++; d = s = v = b = 0 } END { exit n != $n_mem }' $W/count.ptx"
check "GX_PTX_SAMPLE_COUNT=1: the count set once at the function's start (one %smid read, one draw there)" \
	"[ \"\$(grep -c 'mov.u32.*_cs1024, %smid' $W/count.ptx)\" = 1 ] && [ \"\$(grep -c 'lg2.approx.f32' $W/count.ptx)\" = $((n_mem + 1)) ]"
# 1 / log2(1 - 1/1024) as an .f32 immediate
k=$(python3 -c 'import math,struct; print("0f%08X" % struct.unpack("<I", struct.pack("<f", 1 / math.log2(1 - 1 / 1024)))[0])')
check "GX_PTX_SAMPLE_COUNT=1: the gap's scale is 1 / log2(1 - 1/1024) ($k)" "grep -q 'mul.f32.*, $k;' $W/count.ptx"
check "GX_PTX_SAMPLE_COUNT=1: nothing but the countdown between a site's guard and its branch (no %clock, no memory)" \
	"awk '/sub.u32.*_cn1024, .*_cn1024, 1;/ { g = 1 } g && /%clock|^[ \t]*(ld|st|atom|red|call)[. \t]/ { bad = 1 } /bra.uni/ { g = 0 } END { exit bad }' $W/count.ptx"
GX_PTX_SAMPLE_COUNT=1 GX_PTX_MEM_INLINE=0 $G ptx rewrite --policy $T/memtrace_gate.bpf.o --sample 16 $V -o $W/count_call.ptx 2>/dev/null
check "GX_PTX_SAMPLE_COUNT=1 GX_PTX_MEM_INLINE=0: counted, then called by every lane (no leader test left)" \
	"[ \"\$(grep -c 'sub.u32.*_cn16, .*_cn16, 1;' $W/count_call.ptx)\" = $n_mem ] && [ \"\$(grep -cE '^[[:space:]]+call.*\\(__gx_cq, ' $W/count_call.ptx)\" = $n_mem ] && ! grep -q 'setp.lo.and' $W/count_call.ptx"
# memtrace's handler (over the old 160-instruction limit) inlined at every
# memory site: no call, one election and one bar.warp.sync each (GPU run 98:
# the leader's call left warps split; inlined, 626 records for 626 accesses)
$G tools rewrite memtrace $V -o $W/mt_inline.ptx 2>/dev/null
calls() { grep -cE '^[[:space:]]+call' "$1"; }
check "memtrace's handler inlined at each memory site by default, no call, one election and warp sync each" \
	"[ \"\$(calls $W/mt_inline.ptx)\" = 0 ] && [ \"\$(grep -c 'elect.sync' $W/mt_inline.ptx)\" = $n_mem ] && [ \"\$(grep -c 'bar.warp.sync' $W/mt_inline.ptx)\" = $n_mem ]"
# GX_PTX_MEM_INLINE=0 (the old limit): called, by every lane that reached
# the site, the leader flag first; the clone returns at once without it
GX_PTX_MEM_INLINE=0 $G tools rewrite memtrace $V -o $W/mt_all.ptx 2>/dev/null
check "GX_PTX_MEM_INLINE=0: a call at each memory site, no leader branch before it, the flag passed first" \
	"[ \"\$(grep -cE '^[[:space:]]+call.*\\(__gx_cq, ' $W/mt_all.ptx)\" = $n_mem ] && ! grep -q '@!%__gx_q bra' $W/mt_all.ptx && [ \"\$(grep -c 'selp.b32.*%__gx_q;' $W/mt_all.ptx)\" = $n_mem ]"
check "GX_PTX_MEM_INLINE=0: the clone tests the flag before anything else" \
	"awk '/^\\.func .*__gx_hw/ { f = 1; n = 0 } f && /ld.param.b32.*_q\\]/ { a = NR } f && /setp.eq.u32/ && a == NR - 1 { b = NR } f && /@%__gx_q bra/ && b == NR - 1 { ok = 1; f = 0 } END { exit !ok }' $W/mt_all.ptx"
# a gated binding's call made by every lane: the leader's test clears the
# flag (setp.and), no branch; the lane register restored after it
GX_PTX_MEM_INLINE=0 $G ptx rewrite --policy $T/memtrace_gate.bpf.o --sample 1024 $V -o $W/mt_all_gate.ptx 2>/dev/null
check "GX_PTX_MEM_INLINE=0, gated: the test folds into the leader flag, every lane calls, no leader branch" \
	"[ \"\$(gates $W/mt_all_gate.ptx)\" = $n_mem ] && [ \"\$(grep -c 'setp.lo.and.u32.*, 4194304, %__gx_q;' $W/mt_all_gate.ptx)\" = $n_mem ] && [ \"\$(grep -cE '^[[:space:]]+call.*\\(__gx_cq, ' $W/mt_all_gate.ptx)\" = $n_mem ] && ! grep -q '@!%__gx_q bra' $W/mt_all_gate.ptx"
check "GX_PTX_MEM_INLINE=0, gated: the flag is set after the test (selp follows setp.and)" \
	"awk '/setp.lo.and.u32/ { s = NR } /selp.b32.*%__gx_q;/ && s && NR > s { n++; s = 0 } END { exit n != $n_mem }' $W/mt_all_gate.ptx"
# the old form, the leader alone calling (GX_PTX_MEM_CALL_ALL=0)
GX_PTX_MEM_INLINE=0 GX_PTX_MEM_CALL_ALL=0 $G tools rewrite memtrace $V -o $W/mt_call.ptx 2>/dev/null
check "GX_PTX_MEM_INLINE=0 GX_PTX_MEM_CALL_ALL=0: the leader's call (the non-leaders branch past it)" \
	"[ \"\$(calls $W/mt_call.ptx)\" = $n_mem ] && [ \"\$(grep -c '@!%__gx_q bra' $W/mt_call.ptx)\" = $n_mem ] && ! grep -q __gx_cq $W/mt_call.ptx"
# the module's budget (32,768 inlined handler instructions): a kernel of
# 150 stores gets memtrace's handler inlined at the first ones, called by
# every lane at the rest
{
	printf '.version 8.0\n.target sm_90\n.address_size 64\n.visible .entry many(.param .u64 p)\n{\n.reg .b64 %%rd<3>;\n.reg .b32 %%r<2>;\nld.param.u64 %%rd1, [p];\ncvta.to.global.u64 %%rd2, %%rd1;\nmov.u32 %%r1, %%tid.x;\n'
	for i in $(seq 150); do printf 'st.global.u32 [%%rd2+%d], %%r1;\n' $((4 * i)); done
	printf 'ret;\n}\n'
} >$W/many.ptx
$G tools rewrite memtrace $W/many.ptx -o $W/mt_many.ptx 2>/dev/null
check "past the budget: some sites inlined, the rest called by every lane, one election each" \
	"i=\$(grep -c 'bar.warp.sync' $W/mt_many.ptx); c=\$(grep -cE '^[[:space:]]+call.*\\(__gx_cq, ' $W/mt_many.ptx); [ \"\$i\" = 150 ] && [ \"\$c\" -gt 0 ] && [ \"\$c\" -lt 150 ] && [ \"\$(grep -c elect.sync $W/mt_many.ptx)\" = 150 ]"
if [ -x "$PTXAS" ]; then
	for f in s1024 early cap nocap count count_call mt_inline mt_all mt_all_gate mt_call mt_many; do
		check "ptxas accepts $f" "$PTXAS -arch=sm_90 $W/$f.ptx -o $W/$f.cubin"
	done
	check "capped kernel: ptxas keeps 32 registers" "$PTXAS -arch=sm_90 -v $W/cap.ptx -o /dev/null 2>&1 | grep -A3 \"entry function 'vadd'\" | grep -q 'Used 32 registers'"
else
	echo "ok - ptxas checks skipped: no $PTXAS"
fi
