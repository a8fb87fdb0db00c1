#!/usr/bin/env bash
# bench/uvm_prefetch.sh — default UVM vs hand-written cudaMemPrefetchAsync
# vs the unchanged program under the shim with each prefetch policy.
# Builds bench/uvm_prefetch.cu with nvcc (on the GPU machine), runs each
# mode (median of UVM_REPS repeats inside the program), compares checksums
# across modes, prints ok/not ok lines and writes the table to
# $OUT/hostpolicy/uvm_prefetch.md. UVM_MB: MiB per buffer (default 1024; at
# most 1 GiB of managed memory is live at a time), UVM_REPS (3).
set -u
ROOT=${GX_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
B=${GX_BUILD:-$ROOT/build}
OUT=${OUT:-$B/gpu-out}
L=$OUT/hostpolicy
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
MB=${UVM_MB:-1024}
REPS=${UVM_REPS:-3}
POLICIES=${HOSTPOLICY_POLICIES:-"seq stride tree"}
mkdir -p "$L"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; }

arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '.')
if ! timeout 300 "$NVCC" -O2 -arch=sm_${arch:-90} -o "$W/uvm_prefetch" "$ROOT/bench/uvm_prefetch.cu" >"$L/nvcc.log" 2>&1; then
	nok "uvm_prefetch: nvcc build failed (see $L/nvcc.log)"
	exit 0
fi
modes="default hand $POLICIES"
for m in $modes; do
	case $m in
	default) timeout 120 "$W/uvm_prefetch" --mb "$MB" --reps "$REPS" >"$L/uvm.$m.out" 2>"$L/uvm.$m.err" ;;
	hand) timeout 120 "$W/uvm_prefetch" --hand --mb "$MB" --reps "$REPS" >"$L/uvm.$m.out" 2>"$L/uvm.$m.err" ;;
	*) timeout 120 env LD_LIBRARY_PATH="$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" GPUEXT_LOG=info \
		GPUEXT_POLICY="$B/hostbpf/gx_$m.bpf.o" "$W/uvm_prefetch" --mb "$MB" --reps "$REPS" \
		>"$L/uvm.$m.out" 2>"$L/uvm.$m.err" ;;
	esac
	rc=$?
	[ $rc -eq 0 ] && [ "$(grep -c '^RESULT' "$L/uvm.$m.out")" = 5 ] && ok "uvm_prefetch mode $m ran" ||
		nok "uvm_prefetch mode $m: rc $rc (see $L/uvm.$m.err)"
	case $m in default|hand) ;; *)
		grep -q "attached memory policy" "$L/uvm.$m.err" && ok "uvm_prefetch mode $m: policy attached" ||
			nok "uvm_prefetch mode $m: policy not attached (see $L/uvm.$m.err)" ;;
	esac
done
val() { sed -n "s/^RESULT pattern=$2 ms=\([0-9.]*\) checksum=\([0-9]*\)$/\\$3/p" "$L/uvm.$1.out"; }
{
	echo "| pattern | default ms | hand ms | $(for p in $POLICIES; do printf '%s ms (× default, ÷ hand) | ' "$p"; done)"
	echo "|---|---|---|$(for p in $POLICIES; do printf -- '---|'; done)"
	for pat in seq stride random pingpong pipeline; do
		d=$(val default $pat 1); h=$(val hand $pat 1)
		printf '| %s | %s | %s |' "$pat" "${d:--}" "${h:--}"
		for p in $POLICIES; do
			t=$(val "$p" $pat 1)
			if [ -n "$t" ] && [ -n "$d" ] && [ -n "$h" ]; then
				awk -v t="$t" -v d="$d" -v h="$h" 'BEGIN { printf " %.2f (%.2f×, %.2f) |", t, d / t, t / h }'
			else
				printf ' - |'
			fi
		done
		echo
	done
} >"$L/uvm_prefetch.md"
cat "$L/uvm_prefetch.md"
for pat in seq stride random pingpong pipeline; do
	c=$(val default $pat 2)
	same=1
	for m in $modes; do [ "$(val "$m" $pat 2)" = "$c" ] || same=0; done
	[ -n "$c" ] && [ $same = 1 ] && ok "uvm_prefetch $pat: identical checksum in every mode" ||
		nok "uvm_prefetch $pat: checksums differ across modes ($(for m in $modes; do printf '%s=%s ' "$m" "$(val "$m" $pat 2)"; done))"
done
# Goals (from the issue): best policy ≥ 2× default on seq/stride, within
# 10 % of hand-written; never slower than default on random.
for pat in seq stride; do
	d=$(val default $pat 1); h=$(val hand $pat 1); best=""
	for p in $POLICIES; do
		t=$(val "$p" $pat 1)
		[ -n "$t" ] && { [ -z "$best" ] || awk -v a="$t" -v b="$best" 'BEGIN{exit !(a<b)}'; } && best=$t
	done
	[ -n "$best" ] && [ -n "$d" ] && awk -v t="$best" -v d="$d" 'BEGIN{exit !(d/t>=2)}' &&
		ok "goal $pat: best policy ≥ 2× default UVM ($d ms → $best ms)" ||
		nok "goal $pat: best policy < 2× default UVM ($d ms → ${best:-?} ms)"
	[ -n "$best" ] && [ -n "$h" ] && awk -v t="$best" -v h="$h" 'BEGIN{exit !(t<=h*1.1)}' &&
		ok "goal $pat: within 10 % of hand-written ($h ms vs $best ms)" ||
		nok "goal $pat: more than 10 % slower than hand-written ($h ms vs ${best:-?} ms)"
done
d=$(val default random 1)
for p in $POLICIES; do
	t=$(val "$p" random 1)
	[ -n "$t" ] && [ -n "$d" ] && awk -v t="$t" -v d="$d" 'BEGIN{exit !(t<=d*1.05)}' &&
		ok "goal random: gx_$p not slower than default ($d ms vs $t ms)" ||
		nok "goal random: gx_$p slower than default ($d ms vs ${t:-?} ms)"
done
exit 0
