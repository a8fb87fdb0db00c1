#!/usr/bin/env bash
# Run every test command given as an argument. A test prints "ok - NAME" or
# "not ok - NAME: why" lines; a command that exits non-zero without printing a
# failure, or prints nothing at all, counts as one failure (a test that cannot
# fail is a defect, and so is one that silently ran nothing).
# Ends with the line "N passed, N failed".
# GX_TEST_FILTER=regex runs only matching commands; GX_TEST_TIMEOUT (s) bounds each.
set -u
# The shim compiles rewritten modules with ptxas (shim/cubin_ptxas.c); the
# fake driver's "cubins" are its PTX behind a marker, so the tests' ptxas is
# the fake one unless a test names another (test_cubin_cache.sh runs the
# real one too).
export GPUEXT_CUBIN_PTXAS=${GPUEXT_CUBIN_PTXAS:-$PWD/tests/shim/fake-ptxas.sh}
pass=0 fail=0
failures=()
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for t in "$@"; do
	if [ -n "${GX_TEST_FILTER:-}" ] && ! [[ "$t" =~ $GX_TEST_FILTER ]]; then continue; fi
	name=$(basename "$t")
	printf '== %s\n' "$name"
	timeout -k 10 "${GX_TEST_TIMEOUT:-900}" $t >"$log" 2>&1
	rc=$?
	p=$(grep -c '^ok - ' "$log")
	f=$(grep -c '^not ok - ' "$log")
	if [ "$f" -gt 0 ] || [ "${GX_TEST_VERBOSE:-0}" = 1 ]; then
		grep -v '^ok - ' "$log" | tail -n 60
	fi
	while IFS= read -r l; do failures+=("$name: ${l#not ok - }"); done < <(grep '^not ok - ' "$log")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		tail -n 30 "$log"
		failures+=("$name: exited $rc without a failure line")
		f=1
	elif [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then
		tail -n 30 "$log"
		failures+=("$name: ran no check")
		f=1
	fi
	printf '   %d ok, %d failed\n' "$p" "$f"
	pass=$((pass + p)) fail=$((fail + f))
done
if [ "${#failures[@]}" -gt 0 ]; then
	echo "Failures:"
	printf '  %s\n' "${failures[@]}"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
