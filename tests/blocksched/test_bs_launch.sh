#!/usr/bin/env bash
# blocksched's launch side through the shim against the fake driver
# (tests/blocksched/test_bs_launch.c), in each mode: GPUEXT_PERSISTENT=1
# (claim, no policy) and static, and GPUEXT_SCHED with the shipped greedy
# policy (kernels=k_ok, a knob, the schedule log) and fixed_work (static);
# then `gpuext sched` on the log (text, --json, --trace), knob errors, a
# policy that cannot attach, and a pass under valgrind.
set -u
# shellcheck source=tests/blocksched/fake_lib.sh
. "$(dirname "$0")/fake_lib.sh"

for pm in claim static; do
	run env GPUEXT_PERSISTENT=$([ $pm = claim ] && echo 1 || echo static) timeout 60 \
		"$B/tests/blocksched/test_bs_launch" $pm | sed "s/^\(not \)\?ok - /&[$pm] /"
	[ "${PIPESTATUS[0]}" -lt 128 ] || nok "test_bs_launch ($pm) crashed"
done

# A policy: greedy on k_ok only, with a knob of the launcher's (chunks) and
# the schedule log; unguarded (gx_sched_guard=0), so that every launch is
# the copy's (the guard's own runs are below).
log=$tmp/sched.log
run env GPUEXT_SCHED="$P/greedy.bpf.o,kernels=k_ok,gx_sched_chunks=8,gx_sched_guard=0" GPUEXT_SCHED_LOG="$log" GPUEXT_STATS_MS=20 timeout 60 \
	"$B/tests/blocksched/test_bs_launch" sched "$log" 2>"$tmp/g.err" | sed "s/^\(not \)\?ok - /&[greedy] /"
[ "${PIPESTATUS[0]}" -lt 128 ] || nok "test_bs_launch (greedy) crashed"
run env GPUEXT_SCHED="$P/fixed_work.bpf.o,kernels=k_ok,gx_sched_guard=0" timeout 60 \
	"$B/tests/blocksched/test_bs_launch" sched-static | sed "s/^\(not \)\?ok - /&[fixed_work] /"
[ "${PIPESTATUS[0]}" -lt 128 ] || nok "test_bs_launch (fixed_work) crashed"

# The adaptive policy's guard over its three arms in the fake's time model
# (the original 200 us): the claiming copy fastest, the static copy fastest
# (vadd's case), and both copies slower.
for w in copy:100:150 static:250:150 orig:300:280; do
	IFS=: read -r want pw ps <<<"$w"
	run env GPUEXT_SCHED="$P/adaptive.bpf.o,kernels=k_ok" FAKECUDA_KERNEL_US=200 FAKECUDA_PW_US=$pw \
		FAKECUDA_PS_US=$ps timeout 60 "$B/tests/blocksched/test_bs_launch" guard "$want" |
		sed "s/^\(not \)\?ok - /&[adaptive, copy $pw us, static $ps us] /"
	[ "${PIPESTATUS[0]}" -lt 128 ] || nok "test_bs_launch (guard) crashed"
done

# An application ahead of the GPU: bursts of launches find every timing pair
# in flight; the guard still decides (the copy, 100 us against 200 us).
run env GPUEXT_SCHED="$P/adaptive.bpf.o,kernels=k_ok" FAKECUDA_KERNEL_US=200 FAKECUDA_PW_US=100 \
	FAKECUDA_PS_US=150 timeout 60 "$B/tests/blocksched/test_bs_launch" async |
	sed "s/^\(not \)\?ok - /&[adaptive, ahead of the GPU] /"
[ "${PIPESTATUS[0]}" -lt 128 ] || nok "test_bs_launch (async) crashed"

# Timings that never come: the original runs, and the log says why.
run env GPUEXT_SCHED="$P/adaptive.bpf.o,kernels=k_ok" FAKECUDA_ELAPSED_FAIL=1 timeout 60 \
	"$B/tests/blocksched/test_bs_launch" untimed | sed "s/^\(not \)\?ok - /&[adaptive, no timing] /"
[ "${PIPESTATUS[0]}" -lt 128 ] || nok "test_bs_launch (untimed) crashed"

