#!/usr/bin/env bash
# Hook sites and handlers (ptx-rewrite/site.c, handler.c, inline.c) through the
# CLI, on tests/ptx-rewrite/golden-passes/vadd.ptx (sm_90: elect.sync) and edge.ptx:
#  - built-in handlers: elide leaves no site, call/probe/probe-call have the
#    shapes they promise;
#  - policies (tests/ptx-rewrite/sites/): one reading two context fields and the
#    devbpf JIT's own tool programs are inlined (no call, only the words they
#    read are computed); one whose context pointer escapes into a helper is
#    called with every word stored in the thread's own .local context;
#  - divergence safety: no hook site of entry/exit/mem/fence uses a context
#    shared between lanes (no __gx_ctxbuf, no global context slot), so two
#    lane groups of a warp cannot overwrite each other's context;
#  - every output is accepted by ptxas.
set -u
BUILD=${BUILD:-build}
PTXAS=${PTXAS:-/usr/local/cuda/bin/ptxas}
G=$BUILD/bin/gpuext
S=tests/ptx-rewrite/sites
W=$BUILD/ptx-sites
APP=tests/ptx-rewrite/golden-passes/vadd.ptx
mkdir -p "$W"

ok() { echo "ok - sites: $*"; }
nok() { echo "not ok - sites: $*"; }
check() { # NAME COMMAND...
	local n=$1
	shift
	if "$@" >/dev/null 2>&1; then ok "$n"; else nok "$n"; fi
}
count() { grep -c -- "$1" "$2"; }
[ -x "$G" ] || { nok "$G not built"; exit 1; }

# rw NAME ARGS...: rewrite APP (or --app FILE) into $W/NAME.ptx, log in NAME.log
rw() {
	local n=$1 app=$APP
	shift
	if [ "$1" = --app ]; then app=$2; shift 2; fi
	if ! $G ptx rewrite "$@" "$app" -o "$W/$n.ptx" 2>"$W/$n.log"; then
		nok "$n: rewrite failed: $(tail -1 "$W/$n.log")"
		return 1
	fi
	if "$PTXAS" -arch=sm_90 -v "$W/$n.ptx" -o /dev/null >"$W/$n.v" 2>&1; then
		ok "$n: ptxas sm_90"
	else
		nok "$n: ptxas: $(grep -m1 -i error "$W/$n.v")"
		return 1
	fi
}
no_shared_ctx() { # NAME: no per-warp context slot anywhere
	if grep -q '__gx_ctxbuf\|__gx_tramp' "$W/$1.ptx"; then
		nok "$1: a site uses a context shared by the warp"
	else
		ok "$1: no context shared between lane groups"
	fi
}

# entry_prefix NAME: the opcodes of the first kernel's statements before its
# first site (`{` at the body's level), one per line.
entry_prefix() {
	awk '/^\.visible \.entry/{e=1} e&&/^{/{b=1;next} b&&/^\t\{/{exit} b&&/^\t[a-z@]/{split($1,a,".");print a[1]}' "$W/$1.ptx"
}

# Built-in handlers.
if rw elide --hooks all; then
	check "elide: no site code" test "$(count activemask "$W/elide.ptx")" = 0
	check "elide: logged" grep -q 'sites of the empty built-in handler compiled away' "$W/elide.log"
fi
if rw call --hooks entry,exit --stubs call; then
	check "call: elect.sync and a call per site" \
		test "$(count 'elect.sync' "$W/call.ptx")" = 2 -a "$(count 'call.*__gx_stub_' "$W/call.ptx")" = 2
	check "call: no trampoline" test "$(count '__gx_tramp' "$W/call.ptx")" = 0
	check "call: a called entry handler is the kernel's first statement" test -z "$(entry_prefix call)"
	no_shared_ctx call
fi
if rw probe --hooks all --stubs probe; then
	check "probe: inlined (no call)" test "$(count 'call' "$W/probe.ptx")" = 0
	check "probe: reads the special registers" grep -q '%smid' "$W/probe.ptx"
	check "probe: the probe's own store is not hooked" \
		test "$(count 'mov.b64	%__gx_a, %rd' "$W/probe.ptx")" = 3
	no_shared_ctx probe
