#!/usr/bin/env bash
# The sample gate of memory sites (ptx-rewrite/site_sample.c): a program that
# declares gx_mem_sample (memtrace: 1024) gets at each mem site, before the
# election, a countdown of geometric gaps (decrement, vote, uniform branch;
# the count drawn once at the function's start and again when sampled), and
# its handler, too large for the small limit, called by every lane with the
# leader flag first; GX_PTX_SAMPLE_LEADER=1 the leader's hash test after
# the election (2^32/N), GX_PTX_SAMPLE_EARLY=1 a voted hash before it;
# --sample N (opts.mem_sample) replaces its N, 1 = the full trace, no gate;
# a mem program without the variable is never gated; the register cap of
# kernels with gated sites (--regs, GX_PTX_MEM_CAP=0). An unsampled large
# handler (memtrace_prog) is inlined at every memory site (GPU run 98: the
# leader's call split warps), past the module's budget called by every
# lane; GX_PTX_MEM_INLINE=0 and GX_PTX_MEM_CALL_ALL=0 for the old forms.
# ptxas accepts what is made.
set -u
G=${BUILD:-build}/bin/gpuext
W=${BUILD:-build}/ptx-sample
T=${BUILD:-build}/share/gpuext/tools
PTXAS=${PTXAS:-/usr/local/cuda/bin/ptxas}
V=tests/ptx-rewrite/golden-passes/vadd.ptx
mkdir -p "$W"
check() { if eval "$2" >/dev/null 2>&1; then echo "ok - $1"; else echo "not ok - $1: $2"; fi; }
n_mem=$(grep -cE '^[[:space:]]+(ld|st)\.global' $V)
hashes() { grep -c 'mov.u32.*%clock' "$1"; }
# a countdown gate per site: its decrement
gates() { grep -cE 'sub.u32[[:space:]]+%__gx_cn[0-9]+, %__gx_cn[0-9]+, 1;' "$1"; }
calls() { grep -cE '^[[:space:]]+call' "$1"; }
calls_all() { grep -cE '^[[:space:]]+call.*\(__gx_cq, ' "$1"; }
# the scale of a gap of mean N, 1 / log2(1 - 1/N), as an .f32 immediate
scale() { python3 -c 'import math,struct,sys; n=int(sys.argv[1]); print("0f%08X" % struct.unpack("<I", struct.pack("<f", 1 / math.log2(1 - 1 / n)))[0])' "$1"; }
MT=$T/memtrace.bpf.o MP=$T/memtrace_prog.bpf.o

$G ptx rewrite --policy $MT --sample 1024 $V -o $W/s1024.ptx 2>/dev/null
GX_PTX_SAMPLE_LEADER=1 GX_PTX_SAMPLE_INLINE=1 $G ptx rewrite --policy $MT --sample 1024 $V -o $W/leader.ptx 2>/dev/null
GX_PTX_SAMPLE_LEADER=1 $G ptx rewrite --policy $MT --sample 1024 $V -o $W/leader_all.ptx 2>/dev/null
GX_PTX_SAMPLE_EARLY=1 $G ptx rewrite --policy $MT --sample 1024 $V -o $W/early.ptx 2>/dev/null
$G ptx rewrite --policy $MT --sample 1 $V -o $W/s1.ptx 2>/dev/null
$G ptx rewrite --policy $MT $V -o $W/s0.ptx 2>/dev/null
$G ptx rewrite --policy $MT --sample 3 --regs vadd=12 $V -o $W/cap.ptx 2>/dev/null
GX_PTX_MEM_CAP=0 $G ptx rewrite --policy $MT --sample 3 --regs vadd=12 $V -o $W/nocap.ptx 2>/dev/null
GX_PTX_MEM_CAP=+8 $G ptx rewrite --policy $MT --sample 3 --regs vadd=30 $V -o $W/slack.ptx 2>/dev/null
$G ptx rewrite --policy $MT --sample 3 --regs vadd=30 $V -o $W/cap30.ptx 2>/dev/null
$G ptx rewrite --policy $MT --sample 1 --regs vadd=12 $V -o $W/s1cap.ptx 2>/dev/null
$G ptx rewrite --policy ${BUILD:-build}/tests/devbpf/progs/jit_count.bpf.o --sample 16 $V -o $W/other.ptx 2>/dev/null

# the countdown (the default)
check "1 in 1024: a countdown at each memory site ($n_mem), no hash on its path" \
	"[ \"\$(gates $W/s1024.ptx)\" = $n_mem ] && ! grep -q 'setp.lo.u32' $W/s1024.ptx"
