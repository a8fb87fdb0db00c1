#!/usr/bin/env bash
# Tests of the ptx-rewrite passes (hooks, persistent workers), through the CLI:
#  1. golden files: tests/ptx-rewrite/golden-passes/NAME.ptx rewritten by each pass
#     must equal NAME.PASS.out (GX_UPDATE_GOLDEN=1 rewrites them);
#  2. every output (golden inputs, tests/ptx-rewrite/passes-src/*.cu compiled by nvcc,
#     and the shared corpus of tests/ptx-rewrite/corpus.sh when present) must be
#     accepted by ptxas for the module's target; register growth per kernel
#     (ptxas -v) is written to $BUILD/ptx-passes/regs.txt;
#  3. refusals: tests/ptx-rewrite/golden-passes/refuse/*.ptx carry "// expect: WHY";
#     --persistent must log "refused: WHY" and leave a module ptxas accepts;
#  4. kernels launched from the device (corpus cdp, libcudadevrt's PTX) refused.
# ptxas results are cached by content hash under $BUILD/ptx-passes/cache, so
# re-runs only assemble what changed; at most 2 jobs run at a time.
set -u
BUILD=${BUILD:-build}
PTXAS=${PTXAS:-/usr/local/cuda/bin/ptxas}
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
G=$BUILD/bin/gpuext
D=tests/ptx-rewrite/golden-passes
W=$BUILD/ptx-passes
mkdir -p "$W/out" "$W/cache" "$W/src"
REGS=$W/regs.txt
: >"$REGS"

PASSES="ee mem all persist allp"
# Over the corpus: each hook pass and the persistent transform (allp, the
# combination, is covered by the golden inputs and our CUDA sources).
CHECK_PASSES=${GX_PASSES_CHECK:-"ee mem all persist"}
flags() {
	case $1 in
	ee) echo "--hooks entry,exit --stubs call" ;;
	mem) echo "--hooks mem --stubs probe" ;;
	all) echo "--hooks all --stubs probe-call" ;;
	persist) echo "--persistent" ;;
	allp) echo "--hooks all --persistent --stubs probe" ;;
	esac
}

ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; }

[ -x "$G" ] || { nok "passes: $G not built"; exit 1; }
tool_hash=$(cat "$G" "$PTXAS" | sha1sum | cut -c1-16)

target_of() { sed -n 's/^[[:space:]]*\.target[[:space:]]\+\([a-z0-9_]*\).*/\1/p' "$1" | head -1; }

# ptxas with a cache: prints "OK" or "FAIL: first error line"; -v output
# (register lines) goes to $2.v. $3: extra ptxas flags (-c for -rdc modules).
ptxas_cached() {
	local f=$1 out=$2 mode=${3:-} arch key c
	arch=$(target_of "$f")
	key=$( (echo "$tool_hash $arch $mode"; cat "$f") | sha1sum | cut -c1-40)
	c=$W/cache/$key
	if [ ! -f "$c" ]; then
		if [ -z "$mode" ] && grep -q '^\.extern \.func\|^\.weak' "$f"; then mode=-c; fi
		if "$PTXAS" $mode -arch="$arch" -v "$f" -o /dev/null >"$c.v" 2>&1; then
			echo OK >"$c.tmp"
		else
			echo "FAIL: $(grep -m1 -i 'error\|fatal' "$c.v")" >"$c.tmp"
		fi
		mv "$c.tmp" "$c"
	fi
	cp "$c.v" "$out.v" 2>/dev/null
	cat "$c"
}

# Registers per function from ptxas -v output: "NAME REGS"
regs_of() {
	awk '/Compiling entry function/ {gsub(/\x27/, "", $7); f=$7}
	     /Used [0-9]+ registers/ && f != "" {for (i=1;i<=NF;i++) if ($i=="Used") print f, $(i+1); f=""}' "$1"
}

