#!/usr/bin/env bash
# Link test: compile tests/ptx-rewrite/link/policy.c to PTX with clang-19 (LLVM's
# NVPTX back end, as the devbpf JIT does), link it into golden-passes/edge.ptx
# with bindings (test_link checks the text), then ptxas every linked module.
set -u
BUILD=${BUILD:-build}
CLANG=${CLANG:-clang-19}
PTXAS=${PTXAS:-/usr/local/cuda/bin/ptxas}
W=$BUILD/ptx-passes/link
mkdir -p "$W"
if ! "$CLANG" --target=nvptx64-nvidia-cuda -march=sm_90 -S -O2 -I. -Iinclude -x c \
	tests/ptx-rewrite/link/policy.c -o "$W/policy.ptx" 2>"$W/clang.log"; then
	echo "not ok - link: clang NVPTX build of the policy failed: $(head -1 "$W/clang.log")"
	exit 1
fi
echo "ok - link: policy compiled by $CLANG to PTX"
"$BUILD/tests/ptx-rewrite/test_link" tests/ptx-rewrite/golden-passes/edge.ptx "$W/policy.ptx" "$W"
rc=$?
for f in linked capped devrt; do
	[ -f "$W/$f.ptx" ] || continue
	if "$PTXAS" -arch=sm_90 "$W/$f.ptx" -o /dev/null 2>"$W/$f.ptxas"; then
		echo "ok - link: ptxas accepts $f.ptx"
	else
		echo "not ok - link: ptxas $f.ptx: $(grep -m1 -i 'error\|fatal' "$W/$f.ptxas")"
	fi
done

# A policy using the application's globals and a device function by .extern
# (tests/ptx-rewrite/link/policy_globals.ptx): the policy must come after their
# declarations (a global declared after code is moved up, a function
# defined after it gets a prototype), or ptxas rejects the module.
G=$BUILD/bin/gpuext
LK=tests/ptx-rewrite/link
binds=(--policy-ptx $LK/policy_globals.ptx --bind entry:pol_count --bind exit:pol_keep
	--bind mem:pol_count)
# late-fn: app_tab's initialiser names app_helper (defined before it);
# late-var: names app_base, a global declared after code too (refused).
sed 's/app_tab\[4\] = {1, 2, 3, 4}/app_tab[4] = {app_helper, 2, 3, 4}/' \
	$LK/app_globals.ptx >"$W/app_late_fn.ptx"
sed 's/^\.global \.align 8 \.u64 app_tab\[4\] = {1, 2, 3, 4};/.global .align 8 .u64 app_base = 5;\n&/; s/app_tab\[4\] = {1,/app_tab[4] = {app_base,/' \
	$LK/app_globals.ptx >"$W/app_late_var.ptx"
for c in globals:$LK/app_globals.ptx late-fn:$W/app_late_fn.ptx; do
	n=${c%%:*} app=${c#*:}
	if ! "$G" ptx rewrite "${binds[@]}" "$app" -o "$W/app-$n.ptx" 2>"$W/app-$n.log"; then
		echo "not ok - link: app $n: rewrite failed: $(tail -1 "$W/app-$n.log")"
		rc=1
		continue
	fi
	if "$PTXAS" -arch=sm_90 "$W/app-$n.ptx" -o /dev/null 2>"$W/app-$n.ptxas"; then
		echo "ok - link: app $n: policy using application globals accepted by ptxas"
	else
		echo "not ok - link: app $n: ptxas: $(grep -m1 -i 'error\|fatal' "$W/app-$n.ptxas")"
		rc=1
	fi
	# the policy's .extern declarations are gone, the application's kept once
	if [ "$(grep -c 'app_counter;$' "$W/app-$n.ptx")" = 1 ] &&
		[ "$(grep -c '^\.global .* app_tab\[4\]' "$W/app-$n.ptx")" = 1 ] &&
		! grep -q '^\.extern' "$W/app-$n.ptx"; then
		echo "ok - link: app $n: one declaration of each application global"
	else
		echo "not ok - link: app $n: application globals declared twice or extern left"
		rc=1
	fi
done
if "$G" ptx rewrite "${binds[@]}" "$W/app_late_var.ptx" -o "$W/app-late-var.ptx" \
	2>"$W/app-late-var.log"; then
	echo "not ok - link: app late-var: accepted an order it cannot make"
	rc=1
elif grep -q 'policy PTX uses app_tab, whose initialiser names app_base declared after code' \
	"$W/app-late-var.log"; then
	echo "ok - link: app late-var: refused with the reason"
else
	echo "not ok - link: app late-var: $(tail -1 "$W/app-late-var.log")"
	rc=1
fi
exit $rc
