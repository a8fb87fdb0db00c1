#!/usr/bin/env bash
# GX_PTX_MEM_DEFER=1 (ptx-rewrite/site_defer.c): a sampled memory site in a
# loop keeps its sample in a per-lane buffer of 8 (address, stamp, info; a
# full buffer counts what it cannot keep, reported at the flush as one
# GDEV_MEM_LOST call) and the handler is called for each where the loop is
# left and before each ret, so the loop's body has the countdown and a few
# predicated stores but no branch, no call and no vote (GPU run 129: a
# branch there keeps ptxas from overlapping an unrolled loop's loads). On
# defer/loops.ptx (memtrace, 1 in 16): the sites of loops A and B deferred,
# the store before the loops and loop C's load (a ret inside C) gated as
# before; nothing but the back edge branches in A's or B's body; a flush
# after each way out of them and before each ret, handing the samples over
# one call each (the lanes holding the same stamp together) and making the
# countdown and its generator the warp's again; the pending lanes zeroed at
# the start; a store the kernel predicates counted by the lanes making it;
# a function with an indirect branch not deferred; nothing
# changes without the switch; ptxas accepts what is made.
set -u
G=${BUILD:-build}/bin/gpuext
W=${BUILD:-build}/ptx-sample
T=${BUILD:-build}/share/gpuext/tools
PTXAS=${PTXAS:-/usr/local/cuda/bin/ptxas}
IN=tests/ptx-rewrite/defer/loops.ptx
mkdir -p "$W"
check() { if eval "$2" >/dev/null 2>&1; then echo "ok - mem defer: $1"; else echo "not ok - mem defer: $1: $2"; fi; }
MT=$T/memtrace.bpf.o
$G ptx rewrite --policy $MT --sample 16 $IN -o $W/defer0.ptx 2>/dev/null
GX_PTX_MEM_DEFER=1 $G ptx rewrite --policy $MT --sample 16 $IN -o $W/defer1.ptx 2>/dev/null
D=$W/defer1.ptx
# the body of one kernel (its .entry line to the next)
kernel() { awk -v k="$1" '/^\.visible \.entry/ { on = index($0, k "(") > 0 } on' "$2"; }
kernel loops $D >$W/defer1.loops
kernel jump $D >$W/defer1.jump
kernel guarded $D >$W/defer1.guarded
calls() { grep -cE '^[[:space:]]+call.*\(__gx_cq, ' "$1"; }
# lines from the label START to the branch back to it: no call among them
no_call_in() { awk -v s="$1:" -v b="$1;" '$1 == s { on = 1 } on && /^[ \t]+call/ { bad = 1 } on && /bra/ && index($0, b) { on = 0; seen = 1 } END { exit bad || !seen }' "$2"; }
call_in() { ! no_call_in "$@" && awk -v s="$1:" '$1 == s { f = 1 } END { exit !f }' "$2"; }
# the first instruction after label L is a flush (its loop's test of the pending lanes)
flush_after() { awk -v s="$1:" '$1 == s { on = 1; next } on && /^[ \t]*(\{|\.reg|\.param|\$__gx_Lf[0-9]+:)/ { next } on { exit !/setp.ne.u32[ \t]+%__gx_q, %__gx_dpn, 0;/ }' "$2"; }
# lines from the label START to the branch back to it: no branch of ours
no_branch_in() { awk -v s="$1:" -v b="$1;" '$1 == s { on = 1; next } on && /bra/ && index($0, b) { on = 0; seen = 1; next } on && /bra/ && /__gx/ { bad = 1 } END { exit bad || !seen }' "$2"; }
# lines from the label START to the branch back to it: no vote among them
no_vote_in() { awk -v s="$1:" -v b="$1;" '$1 == s { on = 1 } on && /vote|activemask/ && !/@!%__gx_q bra/ { v = 1 } on && /bra/ && index($0, b) { on = 0; seen = 1 } END { exit !seen }' "$2" && ! awk -v s="$1:" -v b="$1;" '$1 == s { on = 1 } on && /bra/ && index($0, b) { exit } on && /vote\.sync/ { f = 1 } END { exit !f }' "$2"; }