check "1 in 1024: decrement, zero test, vote and uniform branch, then the election" \
	"awk '/sub.u32.*_cn1024, .*_cn1024, 1;/ { d = NR } /setp.eq.u32.*_cn1024, 0;/ && d == NR - 1 { s = NR } /vote.sync.any.pred/ && s && NR == s + 2 { v = NR } /bra.uni/ && v && NR == v + 1 { b = NR } /elect.sync/ && b && NR > b { n++; d = s = v = b = 0 } END { exit n != $n_mem }' $W/s1024.ptx"
check "1 in 1024: the count drawn once at the function's start (one %smid read; one draw there and one per site)" \
	"[ \"\$(grep -c 'mov.u32.*_cs1024, %smid' $W/s1024.ptx)\" = 1 ] && [ \"\$(grep -c 'lg2.approx.f32' $W/s1024.ptx)\" = $((n_mem + 1)) ]"
k=$(scale 1024)
check "1 in 1024: a gap's scale is 1 / log2(1 - 1/1024) ($k)" "[ \"\$(grep -c 'mul.f32.*, $k;' $W/s1024.ptx)\" = $((n_mem + 1)) ]"
check "1 in 1024: nothing but the countdown before a site's branch (no %clock, no memory)" \
	"awk '/sub.u32.*_cn1024, .*_cn1024, 1;/ { g = 1 } g && /%clock|^[ \t]*(ld|st|atom|red|call)[. \t]/ { bad = 1 } /bra.uni/ { g = 0 } END { exit bad }' $W/s1024.ptx"
check "1 in 1024: the sampled handler called by every lane, the leader flag first, no leader branch" \
	"[ \"\$(calls_all $W/s1024.ptx)\" = $n_mem ] && ! grep -qE '@!%__gx_q bra[[:space:]]' $W/s1024.ptx && ! grep -q 'setp.lo.and' $W/s1024.ptx"
check "the program's own N (gx_mem_sample = 1024) without --sample" "[ \"\$(grep -c 'sub.u32.*_cn1024, .*_cn1024, 1;' $W/s0.ptx)\" = $n_mem ]"
k3=$(scale 3)
check "1 in 3: a gap's scale 1 / log2(2/3) ($k3)" "[ \"\$(gates $W/cap.ptx)\" = $n_mem ] && grep -q 'mul.f32.*, $k3;' $W/cap.ptx"
check "--sample 1: the full trace, no gate, the handler inlined" "[ \"\$(gates $W/s1.ptx)\" = 0 ] && [ \"\$(hashes $W/s1.ptx)\" = 0 ] && [ \"\$(calls $W/s1.ptx)\" = 0 ] && grep -q elect.sync $W/s1.ptx"
check "a mem program without gx_mem_sample is never gated (--sample 16)" "grep -q 'elect.sync' $W/other.ptx && [ \"\$(gates $W/other.ptx)\" = 0 ] && [ \"\$(hashes $W/other.ptx)\" = 0 ]"
check "gated kernel capped at max(32, its registers)" "grep -q '^.maxnreg 32' $W/cap.ptx"
check "GX_PTX_MEM_CAP=0: gated, not capped" "[ \"\$(gates $W/nocap.ptx)\" = $n_mem ] && ! grep -q maxnreg $W/nocap.ptx"
check "GX_PTX_MEM_CAP=+8: 30 registers measured, capped at 40 (32 without it)" \
	"[ \"\$(gates $W/slack.ptx)\" = $n_mem ] && grep -q '^.maxnreg 40' $W/slack.ptx && grep -q '^.maxnreg 32' $W/cap30.ptx"
check "no gate (the full trace, the handler at every access): capped too (a launch the original fits must not fail)" "grep -q '^.maxnreg 32' $W/s1cap.ptx"
# GX_PTX_SAMPLE_LEADER=1 (sessions 25-26's gate) with the handler inlined
# (GX_PTX_SAMPLE_INLINE=1): election, the non-leaders' branch to the end,
# %clock, the test's branch to the same end, the lane register restored,
# then the context; no vote
check "GX_PTX_SAMPLE_LEADER=1: one hash test per memory site, limit 2^32/1024 = 4194304" \
	"[ \"\$(hashes $W/leader.ptx)\" = $n_mem ] && [ \"\$(grep -c 'setp.lo.u32.*, 4194304;' $W/leader.ptx)\" = $n_mem ] && [ \"\$(gates $W/leader.ptx)\" = 0 ]"