fi
if rw probe-call --hooks all --stubs probe-call; then
	# called through a clone taking the words it reads as parameters: no
	# .local context. Of words 0-28, the clone computes the 16 read from
	# special registers (12-27: the leader's own) and takes size, op and
	# space packed in one parameter: 10 word parameters and the info
	# (before: 29 parameters, 29 st.param per site)
	nsites=$(count 'call.*__gx_hw[0-9]*,' "$W/probe-call.ptx")
	check "probe-call: called through its word-parameter clone at every site ($nsites)" \
		test "$nsites" -gt 0 -a "$(count 'call.*__gx_probe,' "$W/probe-call.ptx")" = 0
	check "probe-call: no .local context" test "$(count '__gx_lctx' "$W/probe-call.ptx")" = 0
	check "probe-call: one clone, 10 word parameters read, the info unpacked" \
		test "$(count '^\.func .* __gx_hw' "$W/probe-call.ptx")" = 1 -a \
		"$(count 'ld.param.b32	%__gx_w' "$W/probe-call.ptx")" = 10 -a \
		"$(count 'bfe.u32	%__gx_w7, %__gx_t, 16, 8;' "$W/probe-call.ptx")" = 1
	check "probe-call: the clone reads the leader's special registers itself (%smid, %laneid, %ctaid.x, %ntid.z)" \
		awk '/^\.func .* __gx_hw/ { f = 1 } f && /mov.u32	%__gx_w24, %smid;/ { a = 1 } f && /mov.u32	%__gx_w26, %laneid;/ { b = 1 } f && /mov.u32	%__gx_w12, %ctaid.x;/ { c = 1 } f && /mov.u32	%__gx_w23, %ntid.z;/ { d = 1 } END { exit !(a && b && c && d) }' "$W/probe-call.ptx"
	check "probe-call: the other words passed (10 and the packed info per site)" \
		test "$(count 'st.param.b32	\[__gx_cw' "$W/probe-call.ptx")" = "$((10 * nsites))" -a \
		"$(count 'st.param.b32	\[__gx_ci' "$W/probe-call.ptx")" = "$nsites"
	no_shared_ctx probe-call
fi
rw edge-probe --app tests/ptx-rewrite/golden-passes/edge.ptx --hooks all --stubs probe &&
	no_shared_ctx edge-probe
rw edge-call --app tests/ptx-rewrite/golden-passes/edge.ptx --hooks all --persistent --stubs probe-call

# A policy reading `hook` and `smid`: inlined, only those words computed.
if rw ctx --policy-ptx $S/ctx_policy.ptx --bind entry:gx_bench_ctx --bind exit:gx_bench_ctx; then
	check "ctx policy: inlined" test "$(count 'call' "$W/ctx.ptx")" = 0
	check "ctx policy: only the words it reads (hook, smid) are computed" \
		test "$(grep -o '%__gx_w[0-9][0-9]*' "$W/ctx.ptx" | sort -u | tr '\n' ' ')" = "%__gx_w11 %__gx_w24 "
	check "ctx policy: its effect is kept" test "$(count 'red.global.add.u32	\[%__gx_h' "$W/ctx.ptx")" = 2
	check "ctx policy (every warp runs it): inlined entry site after the kernel's parameter and special-register reads (4 ld.param, 3 mov), before its arithmetic" \
		test "$(entry_prefix ctx | tr '\n' ' ')" = "ld ld ld ld mov mov mov "
	no_shared_ctx ctx
fi
if GX_PTX_ENTRY_TOP=1 rw ctx-top --policy-ptx $S/ctx_policy.ptx --bind entry:gx_bench_ctx; then
	check "ctx policy, GX_PTX_ENTRY_TOP=1: entry site first" test -z "$(entry_prefix ctx-top)"
fi
# Early exits on warp-uniform words run before the election as uniform
# branches; a test of the leader's own thread index does not.
if rw uni --policy-ptx $S/uniform_policy.ptx --bind entry:gx_uni --bind exit:gx_uni; then
	check "uniform tests: both early exits of each site before its election (2 sites x 2)" \
		test "$(awk '/bra.uni\t\$__gx_L[ho]/{n++} /elect.sync/{print n; n=0}' "$W/uni.ptx" | tr '\n' ' ')" = "2 2 "
	check "uniform tests: no ctaid/warpid test after an election is lost (body keeps its own)" \
		test "$(count 'setp.ne.s32	%__gx_h_p2, %__gx_w25, 0' "$W/uni.ptx")" = 4
	# words computed as the tests need them: the block test (%ctaid.x)
	# leaves before the warp test's %tid reads, at each of the 2 sites
	check "uniform tests: words read lazily (ctaid.x, exit, then the tid words, exit)" \
		test "$(awk '/mov.u32\t%__gx_w12, %ctaid.x;/{printf "c"} /mov.u32\t%__gx_w18, %tid.x;/{printf "t"} /bra.uni\t\$__gx_L[ho]/{printf "x"} /elect.sync/{printf " "}' "$W/uni.ptx")" = "cxtx cxtx "