# Every shipped policy is guarded by default: greedy's copy (300 us) slower
# than the original (200 us) is given up; unguarded, the copy runs and
# gpuext sched says so.
run env GPUEXT_SCHED="$P/greedy.bpf.o,kernels=k_ok" FAKECUDA_KERNEL_US=200 FAKECUDA_PW_US=300 \
	FAKECUDA_PS_US=280 timeout 60 "$B/tests/blocksched/test_bs_launch" guard orig |
	sed "s/^\(not \)\?ok - /&[greedy, guarded by default, copy 300 us] /"
[ "${PIPESTATUS[0]}" -lt 128 ] || nok "test_bs_launch (greedy guard) crashed"
ulog=$tmp/unguarded.log
run env GPUEXT_SCHED="$P/max_steals.bpf.o,kernels=k_ok,gx_sched_guard=0" GPUEXT_SCHED_LOG="$ulog" timeout 60 \
	"$B/tests/blocksched/test_bs_launch" sched >"$tmp/u.out" 2>&1
"$G" sched "$ulog" 2>&1 | grep -q 'launched as __gx_pw_k_ok.*UNGUARDED (gx_sched_guard=0' &&
	ok "gx_sched_guard=0: gpuext sched says the kernel runs unguarded" ||
	nok "gx_sched_guard=0: $("$G" sched "$ulog" 2>&1 | head -3 | tr '\n' ' ')"
"$G" sched "$log" 2>&1 | grep -q 'UNGUARDED' && ok "an unguarded greedy run is reported as such" ||
	nok "gpuext sched on the unguarded greedy run: no UNGUARDED line"

# A global-mode capture while the guard and the device runtime's drainer
# query their timings (kernels of 20 ms keep the pairs in flight).
run env GPUEXT_SCHED="$P/adaptive.bpf.o,kernels=k_ok" FAKECUDA_KERNEL_US=20000 GPUEXT_FLUSH_MS=5 timeout 60 \
	"$B/tests/blocksched/test_bs_launch" capture | sed "s/^\(not \)\?ok - /&[adaptive, capture] /"
[ "${PIPESTATUS[0]}" -lt 128 ] || nok "test_bs_launch (capture) crashed"

run env GPUEXT_SCHED="$P/adaptive.bpf.o,kernels=k_ok" timeout 60 \
	"$B/tests/blocksched/test_bs_launch" capture-first | sed "s/^\(not \)\?ok - /&[adaptive, capture first] /"
[ "${PIPESTATUS[0]}" -lt 128 ] || nok "test_bs_launch (capture first) crashed"

# gpuext sched: the log read back.
if "$G" sched "$log" >"$tmp/rep.txt" 2>"$tmp/rep.err" && grep -q '^k_ok' "$tmp/rep.txt" &&
	grep -q 'launched as __gx_pw_k_ok' "$tmp/rep.txt"; then
	ok "gpuext sched: the kernel, its decision and its sampled launches"
else
	nok "gpuext sched: $(head -3 "$tmp/rep.txt" "$tmp/rep.err" | tr '\n' ' ')"
fi
if "$G" --json sched "$log" >"$tmp/rep.json" 2>"$tmp/rep.err" &&
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); k=[x for x in d["kernels"] if x["name"]=="k_ok"][0]; L=[l for l in k["launches"] if l["nth"]==0][0]; assert L["units_per_sm"]=={"min":7,"mean":10.0,"max":13} and L["steals"]==3 and L["workers"]==3 and L["units"]==20, L' "$tmp/rep.json"; then
	ok "gpuext --json sched: units per SM 7/10/13, 3 steals of the sampled launch"
else
	nok "gpuext --json sched: $(head -c 300 "$tmp/rep.json") $(head -2 "$tmp/rep.err")"
fi
if "$G" sched --trace "$tmp/tr.json" "$log" >/dev/null 2>&1 &&
	python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["traceEvents"]; x=[v for v in e if v["ph"]=="X"]; m=[v for v in e if v.get("name")=="thread_name"]; assert len(x)>=3 and {v["args"]["name"] for v in m}>={"SM 0","SM 1"}' "$tmp/tr.json"; then
	ok "gpuext sched --trace: a track per SM, a slice per worker"
else
	nok "gpuext sched --trace: $(head -c 300 "$tmp/tr.json")"
fi
"$G" sched "$tmp/none.log" >/dev/null 2>"$tmp/e.err" && nok "gpuext sched on a missing log succeeded" ||
	ok "gpuext sched on a missing log fails: $(head -1 "$tmp/e.err")"