check "GX_PTX_SAMPLE_LEADER=1: the leader tests after the election, before the context" \
	"awk '/elect.sync/ { e = NR } /mov.u32.*%clock/ && e && NR == e + 2 { c = NR } /setp.lo.u32.*4194304/ && c { s = NR } /bra/ && s && NR == s + 1 { b++ } /mov.u32.*%laneid/ && s && NR == s + 2 { l++; e = c = s = 0 } END { exit !(b == $n_mem && l == $n_mem) }' $W/leader.ptx && ! grep -q vote.sync $W/leader.ptx"
check "GX_PTX_SAMPLE_LEADER=1: the leader's test reads registers only (no memory between %clock and its branch)" \
	"awk '/mov.u32.*%clock/ { g = 1 } g && /^[ \t]*(ld|st|atom|red|call)[. \t]/ { bad = 1 } /setp.lo.u32/ { g = 0 } END { exit bad }' $W/leader.ptx"
check "GX_PTX_SAMPLE_LEADER=1: the leader's test and the non-leaders leave to the same label (before bar.warp.sync)" \
	"awk '/@!%__gx_q bra/ { t[\$NF]++ } END { for (k in t) if (t[k] != 2) exit 1; exit !length(t) }' $W/leader.ptx"
# called by every lane (the default for a large sampled handler): the
# leader's test folds into the leader flag (setp.and), no branch
check "GX_PTX_SAMPLE_LEADER=1, called: the test folds into the leader flag, every lane calls, no leader branch" \
	"[ \"\$(hashes $W/leader_all.ptx)\" = $n_mem ] && [ \"\$(grep -c 'setp.lo.and.u32.*, 4194304, %__gx_q;' $W/leader_all.ptx)\" = $n_mem ] && [ \"\$(calls_all $W/leader_all.ptx)\" = $n_mem ] && ! grep -q '@!%__gx_q bra' $W/leader_all.ptx"
check "GX_PTX_SAMPLE_LEADER=1, called: the flag is set after the test (selp follows setp.and)" \
	"awk '/setp.lo.and.u32/ { s = NR } /selp.b32.*%__gx_q;/ && s && NR > s { n++; s = 0 } END { exit n != $n_mem }' $W/leader_all.ptx"
check "GX_PTX_SAMPLE_EARLY=1: one voted hash per memory site ($n_mem)" "[ \"\$(hashes $W/early.ptx)\" = $n_mem ] && [ \"\$(gates $W/early.ptx)\" = 0 ]"
check "GX_PTX_SAMPLE_EARLY=1: the gate leaves by a uniform branch before the election" \
	"awk '/vote.sync.any.pred/ { v = NR } /bra.uni/ && v && NR == v + 1 { u++ } /elect.sync/ && v && NR > v + 1 { e++; v = 0 } END { exit !(u == $n_mem && e == $n_mem) }' $W/early.ptx"
check "GX_PTX_SAMPLE_EARLY=1: the gate reads registers only (no memory before the election)" \
	"awk '/mov.u32.*%clock/ { g = 1 } g && /^[ \t]*(ld|st|atom|red)\\./ { bad = 1 } /elect.sync/ { g = 0 } END { exit bad }' $W/early.ptx"
# the tool by name: memtrace is the gated program; GX_MT_GATE=0 picks the
# shim's memtrace_prog, which `tools rewrite memtrace_prog` names directly
check "gpuext tools rewrite memtrace: counted 1 in 1024 (the default memtrace is the gated program)" \
	"$G tools rewrite memtrace $V -o $W/tool.ptx && [ \"\$(grep -c 'sub.u32.*_cn1024, .*_cn1024, 1;' $W/tool.ptx)\" = $n_mem ]"
check "gpuext tools rewrite memtrace --sample 16: 1 in 16" \
	"$G tools rewrite memtrace --sample 16 $V -o $W/tool16.ptx 2>/dev/null && grep -q 'mul.f32.*, $(scale 16);' $W/tool16.ptx"
check "memtrace_prog (the program samples itself): no gate" \
	"$G ptx rewrite --policy $MP $V -o $W/prog.ptx && [ \"\$(gates $W/prog.ptx)\" = 0 ] && [ \"\$(hashes $W/prog.ptx)\" = 0 ]"