# Check one input for every pass: rewrite, ptxas, register growth. The
# outcome of (tools, input, pass) is cached whole, so a re-run with the same
# gpuext and ptxas costs one hash per module.
check_module() {
	local in=$1 name=$2 mode=$3 base=$W/out/$name r inhash
	inhash=$(sha1sum <"$in" | cut -c1-40)
	for p in $CHECK_PASSES; do
		local out=$base.$p.ptx done=$W/cache/res-$tool_hash-$p-${mode:-x}-$inhash
		if [ -f "$done" ]; then
			grep -v '^R ' "$done"
			sed -n 's/^R //p' "$done" >>"$REGS"
			continue
		fi
		r=$(ptxas_cached "$in" "$base.orig" "$mode")
		if [ "$r" != OK ]; then
			echo "# $name: the original does not assemble ($r): skipped"
			return
		fi
		# shellcheck disable=SC2046
		if ! $G ptx rewrite $(flags "$p") "$in" -o "$out" 2>"$base.$p.log"; then
			nok "passes: $name $p: rewrite failed: $(tail -1 "$base.$p.log")"
			continue
		fi
		r=$(ptxas_cached "$out" "$base.$p" "$mode")
		if [ "$r" != OK ]; then
			nok "passes: $name $p: $r"
			continue
		fi
		{
			ok "passes: $name $p: ptxas $(target_of "$out")"
			join <(regs_of "$base.orig.v" | sort) <(regs_of "$base.$p.v" | sort) |
				awk -v m="$name" -v p="$p" '{printf "R %-28s %-8s %-40s %4d -> %4d (%+d)\n", m, p, $1, $2, $3, $3-$2}'
		} >"$done.tmp"
		mv "$done.tmp" "$done"
		grep -v '^R ' "$done"
		sed -n 's/^R //p' "$done" >>"$REGS"
	done
}

