#!/usr/bin/env bash
# A ring reservation's first try runs no loop (devbpf/helpers/mapimpl_internal.h,
# gx_ring_reserve_n): ptxas puts a YIELD at a loop's head, and a leader lane
# that yields inside its site's handler lets the lanes waiting for it go on
# without it (GPU runs 90 and 94: memtrace's golden warps reached the next
# site as 1 + 31 lanes). For each tool that records into a ring, rewritten
# into vadd, every function that reserves (the policy, a called handler, or
# the kernel its handler is inlined into) has its first fetch-add and its
# first commit outside every cycle of its control flow (tests/ptx_ring_loops.py).
set -u
G=${BUILD:-build}/bin/gpuext
W=${BUILD:-build}/ptx-ring-loops
V=tests/ptx-rewrite/golden-passes/vadd.ptx
mkdir -p "$W"
# (the ring builds of launchlate and kernelretsnoop: their defaults write
# record tables)
for t in launchlate_ring kernelretsnoop_ring memtrace; do
	src=$t
	[ $t != memtrace ] && src=${BUILD:-build}/share/gpuext/tools/$t.bpf.o
	if ! $G tools rewrite $src $V -o "$W/$t.ptx" 2>"$W/$t.err"; then
		echo "not ok - ring loops: $t: rewrite failed: $(tail -1 "$W/$t.err")"
		continue
	fi
	if python3 tests/ptx_ring_loops.py "$W/$t.ptx" >"$W/$t.txt"; then
		echo "ok - ring loops: $t: the first reservation try runs no loop ($(wc -l <"$W/$t.txt") functions)"
	else
		echo "not ok - ring loops: $t: $(grep -v ': ok:' "$W/$t.txt" | tr '\n' ' ')"
	fi
done
# launchlate's and kernelretsnoop's record tables: a record is plain stores,
# nothing the recording warp waits for (no atomic, no release, no fence, no
# local-memory frame) in the rewritten vadd
for t in launchlate kernelretsnoop; do
	if ! $G tools rewrite $t $V -o "$W/$t-table.ptx" 2>"$W/$t-table.err"; then
		echo "not ok - ring loops: $t: rewrite failed: $(tail -1 "$W/$t-table.err")"
		continue
	fi
	if grep -q 'mov.u64.*%globaltimer' "$W/$t-table.ptx" &&
		! grep -Eq '^\s*(@%p[0-9]+ )?(atom|red|fence|membar)\.|\.release|\.local' "$W/$t-table.ptx"; then
		echo "ok - ring loops: $t's record table: no atomic, fence, release or stack on the recording path"
	else
		echo "not ok - ring loops: $t's record table: no atomic, fence, release or stack on the recording path"
	fi
done
# the checker itself: a reservation inside a loop is found
cat >"$W/loop.ptx" <<'P'
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p)
{
	.reg .pred %p<2>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [p];
$L1:
	atom.relaxed.gpu.global.add.u64 %rd2, [%rd1], 8;
	st.release.gpu.global.u64 [%rd2], %rd2;
	setp.ne.u64 %p1, %rd2, 0;
	@%p1 bra $L1;
	ret;
}
P
if python3 tests/ptx_ring_loops.py "$W/loop.ptx" >/dev/null; then
	echo "not ok - ring loops: the checker passed a fetch-add inside a loop"
else
	echo "ok - ring loops: the checker finds a fetch-add inside a loop"
fi