# memtrace's handler (over the old 160-instruction limit) inlined at every
# memory site: no call, one election and one bar.warp.sync each (GPU run 98:
# the leader's call left warps split; inlined, 626 records for 626 accesses)
$G ptx rewrite --policy $MP $V -o $W/mt_inline.ptx 2>/dev/null
check "memtrace_prog's handler inlined at each memory site by default, no call, one election and warp sync each" \
	"[ \"\$(calls $W/mt_inline.ptx)\" = 0 ] && [ \"\$(grep -c 'elect.sync' $W/mt_inline.ptx)\" = $n_mem ] && [ \"\$(grep -c 'bar.warp.sync' $W/mt_inline.ptx)\" = $n_mem ]"
# GX_PTX_MEM_INLINE=0 (the old limit): called, by every lane that reached
# the site, the leader flag first; the clone returns at once without it
GX_PTX_MEM_INLINE=0 $G ptx rewrite --policy $MP $V -o $W/mt_all.ptx 2>/dev/null
check "GX_PTX_MEM_INLINE=0: a call at each memory site, no leader branch before it, the flag passed first" \
	"[ \"\$(grep -cE '^[[:space:]]+call.*\\(__gx_cq, ' $W/mt_all.ptx)\" = $n_mem ] && ! grep -q '@!%__gx_q bra' $W/mt_all.ptx && [ \"\$(grep -c 'selp.b32.*%__gx_q;' $W/mt_all.ptx)\" = $n_mem ]"
check "GX_PTX_MEM_INLINE=0: the clone tests the flag before anything else" \
	"awk '/^\\.func .*__gx_hw/ { f = 1; n = 0 } f && /ld.param.b32.*_q\\]/ { a = NR } f && /setp.eq.u32/ && a == NR - 1 { b = NR } f && /@%__gx_q bra/ && b == NR - 1 { ok = 1; f = 0 } END { exit !ok }' $W/mt_all.ptx"
# the old form, the leader alone calling (GX_PTX_MEM_CALL_ALL=0)
GX_PTX_MEM_INLINE=0 GX_PTX_MEM_CALL_ALL=0 $G ptx rewrite --policy $MP $V -o $W/mt_call.ptx 2>/dev/null
check "GX_PTX_MEM_INLINE=0 GX_PTX_MEM_CALL_ALL=0: the leader's call (the non-leaders branch past it)" \
	"[ \"\$(calls $W/mt_call.ptx)\" = $n_mem ] && [ \"\$(grep -c '@!%__gx_q bra' $W/mt_call.ptx)\" = $n_mem ] && ! grep -q __gx_cq $W/mt_call.ptx"
# the module's budget (32,768 inlined handler instructions): a kernel of
# 150 stores gets memtrace_prog's handler inlined at the first ones, called by
# every lane at the rest
{
	printf '.version 8.0\n.target sm_90\n.address_size 64\n.visible .entry many(.param .u64 p)\n{\n.reg .b64 %%rd<3>;\n.reg .b32 %%r<2>;\nld.param.u64 %%rd1, [p];\ncvta.to.global.u64 %%rd2, %%rd1;\nmov.u32 %%r1, %%tid.x;\n'
	for i in $(seq 150); do printf 'st.global.u32 [%%rd2+%d], %%r1;\n' $((4 * i)); done
	printf 'ret;\n}\n'
} >$W/many.ptx
$G ptx rewrite --policy $MP $W/many.ptx -o $W/mt_many.ptx 2>/dev/null
check "past the budget: some sites inlined, the rest called by every lane, one election each" \
	"i=\$(grep -c 'bar.warp.sync' $W/mt_many.ptx); c=\$(grep -cE '^[[:space:]]+call.*\\(__gx_cq, ' $W/mt_many.ptx); [ \"\$i\" = 150 ] && [ \"\$c\" -gt 0 ] && [ \"\$c\" -lt 150 ] && [ \"\$(grep -c elect.sync $W/mt_many.ptx)\" = 150 ]"
if [ -x "$PTXAS" ]; then
	for f in s1024 leader leader_all early cap nocap mt_inline mt_all mt_call mt_many; do
		check "ptxas accepts $f" "$PTXAS -arch=sm_90 $W/$f.ptx -o $W/$f.cubin"
	done
	check "capped kernel: ptxas keeps 32 registers" "$PTXAS -arch=sm_90 -v $W/cap.ptx -o /dev/null 2>&1 | grep -A3 \"entry function 'vadd'\" | grep -q 'Used 32 registers'"
else
	echo "ok - ptxas checks skipped: no $PTXAS"
fi