fi
# Reconvergence: the lanes that reached the election wait for the leader
# after an entry (or memory) site; uniform exits and guarded-off lanes go
# past the barrier; exit sites have none (the lanes leave the kernel).
if [ -f "$W/uni.ptx" ]; then
	check "reconvergence: bar.warp.sync on the election mask after the entry site's end, uniform exits past it" \
		test "$(awk '/^\$__gx_Lh[0-9]*:/{h=1; next} h && /bar.warp.sync\t%__gx_m;/{b++} {h=0} /^\$__gx_Lo[0-9]*:/{o++} END{print b+0, o+0}' "$W/uni.ptx")" = "1 1"
fi
if GX_PTX_RECONVERGE=0 rw uni-norc --policy-ptx $S/uniform_policy.ptx --bind entry:gx_uni --bind exit:gx_uni; then
	check "reconvergence: GX_PTX_RECONVERGE=0 leaves the barrier out" test "$(count 'bar.warp.sync' "$W/uni-norc.ptx")" = 0
fi
# A handler that sends most warps away first (uniform early exit): its
# entry site follows the kernel's whole prologue (arithmetic and bounds test
# included), which the handler's path re-executes before END.
if rw uni-entry --policy-ptx $S/uniform_policy.ptx --bind entry:gx_uni; then
	check "uniform entry handler: the site follows the kernel's prologue (up to its first branch)" \
		test "$(entry_prefix uni-entry | tr '\n' ' ')" = "ld ld ld ld mov mov mov mad setp "
	check "uniform entry handler: its path re-executes the prologue after the handler, before END" \
		test "$(awk '/^\$__gx_Lr[0-9]*:/{r=1;next} r&&/^\$__gx_Lh[0-9]*:/{print n; exit} r&&/^\t\t[a-z]/{split($1,a,"."); n=n a[1] " "}' "$W/uni-entry.ptx")" = "ld ld ld ld mov mov mov mad setp "
fi
# A volatile special register (a clock: a second read would differ) ends the
# prologue the site may be moved past.
sed 's/mov.u32 \t%r4, %ntid.x;/mov.u32 \t%r4, %clock;/' "$APP" >"$W/clock-app.ptx"
if grep -q '%clock' "$W/clock-app.ptx" && rw clock --app "$W/clock-app.ptx" --policy-ptx $S/uniform_policy.ptx --bind entry:gx_uni; then
	check "uniform entry handler: a %clock read ends the prologue (site before it)" \
		test "$(entry_prefix clock | tr '\n' ' ')" = "ld ld ld ld mov "
fi
if rw lane --policy-ptx $S/uniform_policy.ptx --bind entry:gx_lane; then
	check "lane-varying test (tid_x): stays after the election" \
		test "$(count 'bra.uni	\$__gx_L[ho]' "$W/lane.ptx")" = 0
fi
# A policy passing the context to a helper: called, every word in .local.
if rw escape --policy-ptx $S/escape_policy.ptx --bind mem:gx_div; then
	check "escaping policy: called" test "$(count 'call.*__gx_p_gx_div,' "$W/escape.ptx")" = 3
	check "escaping policy: context in .local, all words (7 x v4 + 1 x v2 per site)" \
		test "$(count 'st.local.v4.u32' "$W/escape.ptx")" = 21 -a "$(count 'st.local.v2.u32' "$W/escape.ptx")" = 3
	check "escaping policy: logged" grep -q 'handler __gx_p_gx_div is called, not inlined (context pointer escapes)' "$W/escape.log"
	no_shared_ctx escape