check "without the switch: nothing kept (no pending registers)" "! grep -q __gx_dpl $W/defer0.ptx"
check "loops A and B: their 2 sites keep the sample in the next slot (address, stamp, info), predicated, none when 8 are kept" \
	"[ \"\$(grep -c 'st.local.u64[[:space:]]*\\[%__gx_x\\], %__gx_a;' $W/defer1.loops)\" = 2 ] && [ \"\$(grep -c 'add.u32[[:space:]]*%__gx_dpn, %__gx_dpn, 1;' $W/defer1.loops)\" = 2 ] && [ \"\$(grep -c 'setp.lt.and.u32[[:space:]]*%__gx_q, %__gx_dpn, 8, %__gx_q;' $W/defer1.loops)\" = 2 ] && [ \"\$(grep -c '@%__gx_q st.local' $W/defer1.loops)\" = 6 ]"
check "loop A's body (a load): the countdown, no branch of ours, no call, no vote" "no_call_in '\$L_a' $W/defer1.loops && no_vote_in '\$L_a' $W/defer1.loops && no_branch_in '\$L_a' $W/defer1.loops && awk '\$1 == \"\$L_a:\" { on = 1 } on && /sub.u32.*_cn16, .*_cn16, 1;/ { n++ } on && /bra/ && index(\$0, \"\$L_a;\") { exit n != 1 }' $W/defer1.loops"
check "loops A and B: a sampled access's next gap from the generator (under the predicate), its word the stamp" \
	"[ \"\$(grep -c '@%__gx_q mad.lo.u32[[:space:]]*%__gx_cx16, %__gx_cx16, 1664525, 1013904223;' $W/defer1.loops)\" = 2 ] && [ \"\$(grep -c '@%__gx_q mul.hi.u32[[:space:]]*%__gx_cn16, %__gx_cx16, 31;' $W/defer1.loops)\" = 2 ] && [ \"\$(grep -c '@%__gx_q st.local.u32[[:space:]]*\\[%__gx_x+8\\], %__gx_cx16;' $W/defer1.loops)\" = 2 ]"
check "loop B's body (a store): no branch of ours, no call, no vote" "no_call_in '\$L_b' $W/defer1.loops && no_vote_in '\$L_b' $W/defer1.loops && no_branch_in '\$L_b' $W/defer1.loops"
check "loop C (a ret inside): its load gated and called as without the switch" "call_in '\$L_c' $W/defer1.loops"
check "the store before the loops: gated and called as without the switch" \
	"awk '/st.global.u32.*%r2;/ { exit !c } /call.*\\(__gx_cq, / { c = 1 }' $W/defer1.loops"
check "a flush where loop A is left (after \$L_b_pre) and where loop B is (after \$L_c_pre)" \
	"flush_after '\$L_b_pre' $W/defer1.loops && flush_after '\$L_c_pre' $W/defer1.loops"
check "a flush before each of the 2 rets (the sample never left pending)" \
	"awk '/setp.ne.u32[ \\t]+%__gx_q, %__gx_dpn, 0;/ { f = 1 } /^[ \\t]*(@%p[0-9]+ )?ret;/ { n++; ok += f; f = 0 } END { exit !(n == 2 && ok == 2) }' $W/defer1.loops"
check "4 flushes, each a loop: the lanes with samples left voted, the lowest leads, the lanes with its stamp are its lanes and take it off (emptied: back to slot 0), the call, back; empty at the start" \
	"[ \"\$(grep -c 'vote.sync.ballot.b32[[:space:]]*%__gx_t, %__gx_q, %__gx_m;' $W/defer1.loops)\" = 4 ] && [ \"\$(grep -c 'vote.sync.ballot.b32[[:space:]]*%__gx_dpl, %__gx_dq, %__gx_m;' $W/defer1.loops)\" = 4 ] && [ \"\$(grep -c '^[[:space:]]*mov.u32[[:space:]]*%__gx_dpn, 0;' $W/defer1.loops)\" = 1 ] && [ \"\$(grep -c '@%__gx_dq mov.u32[[:space:]]*%__gx_dpn, 0;' $W/defer1.loops)\" = 4 ] && awk '/vote.sync.ballot.b32[ \\t]+%__gx_t/ { v = NR } /shfl.sync.idx.b32[ \\t]+%__gx_t, %__gx_dpl, %__gx_l, 31, %__gx_m;/ && v { s = NR } /popc.b32[ \\t]+%__gx_dpl, %__gx_dpl;/ && s { p = NR } /@%__gx_dq add.u32[ \\t]+%__gx_dfi, %__gx_dfi, 1;/ && p { a = NR } /call.*\\(__gx_cq, / && a { c = NR } /bra.uni[ \\t]+\\\$__gx_Lf/ && c && NR == c + 1 { n++; v = s = p = a = c = 0 } END { exit n != 4 }' $W/defer1.loops"