# 1. Golden files.
for in in "$D"/*.ptx; do
	name=$(basename "$in" .ptx)
	for p in $PASSES; do
		exp=$D/$name.$p.out
		# shellcheck disable=SC2046
		got=$($G ptx rewrite $(flags "$p") "$in" -o - 2>/dev/null)
		if [ "${GX_UPDATE_GOLDEN:-0}" = 1 ]; then
			printf '%s\n' "$got" >"$exp"
		fi
		if [ ! -f "$exp" ]; then
			nok "passes: golden $name.$p: $exp missing (GX_UPDATE_GOLDEN=1 creates it)"
		elif [ "$got" = "$(cat "$exp")" ]; then
			ok "passes: golden $name.$p"
		else
			nok "passes: golden $name.$p: output differs from $exp"
			diff <(printf '%s\n' "$got") "$exp" | head -20
		fi
	done
done

# 3. Refusals.
for in in "$D"/refuse/*.ptx; do
	name=$(basename "$in" .ptx)
	why=$(sed -n 's@^// expect: @@p' "$in")
	log=$W/out/refuse-$name.log
	if ! $G ptx rewrite --persistent "$in" -o "$W/out/refuse-$name.ptx" 2>"$log"; then
		nok "passes: refuse $name: rewrite failed: $(tail -1 "$log")"
	elif grep -qF "refused: $why" "$log"; then
		ok "passes: refuse $name ($why)"
	else
		nok "passes: refuse $name: expected 'refused: $why', got '$(head -1 "$log")'"
	fi
	grep -q '__gx_work' "$W/out/refuse-$name.ptx" &&
		nok "passes: refuse $name: kernel was transformed anyway"
done

# 4. Kernels launched from the device (the corpus's cdp and libcudadevrt's PTX,
# built or extracted by tests/ptx-rewrite/corpus.sh): --persistent must leave
# them as they are (ptxas below checks the rest of each module).
BUILD=$BUILD tests/ptx-rewrite/corpus.sh >/dev/null 2>"$W/corpus-dp.log" ||
	nok "passes: device launches: corpus.sh failed: $(tail -1 "$W/corpus-dp.log")"
# expect_dp MODULE KERNEL-REGEX REASON-PREFIX|transformed
expect_dp() {
	local f=$1 k=$2 want=$3 log=$W/out/dp-$(basename "$1" .ptx).log got
	[ -s "$log" ] || $G ptx rewrite --persistent "$f" -o /dev/null 2>"$log" ||
		{ nok "passes: device launches: rewrite $(basename "$f") failed: $(tail -1 "$log")"; return; }
	got=$(grep -E "^persistent: $k: " "$log")
	if [ -z "$got" ]; then
		nok "passes: device launches: $(basename "$f"): no kernel matches $k"
	elif printf '%s\n' "$got" | grep -vqF ": $want"; then
		nok "passes: device launches: $(basename "$f") $k: $(printf '%s\n' "$got" | grep -vF ": $want" | head -1)"
	else
		ok "passes: device launches: $(basename "$f") $k: $want ($(printf '%s\n' "$got" | wc -l))"
	fi
}
rm -f "$W"/out/dp-*.log
cdp=$BUILD/ptx-corpus/cdp.sm_90.ptx
if [ -f "$cdp" ]; then
	expect_dp "$cdp" '_Z9cdp_childPii' 'refused: has'
	expect_dp "$cdp" '_Z8cdp_latePii' 'refused: has another declaration'
	expect_dp "$cdp" '_Z11cdp_recursePii' 'refused: uses dynamic parallelism (device-side launch)'
	expect_dp "$cdp" '_Z10cdp_parentPii' 'refused: uses dynamic parallelism (device-side launch)'
	expect_dp "$cdp" '_Z14cdp_via_helperPi' 'refused: calls device function'
	expect_dp "$cdp" '_Z10cdp_memsetPii' 'refused: uses dynamic parallelism (device-side memcpy/memset'
	expect_dp "$cdp" '_Z13cdp_host_onlyPii' 'transformed'
else
	nok "passes: device launches: $cdp missing"
fi
ndevrt=0
for f in "$BUILD"/ptx-corpus/devrt.*.ptx; do
	[ -f "$f" ] || continue
	ndevrt=$((ndevrt + 1))
	expect_dp "$f" '.*memset_3d_device[^:]*' 'refused: has another declaration'
done
[ "$ndevrt" -gt 0 ] || nok "passes: device launches: no PTX extracted from libcudadevrt"

# Memory errors and leaks (all passes at once), when valgrind is there.
if command -v valgrind >/dev/null; then
	for in in "$D"/edge.ptx "$D"/reduce.ptx; do
		if valgrind -q --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=9 \
			$G ptx rewrite --hooks all --persistent "$in" -o /dev/null 2>"$W/valgrind.log"; then
			ok "passes: valgrind clean on $(basename "$in")"
		else
			nok "passes: valgrind on $(basename "$in"): $(grep -m1 '==' "$W/valgrind.log")"
		fi
	done
fi

# 2. ptxas over golden inputs, our CUDA sources and the shared corpus.
jobs_run() { while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n; done; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
inputs=() # "PATH FLAGS"
for in in "$D"/*.ptx; do inputs+=("$in"); done
for cu in tests/ptx-rewrite/passes-src/*.cu; do
	n=$(basename "$cu" .cu)
	for arch in sm_80 sm_90; do
		out=$W/src/$n.$arch.ptx
		if [ ! -f "$out" ] || [ "$cu" -nt "$out" ]; then
			"$NVCC" -arch="$arch" -ptx "$cu" -o "$out" 2>"$out.err" || {
				nok "passes: nvcc $n $arch: $(head -1 "$out.err")"
				continue
			}
		fi
		inputs+=("$out")
	done
done
# The shared corpus (tests/ptx-rewrite/corpus.sh prints "PATH TARGET [PTXAS-FLAGS]").
ncorpus=0
if [ -x tests/ptx-rewrite/corpus.sh ]; then
	while read -r f _ fl; do
		[ -f "$f" ] || continue
		inputs+=("$f ${fl:-}")
		ncorpus=$((ncorpus + 1))
	done < <(BUILD=$BUILD tests/ptx-rewrite/corpus.sh 2>"$W/corpus.log")
	[ "$ncorpus" -gt 0 ] || nok "passes: tests/ptx-rewrite/corpus.sh gave no module: $(tail -1 "$W/corpus.log")"
fi
i=0
for e in "${inputs[@]}"; do
	i=$((i + 1))
	in=${e%% *}
	fl=""
	[ "$in" != "$e" ] && fl=${e#* }
	name=$(basename "$in" .ptx)
	jobs_run
	check_module "$in" "$name" "$fl" >"$tmp/$(printf %04d $i).txt" &
done
wait
cat "$tmp"/*.txt 2>/dev/null
echo "# ${#inputs[@]} modules ($ncorpus from the corpus); register growth per kernel in $REGS"
if [ -s "$REGS" ]; then
	awk '{d=$NF; gsub(/[()+]/, "", d); d+=0; s[$2]+=d; n[$2]++; if (!($2 in mx) || d>mx[$2]) mx[$2]=d}
	     END {for (p in s) printf "# regs %-8s mean %+.1f, max %+d over %d kernels\n", p, s[p]/n[p], mx[p], n[p]}' "$REGS"
fi