fi
if rw escape-inl --policy-ptx $S/escape_policy.ptx --bind mem:gx_div_inl; then
	check "reading policy: inlined" test "$(count 'call.*__gx_p_gx_div_inl' "$W/escape-inl.ptx")" = 0
fi
# The devbpf JIT's tool programs (LLVM NVPTX output, 60-260 instructions).
for t in threadhist:entry kernelretsnoop:exit launchlate:entry memtrace:mem; do
	n=${t%:*} h=${t#*:}
	rw "jit-$n" --policy-ptx "$S/$n.ptx" --bind "$h:gxp_$n" || continue
	no_shared_ctx "jit-$n"
	if [ "$h" = mem ]; then
		# over the old 160-instruction limit: inlined within the module's
		# budget (a call from the leader split warps, GPU run 98), and
		# with GX_PTX_MEM_INLINE=0 called, logged
		check "jit $n: a large mem handler inlined at every memory instruction" \
			test "$(count "call.*__gx_p_gxp_$n\b" "$W/jit-$n.ptx")" = 0
		GX_PTX_MEM_INLINE=0 rw "jit-$n-call" --policy-ptx "$S/$n.ptx" --bind "$h:gxp_$n" &&
			check "jit $n, GX_PTX_MEM_INLINE=0: too large for every memory instruction: called" \
				grep -q "handler __gx_p_gxp_$n is called, not inlined (too large for this hook)" "$W/jit-$n-call.log"
	else
		check "jit $n: inlined" test "$(count "call.*__gx_p_gxp_$n\b" "$W/jit-$n.ptx")" = 0
		check "jit $n: one .local depot per kernel" \
			test "$(grep -c '^	\.local .* __gx_d[0-9]*\[' "$W/jit-$n.ptx")" = 1
	fi
done
# The same tools as today's JIT makes them (no stack frame; maps read from the
# runtime block with ld.const): inlined at entry/exit, the block's reads kept
# as constant-bank loads, ptxas accepts.
for t in threadhist:entry kernelretsnoop:exit; do
	n=${t%:*} h=${t#*:}
	$G bpf jit "$BUILD/share/gpuext/tools/$n.bpf.o" -o "$W/cur-$n.policy.ptx" >/dev/null 2>&1 ||
		{ nok "cur $n: JIT failed"; continue; }
	rw "cur-$n" --policy-ptx "$W/cur-$n.policy.ptx" --bind "$h:gxp_$n" || continue
	no_shared_ctx "cur-$n"
	check "cur $n: inlined" test "$(count "call.*__gx_p_gxp_$n\b" "$W/cur-$n.ptx")" = 0
	check "cur $n: the runtime block read with ld.const" \
		grep -q 'ld.const.u[0-9]*[[:space:]]*%[a-z0-9]*, \[__gx_devrt+[0-9]*\]' "$W/cur-$n.ptx"
	check "cur $n: one .const __gx_devrt" test "$(count '^\.visible \.const .* __gx_devrt\[' "$W/cur-$n.ptx")" = 1
done
# Block handlers (GDEV_HOOK_BLOCK, gdev/blockprobe/: threadhist): at the
# entry of a kernel whose warps never wait for each other, at every exit of
# one that meets at a CTA barrier or an mbarrier (in its body or in a function
# it calls), but at the entry when its body can end without ret/exit.
# count_per_kernel FILE REGEX: "kernel count" per line, of the statements
# matching REGEX in each kernel (0 included)
count_per_kernel() {
	awk -v re="$2" '/^\.visible \.entry/{k=$3; sub(/\(.*/, "", k); n[k] += 0} k && $0 ~ re {n[k]++} END{for (x in n) print x, n[x]}' "$1" | sort
}
# red_per_kernel FILE: "kernel reds" per line, kernels with some only
# (threadhist's three counters per site)
red_per_kernel() {
	count_per_kernel "$1" 'red\.global\.add' | awk '$2 > 0'
}
# first_line FILE KERNEL REGEX: the line of KERNEL's first statement matching REGEX
first_line() {
	awk -v k="$2" -v re="$3" '/^\.visible \.entry/{cur=$3; sub(/\(.*/, "", cur)} cur == k && $0 ~ re {print NR; exit}' "$1"
}
if [ -s "$W/cur-threadhist.policy.ptx" ] &&
	rw block --app $S/block_kernels.ptx --policy-ptx "$W/cur-threadhist.policy.ptx" --bind block:gxp_threadhist; then
	check "block: at the exits of the kernels that meet at barriers (a called bar.sync, an mbarrier), logged" \
		test "$(grep -o 'hooks: [a-z_]*: block handlers at its exits' "$W/block.log" | cut -d' ' -f2 | tr '\n' ' ')" = "calls_barrier: mbar_two_exits: "
	check "block: one site per kernel, one per exit of mbar_two_exits (2)" \
		test "$(red_per_kernel "$W/block.ptx" | tr '\n' ' ')" = "calls_barrier 3 calls_exit 3 falls_off 3 mbar_two_exits 6 warp_only 3 "
	for k in warp_only falls_off calls_exit; do
		check "block: $k at the entry (a warp barrier only / no ret at the end / a callee that exits): before the kernel's store" \
			test "$(first_line "$W/block.ptx" $k red.global)" -lt "$(first_line "$W/block.ptx" $k st.global)"
	done
	check "block: calls_barrier at its exit: after the kernel's store" \
		test "$(first_line "$W/block.ptx" calls_barrier red.global)" -gt "$(first_line "$W/block.ptx" calls_barrier st.global)"
	no_shared_ctx block
fi
# A block binding with a kernel glob: only the kernels it names get a site,
# and only their placement is worked out and logged.
if [ -s "$W/cur-threadhist.policy.ptx" ] &&
	rw block-glob --app $S/block_kernels.ptx --policy-ptx "$W/cur-threadhist.policy.ptx" --bind 'block:gxp_threadhist:calls_b*'; then
	check "block with a kernel glob: only calls_barrier hooked and logged" \
		test "$(red_per_kernel "$W/block-glob.ptx" | tr '\n' ' ')" = "calls_barrier 3 " -a \
		"$(grep -c 'block handlers at its exits' "$W/block-glob.log")" = 1
fi
# The shipped object binds itself as a block probe (--policy): reduce.ptx's
# kernels (bar.sync) at their exits, vadd's at its entry.
if rw block-reduce --app tests/ptx-rewrite/golden-passes/reduce.ptx --policy "$BUILD/share/gpuext/tools/threadhist.bpf.o" &&
	rw block-vadd --policy "$BUILD/share/gpuext/tools/threadhist.bpf.o"; then
	check "threadhist.bpf.o: reduce and early (bar.sync) at their exits" \
		test "$(grep -c 'block handlers at its exits' "$W/block-reduce.log")" = 2
	check "threadhist.bpf.o: vadd at its entry" \
		test "$(grep -c 'block handlers at its exits' "$W/block-vadd.log")" = 0 -a \
		"$(first_line "$W/block-vadd.ptx" vadd red.global)" -lt "$(first_line "$W/block-vadd.ptx" vadd 'ld.global')"
fi
# Kernels whose declaration makes their blocks 1-D (.maxntid X,1,1 or
# .reqntid X): the warp test reads %tid.x only.
if rw flat --app $S/flat_block.ptx --policy "$BUILD/share/gpuext/tools/threadhist.bpf.o"; then
	check "flat blocks: no %tid.y/%tid.z read where .maxntid/.reqntid make the block 1-D" \
		test "$(count_per_kernel "$W/flat.ptx" '%tid\.[yz]' | tr '\n' ' ')" = "flat_max 0 flat_req 0 square 2 undeclared 2 "
	check "flat blocks: every kernel still hooked (three reds each)" \
		test "$(red_per_kernel "$W/flat.ptx" | tr '\n' ' ')" = "flat_max 3 flat_req 3 square 3 undeclared 3 "
fi
# GX_PTX_BLOCK_SITE (A/B measurements) overrides the rule both ways.
if GX_PTX_BLOCK_SITE=exit rw block-vadd-exit --policy "$BUILD/share/gpuext/tools/threadhist.bpf.o" &&
	GX_PTX_BLOCK_SITE=entry rw block-reduce-entry --app tests/ptx-rewrite/golden-passes/reduce.ptx \
		--policy "$BUILD/share/gpuext/tools/threadhist.bpf.o"; then
	check "GX_PTX_BLOCK_SITE=exit: vadd at its exit, logged as asked" \
		test "$(grep -c 'block handlers at its exits (GX_PTX_BLOCK_SITE=exit)' "$W/block-vadd-exit.log")" = 1 -a \
		"$(first_line "$W/block-vadd-exit.ptx" vadd red.global)" -gt "$(first_line "$W/block-vadd-exit.ptx" vadd 'st.global')"
	check "GX_PTX_BLOCK_SITE=entry: reduce's barrier kernels at their entry" \
		test "$(grep -c 'block handlers at its exits' "$W/block-reduce-entry.log")" = 0 -a \
		"$(red_per_kernel "$W/block-reduce-entry.ptx" | awk '{n += $2} END {print n}')" = 6
fi
# GX_PTX_BLOCK_SITE=barrier (issue 40, block_barrier.c): before the first
# barrier every thread passes exactly once; kernels without one (an early
# return before it, a barrier in a loop) keep the rule's exits.
if GX_PTX_BLOCK_SITE=barrier rw block-barrier --app $S/block_barrier.ptx \
	--policy "$BUILD/share/gpuext/tools/threadhist_w1.bpf.o"; then
	check "GX_PTX_BLOCK_SITE=barrier: once and loop_then_once before their barrier, early_out and in_loop at their exits" \
		test "$(grep -o 'hooks: [a-z_]*: block handlers [a-z]* [a-z]*' "$W/block-barrier.log" | cut -d' ' -f2,5 | tr '\n' ' ')" = \
		"once: before early_out: at in_loop: at loop_then_once: before " -a \
		"$(grep -c 'before its first barrier' "$W/block-barrier.log")" = 2
	for k in once loop_then_once; do
		check "GX_PTX_BLOCK_SITE=barrier: $k: one site, its counters before the kernel's bar.sync and after its loads" \
			test "$(red_per_kernel "$W/block-barrier.ptx" | grep "^$k " | cut -d' ' -f2)" = 3 -a \
			"$(first_line "$W/block-barrier.ptx" $k red.global)" -lt "$(first_line "$W/block-barrier.ptx" $k bar.sync)" -a \
			"$(first_line "$W/block-barrier.ptx" $k red.global)" -gt "$(first_line "$W/block-barrier.ptx" $k ld.global)"
	done
	check "GX_PTX_BLOCK_SITE=barrier: the site's warp test is a uniform exit before the election" \
		test "$(awk '/^\.visible \.entry once/{k=1} k && /bra.uni/ {print; exit}' "$W/block-barrier.ptx" | grep -c '__gx_L')" = 1
fi
# A callee whose code is elsewhere (extern, resolved at link time) may exit:
# the entry. ptxas -c (the callee is not in this module).
if $G ptx rewrite --policy-ptx "$W/cur-threadhist.policy.ptx" --bind block:gxp_threadhist \
	$S/block_extern.ptx -o "$W/block-extern.ptx" 2>"$W/block-extern.log" &&
	"$PTXAS" -arch=sm_90 -c "$W/block-extern.ptx" -o /dev/null 2>/dev/null; then
	check "block: calls_extern (bar.sync, an extern callee) at the entry" \
		test "$(grep -c 'block handlers at its exits' "$W/block-extern.log")" = 0 -a \
		"$(first_line "$W/block-extern.ptx" calls_extern red.global)" -lt "$(first_line "$W/block-extern.ptx" calls_extern st.global)"
else
	nok "block: rewrite or ptxas -c of block_extern.ptx: $(tail -1 "$W/block-extern.log")"
fi
# The register cap (issue 40): a kernel with a block probe (not only one
# with memory sites) is capped at its measured original's registers
# (rounded up to 8, at least 32); with GX_PTX_REG_CAP=0, or without a
# measurement, no cap.
if rw regcap --policy "$BUILD/share/gpuext/tools/threadhist.bpf.o" --regs vadd=35 &&
	GX_PTX_REG_CAP=0 rw regcap-off --policy "$BUILD/share/gpuext/tools/threadhist.bpf.o" --regs vadd=35 &&
	rw regcap-none --policy "$BUILD/share/gpuext/tools/threadhist.bpf.o"; then
	check "register cap: vadd under threadhist capped at 40 (35 rounded up), none with GX_PTX_REG_CAP=0 or without a count" \
		test "$(grep -c '\.maxnreg 40' "$W/regcap.ptx")" = 1 -a "$(grep -c maxnreg "$W/regcap-off.ptx")" = 0 -a \
		"$(grep -c maxnreg "$W/regcap-none.ptx")" = 0
fi
# GX_PTX_BLOCK_T0=1 (issue 40 A/B): threadhist's block sites gated on thread
# 0 of the block, no election; thread 0's active mask and warp index as
# immediates (the body's own tests fold); kernelretsnoop's exit handler (not
# a block handler) keeps its election.
if GX_PTX_BLOCK_T0=1 rw t0 --app tests/ptx-rewrite/golden-passes/reduce.ptx \
	--policy "$BUILD/share/gpuext/tools/threadhist.bpf.o" &&
	GX_PTX_BLOCK_T0=1 rw t0-krs --app tests/ptx-rewrite/golden-passes/reduce.ptx \
		--policy "$BUILD/share/gpuext/tools/kernelretsnoop.bpf.o"; then
	check "GX_PTX_BLOCK_T0=1: threadhist's sites gated on thread 0 (one gate per site, no election), its words 9 and 25 immediates" \
		test "$(grep -c 'elect\.sync' "$W/t0.ptx")" = 0 -a "$(grep -c 'setp\.ne\.u32	%__gx_q, %__gx_t, 0;' "$W/t0.ptx")" -gt 0 -a \
		"$(grep -c 'setp\.ne\.u32	%__gx_q, %__gx_t, 0;' "$W/t0.ptx")" = "$(grep -c 'mov\.b32	%__gx_w9, 1;' "$W/t0.ptx")" -a \
		"$(grep -c 'mov\.b32	%__gx_w25, 0;' "$W/t0.ptx")" -gt 0
	check "GX_PTX_BLOCK_T0=1: ptxas accepts threadhist's gated sites" "$PTXAS" -arch=sm_90 "$W/t0.ptx" -o /dev/null
	check "GX_PTX_BLOCK_T0=1: kernelretsnoop (an exit handler, not a block handler) keeps its election" \
		test "$(grep -c 'elect\.sync' "$W/t0-krs.ptx")" -gt 0
fi
# GX_PTX_HOIST_WARP=1 (issue 40 A/B): the warp index set once at each hooked
# kernel's start (one register, declared once even where memtrace's gate
# seeds the same function), every site reading it instead of %tid/%ntid.
if GX_PTX_HOIST_WARP=1 rw hoist --app tests/ptx-rewrite/golden-passes/reduce.ptx \
	--policy "$BUILD/share/gpuext/tools/threadhist.bpf.o"; then
	check "GX_PTX_HOIST_WARP=1: one warp index register per hooked kernel, its sites read it, no %tid at them" \
		test "$(count_per_kernel "$W/hoist.ptx" '\.reg \.b32 %__gx_wi;' | awk '{print $2}' | sort -u | tr '\n' ' ')" = "1 " -a \
		"$(grep -c 'mov\.b32	%__gx_w25, %__gx_wi;' "$W/hoist.ptx")" = "$(red_per_kernel "$W/hoist.ptx" | awk '{n += $2 / 3} END {print n}')" -a \
		"$(grep -c '%__gx_w18, %tid' "$W/hoist.ptx")" = 0
	check "GX_PTX_HOIST_WARP=1: the sites' %smid and %warpid read once at the start too (one read each per hooked kernel)" \
		test "$(grep -c 'mov\.u32	%__gx_sm, %smid;' "$W/hoist.ptx")" = "$(count_per_kernel "$W/hoist.ptx" '\.reg \.b32 %__gx_wi;' | awk '$2 > 0' | wc -l)" -a \
		"$(grep -c 'mov\.u32	%__gx_h_r[0-9]*, %smid;' "$W/hoist.ptx")" = 0
fi
if GX_PTX_HOIST_WARP=1 $G tools rewrite threadhist,memtrace_gate tests/ptx-rewrite/golden-passes/vadd.ptx \
	-o "$W/hoist-gate.ptx" >"$W/hoist-gate.log" 2>&1; then
	check "GX_PTX_HOIST_WARP=1 with memtrace's gate in the same kernel: each start register declared once, ptxas accepts" \
		"$PTXAS" -arch=sm_90 "$W/hoist-gate.ptx" -o /dev/null
else
	nok "GX_PTX_HOIST_WARP=1 with memtrace_gate: rewrite failed: $(tail -1 "$W/hoist-gate.log")"
fi
