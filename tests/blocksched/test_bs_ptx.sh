#!/usr/bin/env bash
# The persistent transform with each schedule policy linked, checked by
# ptxas: the kernels of tests/ptx-rewrite/golden-passes and bench/
# (sched_kernels, hook_kernels) rewritten in copy mode with every shipped
# policy and the measured-register cap (--regs) must assemble for their
# target, the runtime and every policy's hook inlined (no call left: a call
# costs the kernel registers), each copy within its cap and without spills
# for these kernels; static-only copies carry no runtime and keep the
# original's registers. adaptive+static is the guarded launcher's module
# (--static-copy): each kernel's second copy __gx_ps_K must be the same
# loop as fixed_work's copy (sched_bench times fixed_work's as that arm).
set -u
BUILD=${BUILD:-build}
PTXAS=${PTXAS:-/usr/local/cuda/bin/ptxas}
G=$BUILD/bin/gpuext
P=$BUILD/share/gpuext/sched
W=$BUILD/tests/blocksched/ptx
mkdir -p "$W"
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; }

# registers of every entry of a ptxas -v log: "NAME REGS SPILLBYTES"
regs_of() {
	awk '/Compiling entry function/ {gsub(/\x27/, "", $7); f=$7}
	     /bytes spill stores/ && f != "" {sp[f]=$5}
	     /Used [0-9]+ registers/ && f != "" {for (i=1;i<=NF;i++) if ($i=="Used") r=$(i+1); print f, r, sp[f]+0; f=""}' "$1"
}

# each entry's resources from a ptxas -v log: "NAME stack BYTES Used ..."
# (registers, barriers, shared memory): what cuFuncGetAttribute answers
props_of() {
	awk '/Compiling entry function/ {gsub(/\x27/, "", $7); f=$7} /bytes stack frame/ && f != "" {st=$1}
	     /Used [0-9]+ registers/ && f != "" {sub(/.*: /, ""); print f, "stack", st, $0; f=""}' "$1"
}

