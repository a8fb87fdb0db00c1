#!/usr/bin/env bash
# `gpuext bpf show|verify|dump|jit`: exit codes, messages, JSON, facts.
B=${BUILD:-build}
G=$B/bin/gpuext
V=$B/tests/devbpf/verifier
L=$B/tests/devbpf/loader
check() { if eval "$2" >/dev/null 2>&1; then echo "ok - $1"; else echo "not ok - $1: $2"; fi; }
check "bpf help lists the subcommands" "$G bpf help | grep -q verify && $G bpf help | grep -q jit"
check "bpf verify of a good object exits 0" "$G bpf verify $L/good.bpf.o"
check "bpf verify prints one ok line per program" "[ \$($G bpf verify $L/good.bpf.o | grep -c ': ok (') -eq 4 ]"
check "bpf verify of a rejected program exits 1" "! $G bpf verify $V/simt.bpf.o"
check "rejection reads 'prog NAME insn N: reason'" \
	"$G bpf verify $V/simt.bpf.o | grep -q 'REJECTED: prog simt_branch_laneid insn [0-9]*: branch on lane-varying value'"
check "bpf verify --json is JSON with per-program verdicts" \
	"$G --json bpf verify $V/hooks.bpf.o | python3 -c 'import json,sys; d=json.load(sys.stdin); assert len(d[\"programs\"])==7; assert sum(not p[\"verified\"] for p in d[\"programs\"])==2'"
check "bpf show --json lists maps and programs" \
	"$G --json bpf show $L/good.bpf.o | python3 -c 'import json,sys; d=json.load(sys.stdin); assert len(d[\"maps\"])==8 and d[\"programs\"][1][\"target\"]==\"vec_add*\"'"
check "bpf dump shows facts and lane-varying marks" \
	"$G bpf dump $V/simt.bpf.o simt_varying_data_ok | grep -q 'call gdev_laneid#4099 *; lane-varying' && $G bpf dump $V/simt.bpf.o simt_varying_data_ok | grep -q 'VARYING'"
check "bpf dump of a rejected program exits 1 with the reason" \
	"! $G bpf dump $V/cfg.bpf.o cfg_no_r0 && $G bpf dump $V/cfg.bpf.o cfg_no_r0 | grep -q 'R0 not set before exit'"
check "bpf dump of an unknown program fails" "! $G bpf dump $L/good.bpf.o nosuch"
check "bpf verify of a missing file fails with a message" "! $G bpf verify /nonexistent.bpf.o && $G bpf verify /nonexistent.bpf.o 2>&1 | grep -q 'cannot load'"
check "bpf verify of a malformed object explains why with -v" "$G -v bpf verify $L/bad-2.bpf.o 2>&1 | grep -q \"unknown attribute 'frobnicate'\""
check "bpf verify without a file prints usage" "! $G bpf verify && $G bpf verify 2>&1 | grep -q usage"
check "bpf jit exists in the table" "$G bpf jit $L/good.bpf.o --target native >/dev/null 2>&1; [ \$? -ne 2 ]"
