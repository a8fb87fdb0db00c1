#!/usr/bin/env bash
# Each shipped tool verifies, JITs to PTX, and — rewritten into corpus
# kernels with its hook bindings and linked — compiles with ptxas for sm_90.
set -u
B=${BUILD:-build}
PTXAS=${PTXAS:-/usr/local/cuda/bin/ptxas}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
for t in kernelretsnoop kernelretsnoop_all kernelretsnoop_c1024 kernelretsnoop_c256 threadhist threadhist_lw threadhist_w1 launchlate memtrace; do
	if out=$($B/bin/gpuext bpf verify $B/share/gpuext/tools/$t.bpf.o 2>&1) && [[ $out == *": ok"* ]]; then
		echo "ok - tools-ptx: $t verifies"
	else
		echo "not ok - tools-ptx: $t verifies: $out"
	fi
	for k in vadd reduce edge; do
		if ! log=$($B/bin/gpuext tools rewrite $t tests/ptx-rewrite/golden-passes/$k.ptx -o $T/$t-$k.ptx 2>&1); then
			echo "not ok - tools-ptx: $t rewrites $k: $log"; continue
		fi
		if ! [[ $log =~ ,\ [1-9][0-9]*\ hook\ sites ]]; then
			echo "not ok - tools-ptx: $t hooks $k: $log"; continue
		fi
		if perr=$("$PTXAS" -arch=sm_90 $T/$t-$k.ptx -o /dev/null 2>&1); then
			echo "ok - tools-ptx: $t in $k: ptxas sm_90"
		else
			echo "not ok - tools-ptx: $t in $k: ptxas: $(echo "$perr" | head -3)"
		fi
	done
done
# All four tools in one module: chained at shared hooks, ptxas accepts it.
for k in vadd reduce edge; do
	if log=$($B/bin/gpuext tools rewrite threadhist,kernelretsnoop,launchlate,memtrace \
		tests/ptx-rewrite/golden-passes/$k.ptx -o $T/all-$k.ptx 2>&1) &&
		perr=$("$PTXAS" -arch=sm_90 $T/all-$k.ptx -o /dev/null 2>&1); then
		echo "ok - tools-ptx: four tools together in $k: ptxas sm_90"
	else
		echo "not ok - tools-ptx: four tools together in $k: $log $(echo "${perr:-}" | head -3)"
	fi
done
# each policy reads its own runtime block: __gx_devrt, __gx_devrt__p1..3
n=0
for b in __gx_devrt __gx_devrt__p1 __gx_devrt__p2 __gx_devrt__p3; do
	grep -q "^\.visible \.const \.align 8 \.b8 $b\[" $T/all-vadd.ptx &&
		grep -q "ld\.const\.[a-z0-9]*[[:space:]]*%[a-z0-9]*, \[$b+[0-9]*\]" $T/all-vadd.ptx && n=$((n + 1))
done
[ "$n" = 4 ] && echo "ok - tools-ptx: four policies, each reading its own runtime block (ld.const)" \
	|| echo "not ok - tools-ptx: four policies, each reading its own runtime block (ld.const): $n of 4"
# threadhist and launchlate both probe the entry: two sites at vadd's one entry
log=$($B/bin/gpuext tools rewrite threadhist,launchlate tests/ptx-rewrite/golden-passes/vadd.ptx -o $T/two-vadd.ptx 2>&1)
[[ $log == *"1 kernels, 2 hook sites"* ]] && echo "ok - tools-ptx: both entry probes at the kernel entry" \
	|| echo "not ok - tools-ptx: both entry probes at the kernel entry: $log"
# ctx->launch_id is the hardware's grid launch number on the device.
for t in kernelretsnoop launchlate; do
	if grep -q '%gridid' $T/$t-vadd.ptx 2>/dev/null; then
		echo "ok - tools-ptx: $t reads ctx->launch_id as %gridid"
	else
		echo "not ok - tools-ptx: $t reads ctx->launch_id as %gridid"
	fi