# Knobs: an unknown one refuses the policy (and the kernels run unchanged);
# a launcher knob needs '='.
run env GPUEXT_SCHED="$P/max_steals.bpf.o,kernels=k_ok,max_stealz=2" timeout 60 \
	"$B/tests/blocksched/test_bs_launch" sched >"$tmp/k.out" 2>"$tmp/k.err"
grep -q "knob 'max_stealz': no such setting" "$tmp/k.out"; kn=$?
grep -q 'not ok - launch: the copy is launched' "$tmp/k.out"; nc=$?
[ $kn -eq 0 ] && [ $nc -eq 0 ] && ok "an unknown knob: the policy is not attached, kernels run unchanged" ||
	nok "unknown knob: $(grep -m2 'knob\|policy' "$tmp/k.out" | tr '\n' ' ')"
run env GPUEXT_SCHED="$P/max_steals.bpf.o,kernels=k_ok,max_steals=2,gx_sched_guard=0" timeout 60 \
	"$B/tests/blocksched/test_bs_launch" sched >"$tmp/k2.out" 2>&1
grep -q 'policy max_steals: knobs max_steals=2' "$tmp/k2.out" && ! grep -q '^not ok' "$tmp/k2.out" &&
	ok "a knob of the policy is applied (max_steals=2) and its launches pass" ||
	nok "max_steals=2: $(grep -m3 'not ok\|knob' "$tmp/k2.out" | tr '\n' ' ')"

# The H200's situation (tests/gpu/blocksched.sh): no LLVM there, so the shim
# sits in a folder without libgxjit.so and every policy must come from a JIT
# cache filled as `make gpu-prep` does (one sm_90 device: policies are JIT'd
# for the lowest arch of the process's GPUs).
mkdir -p "$tmp/nojit/lib" "$tmp/nojit/cache"
cp -P "$B"/lib/libcuda.so* "$tmp/nojit/lib/"
if "$G" tools prepare --cache-dir "$tmp/nojit/cache" --sm 90 "$P"/*.bpf.o >"$tmp/nojit/prep.txt" 2>&1; then
	for p in greedy adaptive max_steals latency_budget fixed_work; do
		mode=sched
		[ $p = fixed_work ] && mode=sched-static
		env -u GPUEXT_JITLIB LD_LIBRARY_PATH="$tmp/nojit/lib" GPUEXT_REAL_LIBCUDA="$FAKE" FAKECUDA_DEVICES=1 \
			GPUEXT_LOG=info GPUEXT_CACHE_DIR="$tmp/nojit/cache" GPUEXT_SHM_DIR="$tmp/shm" \
			GPUEXT_SCHED="$P/$p.bpf.o,kernels=k_ok" timeout 60 "$B/tests/blocksched/test_bs_launch" $mode \
			>"$tmp/nojit/$p.out" 2>&1
		grep -q "policy $p: from the JIT cache" "$tmp/nojit/$p.out" &&
			grep -q 'ok - launch: the copy is launched' "$tmp/nojit/$p.out" &&
			! grep -q 'not ok - launch: \(the copy is launched\|descriptor\|first launch\)' "$tmp/nojit/$p.out" &&
			ok "$p without the JIT library: from a prepared cache, the copy launched" ||
			nok "$p without the JIT library: $(grep -m3 'JIT\|not ok\|attached' "$tmp/nojit/$p.out" | tr '\n' ' ')"
	done
else
	nok "gpuext tools prepare of the policies: $(tail -2 "$tmp/nojit/prep.txt" | tr '\n' ' ')"
fi

if command -v valgrind >/dev/null; then
	run env GPUEXT_PERSISTENT=1 timeout 180 valgrind -q --error-exitcode=99 --leak-check=full \
		--errors-for-leak-kinds=definite "$B/tests/blocksched/test_bs_launch" claim >"$tmp/vg.out" 2>"$tmp/vg.err"
	[ $? -eq 0 ] && ok "test_bs_launch under valgrind: no invalid access, no definite leak" ||
		nok "test_bs_launch under valgrind: $(grep -E '^==|not ok' "$tmp/vg.out" "$tmp/vg.err" | head -5 | tr '\n' ' ')"
fi