inputs="tests/ptx-rewrite/golden-passes/vadd.ptx tests/ptx-rewrite/golden-passes/reduce.ptx $BUILD/bench/sched_kernels.ptx $BUILD/bench/hook_kernels.ptx"
for in in $inputs; do
	[ -f "$in" ] || { nok "persistent ptx: $in missing"; continue; }
	n=$(basename "$in" .ptx)
	# the original's registers, the cap's input
	"$PTXAS" -arch=sm_90 -v "$in" -o /dev/null >"$W/$n.orig.v" 2>&1
	regs=$(regs_of "$W/$n.orig.v" | awk '{printf "%s%s=%s", sep, $1, $2; sep=","}')
	for pol in none fixed_work greedy max_steals latency_budget adaptive adaptive+static; do
		out=$W/$n.$pol.ptx
		args=(--persistent=copy --regs "$regs")
		[ "$pol" != none ] && args+=(--policy "$P/${pol%+static}.bpf.o")
		[ "$pol" = fixed_work ] && args+=(--persist-static)
		[ "$pol" = adaptive+static ] && args+=(--static-copy)
		if ! "$G" ptx rewrite "${args[@]}" "$in" -o "$out" 2>"$out.log"; then
			nok "persistent ptx: $n with $pol: rewrite failed: $(tail -1 "$out.log")"
			continue
		fi
		bad=""
		arch=$(sed -n 's/^[[:space:]]*\.target[[:space:]]\+\([a-z0-9_]*\).*/\1/p' "$out" | head -1)
		"$PTXAS" -arch="$arch" -v "$out" -o /dev/null >"$out.v" 2>&1 || bad="$bad ptxas $arch: $(grep -m1 -i error "$out.v")"
		grep -q 'not inlined' "$out.log" && bad="$bad a hook called: $(grep -m1 'not inlined' "$out.log")"
		grep -qE '^\s*call' <(sed -n '/\.entry __gx_p[ws]_/,/^}/p' "$out") && bad="$bad a call in a copy"
		if [ "$pol" = adaptive+static ]; then
			npw=$(grep -c '^\.visible \.entry __gx_pw_' "$out") nps=$(grep -c '^\.visible \.entry __gx_ps_' "$out")
			[ "$npw" -gt 0 ] && [ "$npw" = "$nps" ] || bad="$bad $npw claiming copies but $nps static ones"
			# no claim: a static copy has the atomics of its kernel, no more
			for k in $(sed -n 's/^\.visible \.entry __gx_ps_\([A-Za-z0-9_$]*\)(.*/\1/p' "$out"); do
				ak=$(sed -n "/\.entry $k(/,/^}/p" "$out" | grep -c 'atom\.\|red\.')
				as=$(sed -n "/\.entry __gx_ps_$k(/,/^}/p" "$out" | grep -c 'atom\.\|red\.\|gxbsrt')
				[ "$ak" = "$as" ] || bad="$bad __gx_ps_$k: $as atomics, $k has $ak"
			done
			grep -q ', static only)' "$out.log" || bad="$bad no static copy logged"
		fi
		# each copy within max(32, original rounded up to 8), no spill
		while read -r f r sp; do
			case $f in __gx_pw_* | __gx_ps_*) ;; *) continue ;; esac
			o=$(regs_of "$W/$n.orig.v" | awk -v k="${f#__gx_p?_}" '$1 == k {print $2}')
			cap=$(( (o + 7) / 8 * 8 )); [ "$cap" -lt 32 ] && cap=32
			[ "$r" -le "$cap" ] || bad="$bad $f: $r registers > cap $cap"
			[ "$sp" -eq 0 ] || [ "$n" = sched_kernels ] || bad="$bad $f: $sp bytes spilled"
			if { [ "$pol" = fixed_work ] || [ "${f#__gx_ps_}" != "$f" ]; } && [ "$r" -gt "$o" ] && [ "$o" -ge 32 ]; then
				bad="$bad $f: static only but $r > $o registers"
			fi
			# the guard's static arm is fixed_work's loop: same registers
			if [ "${f#__gx_ps_}" != "$f" ] && [ -f "$W/$n.fixed_work.ptx.v" ]; then
				fw=$(regs_of "$W/$n.fixed_work.ptx.v" | awk -v k="__gx_pw_${f#__gx_ps_}" '$1 == k {print $2}')
				[ "$r" = "$fw" ] || bad="$bad $f: $r registers, fixed_work's copy $fw"
			fi
		done < <(regs_of "$out.v")
		# the originals beside their copies keep what they report (an
		# application or library sizing its launches or work areas with
		# cuFuncGetAttribute / the occupancy API must see the same kernel)
		od=$(diff <(props_of "$W/$n.orig.v" | sort) <(props_of "$out.v" | grep -v '^__gx_p[sw]_' | sort) | grep '^[<>]' | head -2 | tr '\n' ' ')
		[ -z "$od" ] || bad="$bad an original's resources changed: $od"
		[ -n "$(props_of "$W/$n.orig.v")" ] || bad="$bad no resources read from ptxas -v of the original"
		if [ "$pol" = fixed_work ] && grep -q '_bs_\|gxbsrt' "$out"; then
			bad="$bad static-only copy carries the runtime"
		fi
		[ -z "$bad" ] && ok "persistent ptx: $n with $pol: ptxas $arch, hooks inlined, copies within their register caps, originals' resources unchanged" ||
			nok "persistent ptx: $n with $pol:$bad"
	done
done
# The exit path (adaptive's exit hook, the chunk's start time) may cost
# registers but no spill the copy without it (greedy's) does not have: a
# conditional definition there once kept a register pair alive across the
# body and spilled the 128-register gemm_tile copy (bench/results run 52).
for in in $inputs; do
	n=$(basename "$in" .ptx)
	a=$W/$n.adaptive.ptx.v g=$W/$n.greedy.ptx.v
	[ -f "$a" ] && [ -f "$g" ] || continue
	worse=$(join <(regs_of "$g" | awk '{print $1, $3}' | sort) <(regs_of "$a" | awk '{print $1, $3}' | sort) |
		awk '$3 > $2 {printf " %s: %s > %s bytes", $1, $3, $2}')
	[ -z "$worse" ] && ok "persistent ptx: $n: adaptive's copies spill no more than greedy's" ||
		nok "persistent ptx: $n: adaptive's exit path spills:$worse"
done
# what the cap costs gemm_imb (40 registers): spills, reported
if [ -f "$W/sched_kernels.adaptive.ptx.v" ]; then
	echo "# sched_kernels copies with adaptive (name regs spill-bytes): $(regs_of "$W/sched_kernels.adaptive.ptx.v" | grep __gx_pw_ | tr '\n' ';')"
fi