check "loops A and B: a sample taken with the 8 slots full is counted" \
	"[ \"\$(grep -c 'setp.ge.and.u32[[:space:]]*%__gx_dr, %__gx_dpn, 8, %__gx_q;' $W/defer1.loops)\" = 2 ] && [ \"\$(grep -c '@%__gx_dr add.u32[[:space:]]*%__gx_dd, %__gx_dd, 1;' $W/defer1.loops)\" = 2 ]"
check "each flush reports the lost samples: a lane with none kept but some lost leads one GDEV_MEM_LOST call (op 5, their count as size), then its count is 0" \
	"[ \"\$(grep -c 'setp.ne.or.u32[[:space:]]*%__gx_q, %__gx_dd, 0, %__gx_q;' $W/defer1.loops)\" = 4 ] && [ \"\$(grep -c '@%__gx_dr min.u32[[:space:]]*%__gx_dpi, %__gx_dd, 65535;' $W/defer1.loops)\" = 4 ] && [ \"\$(grep -c '@%__gx_dr or.b32[[:space:]]*%__gx_dpi, %__gx_dpi, 327680;' $W/defer1.loops)\" = 4 ] && [ \"\$(grep -c '@%__gx_dr mov.u32[[:space:]]*%__gx_dd, 0;' $W/defer1.loops)\" = 4 ]"
check "after each flush the countdown and its generator are the warp's again (the lowest lane's)" \
	"[ \"\$(grep -c 'shfl.sync.idx.b32[[:space:]]*%__gx_cn16, %__gx_cn16, %__gx_l, 31, %__gx_m;' $W/defer1.loops)\" = 4 ] && [ \"\$(grep -c 'shfl.sync.idx.b32[[:space:]]*%__gx_cx16, %__gx_cx16, %__gx_l, 31, %__gx_m;' $W/defer1.loops)\" = 4 ]"
check "the flush reads each slot back and passes its address, lanes and info to the handler" \
	"grep -q 'ld.local.u64[[:space:]]*%__gx_dpa, \\[%__gx_x\\];' $W/defer1.loops && grep -q 'mov.b64[[:space:]]*{%__gx_w4, %__gx_w5}, %__gx_dpa;' $W/defer1.loops && grep -q 'mov.b32[[:space:]]*%__gx_w10, %__gx_dpl;' $W/defer1.loops && grep -q 'st.param.b32[[:space:]]*\\[__gx_ci\\], %__gx_dpi;' $W/defer1.loops"
check "calls: 2 plain sites + 4 flushes in loops, jump's site plain" \
	"[ \"\$(calls $W/defer1.loops)\" = 6 ] && [ \"\$(calls $W/defer1.jump)\" = 1 ]"
check "a store the kernel predicates: counted and kept only by the lanes that make it, still no branch of ours" \
	"grep -q '@%p1 sub.u32[[:space:]]*%__gx_cn16, %__gx_cn16, 1;' $W/defer1.guarded && grep -q 'setp.eq.and.u32[[:space:]]*%__gx_q, %__gx_cn16, 0, %p1;' $W/defer1.guarded && no_branch_in '\$L_g' $W/defer1.guarded"
check "a function with an indirect branch: no loop followed, nothing kept" "! grep -q __gx_dpl $W/defer1.jump"
if [ -x "$PTXAS" ]; then
	check "ptxas accepts the module with and without the switch" \
		"$PTXAS -arch=sm_90 $W/defer1.ptx -o $W/defer1.cubin && $PTXAS -arch=sm_90 $W/defer0.ptx -o $W/defer0.cubin"
else
	echo "ok - mem defer: ptxas checks skipped: no $PTXAS"
fi
