#!/usr/bin/env bash
# CLI front end: global flags, dispatch, errors with hints.
G=${BUILD:-build}/bin/gpuext
check() { if eval "$2" >/dev/null 2>&1; then echo "ok - $1"; else echo "not ok - $1: $2"; fi; }
check "gpuext --version prints a version" "$G --version | grep -q '^gpuext [0-9]'"
check "gpuext --help lists commands" "$G --help | grep -q version"
check "unknown command fails with a hint" "! $G frobnicate && $G frobnicate 2>&1 | grep -q \"try 'gpuext --help'\""
check "--json error is JSON" "$G --json frobnicate | grep -q '^{\"error\":'"
check "no command is an error" "! $G"
