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
# Issue 20: an 8 MB object whose 500 programs each call one 1M-insn
# subprogram flattened to 4 GB; the loader now stops at max(2^20, 4 x its
# code) instructions, under a 512 MiB address-space limit.
bomb=$(mktemp --suffix=.bpf.o)
"$B/tests/devbpf/gen_bpf_bomb" "$bomb" 500 1048000
check "bpf verify of an object flattening past its budget: one line, exit 1, within 512 MiB" \
	"(ulimit -v 524288; ! $G bpf verify $bomb) && $G bpf verify $bomb 2>&1 | grep -q \"program 'p4' brings the object past 4196000 instructions once every program has its own copy of the subprograms it calls\""
rm -f "$bomb"
check "bpf verify without a file prints usage" "! $G bpf verify && $G bpf verify 2>&1 | grep -q usage"
check "bpf jit exists in the table" "$G bpf jit $L/good.bpf.o --target native >/dev/null 2>&1; [ \$? -ne 2 ]"
