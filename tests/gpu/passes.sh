#!/usr/bin/env bash
# GPU check of the ptx-rewrite passes (run by tests/gpu/run.sh on the H200).
#  1. bench/hook_overhead: the kernels of bench/hook_kernels.cu rewritten by
#     every pass (entry+exit with the empty handler elided, called, a probe
#     reading the whole context inlined / called; a policy reading two fields;
#     mem and all hooks called / probe; persistent workers static/dynamic and
#     with entry/exit), outputs compared bit for bit with the original, median
#     times, ratios, registers and local bytes per kernel, JIT times; then the
#     divergence checks (two lane groups of a warp never see each other's
#     context, called and inlined handlers).
#  2. Through the shim: tests/gpu/passes_app.cu (PTX only, so the driver JITs
#     it via the shim's rewrite) with GPUEXT_HOOKS=entry,exit / mem / all
#     (sites calling an empty handler: GPUEXT_STUBS defaults to call)
#     must print the same checksums as without the shim; and with
#     GPUEXT_PERSISTENT=dynamic / static (alone and with all hooks), where the
#     kernels the transform accepts launch as persistent workers (the log
#     must show at least one "launched as" line).
# Logs and the table go to $OUT (hook_overhead.md, passes-*.txt).
set -u
cd "${GX_ROOT:-$(dirname "$0")/../..}"
B=${GX_BUILD:-build}
OUT=${OUT:-$B/gpu-out}
mkdir -p "$OUT"
export PATH=$PATH:/usr/local/cuda/bin

if [ -x "$B/bench/hook_overhead" ] && [ -f "$B/bench/hook_kernels.ptx" ]; then
	CUDA_CACHE_DISABLE=1 "$B/bench/hook_overhead" "$B/bench/hook_kernels.ptx" "${GX_REPEATS:-21}" "$B/bench" |
		tee "$OUT/hook_overhead.md"
else
	echo "not ok - passes: $B/bench/hook_overhead not built"
fi
# Registers and resident blocks per SM of tool_bench's kernels with a tool's
# handler at its hook (the driver JIT's figures; nothing is run), rewritten
# as the shim does: the originals' registers given, so hooked kernels are
# capped (GX_PTX_REG_CAP=0 to see them uncapped: launchlate 38 registers).
for t in launchlate:entry threadhist:block; do
	n=${t%:*} h=${t#*:}
	if [ -x "$B/bench/hook_overhead" ] && [ -f "$B/bench/tool_$n.ptx" ] && [ -f "$B/bench/tool_bench.ptx" ]; then
		CUDA_CACHE_DISABLE=1 "$B/bench/hook_overhead" --regs "$B/bench/tool_bench.ptx" \
			"$B/bench/tool_$n.ptx" "$h:gxp_$n" 256 | tee -a "$OUT/hook_regs.md"
	fi
done

app=$OUT/passes_app
if ! nvcc -gencode arch=compute_90,code=compute_90 -o "$app" tests/gpu/passes_app.cu \
	>"$OUT/passes_app.build.txt" 2>&1; then
	echo "not ok - passes: building passes_app: $(head -1 "$OUT/passes_app.build.txt")"
	exit 0
fi
if ! CUDA_CACHE_DISABLE=1 "$app" >"$OUT/passes-native.txt" 2>&1; then
	echo "not ok - passes: passes_app without the shim: $(tail -1 "$OUT/passes-native.txt")"
	exit 0
fi
echo "ok - passes: passes_app runs without the shim"
if [ ! -f "$B/lib/libcuda.so.1" ]; then
	echo "not ok - passes: shim $B/lib/libcuda.so.1 not built"
	exit 0
fi
for h in none entry,exit mem all; do
	tag=${h//,/+}
	env CUDA_CACHE_DISABLE=1 LD_LIBRARY_PATH="$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		GPUEXT_LOG=debug $([ "$h" != none ] && echo GPUEXT_HOOKS=$h) \
		"$app" >"$OUT/passes-$tag.txt" 2>"$OUT/passes-$tag.log"
	rc=$?
	if [ $rc -ne 0 ]; then
		echo "not ok - passes: shim GPUEXT_HOOKS=$h: exit $rc: $(tail -1 "$OUT/passes-$tag.log")"
	elif cmp -s "$OUT/passes-native.txt" "$OUT/passes-$tag.txt"; then
		echo "ok - passes: shim GPUEXT_HOOKS=$h: same outputs as without the shim"
	else
		echo "not ok - passes: shim GPUEXT_HOOKS=$h: outputs differ"
		diff "$OUT/passes-native.txt" "$OUT/passes-$tag.txt" | head -10
	fi
	grep -iE 'hook|rewrit|passed through' "$OUT/passes-$tag.log" | head -3 | sed 's/^/# /'
done

# Persistent workers through the shim (GPUEXT_PERSISTENT, shim/persist.c).
for pm in dynamic static dynamic+all; do
	tag=persist-${pm/+/-}
	mode=${pm%+all}
	hooks=; [ "$pm" = dynamic+all ] && hooks=GPUEXT_HOOKS=all
	env CUDA_CACHE_DISABLE=1 LD_LIBRARY_PATH="$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		GPUEXT_LOG=info GPUEXT_PERSISTENT=$mode $hooks \
		"$app" >"$OUT/passes-$tag.txt" 2>"$OUT/passes-$tag.log"
	rc=$?
	nl=$(grep -c 'launched as' "$OUT/passes-$tag.log")
	if [ $rc -ne 0 ]; then
		echo "not ok - passes: shim GPUEXT_PERSISTENT=$pm: exit $rc: $(tail -1 "$OUT/passes-$tag.log")"
	elif ! cmp -s "$OUT/passes-native.txt" "$OUT/passes-$tag.txt"; then
		echo "not ok - passes: shim GPUEXT_PERSISTENT=$pm: outputs differ"
		diff "$OUT/passes-native.txt" "$OUT/passes-$tag.txt" | head -10
	elif [ "$nl" -eq 0 ]; then
		echo "not ok - passes: shim GPUEXT_PERSISTENT=$pm: same outputs, but no kernel launched persistent"
	else
		echo "ok - passes: shim GPUEXT_PERSISTENT=$pm: same outputs as without the shim, $nl kernels launched persistent"
	fi
	grep -E 'persistent' "$OUT/passes-$tag.log" | head -8 | sed 's/^/# /'
done