done
# kernelretsnoop's exit: the warp test and the block-sample test (launches
# over 16384 blocks) both leave before the leader election, as uniform branches
n=$(awk '/^\t\{/ { n = 0 } /bra.uni\t\$__gx_Lh/ { n++ } /elect.sync/ { print n; exit }' $T/kernelretsnoop-vadd.ptx)
[ "${n:-0}" -ge 2 ] && echo "ok - tools-ptx: kernelretsnoop's warp and sample tests are uniform exits before the election ($n)" \
	|| echo "not ok - tools-ptx: kernelretsnoop's warp and sample tests are uniform exits before the election (${n:-none})"
n=$(awk '/^\t\{/ { n = 0 } /bra.uni\t\$__gx_Lh/ { n++ } /elect.sync/ { print n; exit }' $T/kernelretsnoop_all-vadd.ptx)
[ "${n:-0}" = 1 ] && echo "ok - tools-ptx: kernelretsnoop_all has the warp test only (no sampling)" \
	|| echo "not ok - tools-ptx: kernelretsnoop_all has the warp test only (no sampling) (${n:-none})"
# the load-time variants keep those uniform exits: the lower caps both,
# threadhist_lw its last-warp test (at reduce's exits: a barrier kernel; at
# vadd's entry, after the prologue, whose skip label is $__gx_Lo)
for v in kernelretsnoop_c1024-vadd:2 kernelretsnoop_c256-vadd:2 threadhist_lw-reduce:1 threadhist_lw-vadd:1 threadhist_w1-reduce:1 \
	threadhist-vadd:1; do
	n=$(awk '/^\t\{/ { n = 0 } /bra.uni\t\$__gx_L[ho]/ { n++ } /elect.sync/ { print n; exit }' $T/${v%:*}.ptx)
	[ "${n:-0}" -ge "${v#*:}" ] && echo "ok - tools-ptx: ${v%:*}: its tests are uniform exits before the election ($n)" \
		|| echo "not ok - tools-ptx: ${v%:*}: its tests are uniform exits before the election (${n:-none})"
done
grep -q '%gridid' $T/threadhist-vadd.ptx && echo "not ok - tools-ptx: %gridid only where launch_id is read" \
	|| echo "ok - tools-ptx: %gridid only where launch_id is read"
# A rejected policy: the message names the program and instruction.
cat >$T/bad.bpf.c <<'X'
#include "gpuext/gdev_helpers.h"
SEC("gdev/probe/*") int bad(struct gdev_ctx *c) { if (gdev_laneid() == 3) return 1; return 0; }
X
if ${CLANG:-clang-19} -target bpf -O2 -g -I. -Iinclude -c $T/bad.bpf.c -o $T/bad.bpf.o 2>$T/bad.err; then
	out=$($B/bin/gpuext tools prepare --cache-dir $T/c $T/bad.bpf.o 2>&1)
	if [[ $? -ne 0 && $out == *"prog bad insn"* ]]; then
		echo "ok - tools-ptx: a lane-varying policy is refused by prepare"
	else
		echo "not ok - tools-ptx: a lane-varying policy is refused by prepare: $out"
	fi
	[ -z "$(ls $T/c 2>/dev/null)" ] && echo "ok - tools-ptx: nothing cached for a refused policy" \
		|| echo "not ok - tools-ptx: nothing cached for a refused policy"
else
	echo "not ok - tools-ptx: the lane-varying policy does not compile: $(head -c 300 $T/bad.err)"
fi
# A module with nothing to hook (XLA loads kernel-less `.target sm_50`
# modules) comes out byte for byte as it went in: no policy code linked.
printf '.version 6.0\n.target sm_50\n.address_size 64\n\n.global .align 4 .u32 x;\n' >$T/nokernel.ptx
if log=$($B/bin/gpuext tools rewrite threadhist $T/nokernel.ptx -o $T/nokernel.out.ptx 2>&1) &&
	cmp -s $T/nokernel.ptx $T/nokernel.out.ptx; then
	echo "ok - tools-ptx: a kernel-less sm_50 module is left as it is under a tool"
else
	echo "not ok - tools-ptx: a kernel-less sm_50 module is left as it is under a tool: $log $(diff $T/nokernel.ptx $T/nokernel.out.ptx | head -5)"
fi
