#!/usr/bin/env bash
# GPU: block scheduling never loses (issue 40, docs/blocksched.md "The
# guard"). Run by tests/gpu/run.sh or alone from the repository root over a
# tree built with `make gpu-prep`; under 240 s, every step with its own
# time limit. Prints ok/not ok lines, `| ` table rows and `bench: ` lines;
# logs go to $OUT/schedguard/.
#  1. bench/sched_bench on the kernels nobody tuned for (SCHED_BENCH_SET=
#     untuned): triangular (work growing with the block index), scattered
#     30x-heavy blocks, a power-law CSR SpMV in both row orders, a streaming
#     saxpy; native vs each shipped policy's copy, and each policy guarded
#     as the launcher runs it (over the launches after its exploration), the
#     ideal order (the same kernel natively, blocks heaviest first), the
#     launches the guard spent exploring; outputs bit for bit. Goal lines:
#     every guarded policy <= 1 % slower than native; a guarded policy wins
#     >= 10 % on a kernel where the ideal order wins >= 20 %.
#  2. Through the shim (tests/gpu/schedguard_app.py, CuPy RawKernels as
#     PTX): the same kinds of kernels, 300 launches each, natively (twice:
#     the noise between two processes) and under --sched adaptive, greedy
#     and max_steals: checksums equal, and per kernel the median launch after
#     the guard's exploration against native (goal <= 1 % for adaptive); the
#     guard's decisions from `gpuext sched`.
#  3. cuFFT's work area (cufftMakePlan1d) natively, under --sched adaptive,
#     and under adaptive with no kernel selected (modules rewritten, no copy
#     launched): tells whether a difference comes from the rewrite or from
#     the copies.
set -u
ROOT=${GX_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$ROOT" || exit 1
B=${GX_BUILD:-build}
OUT=${OUT:-$B/gpu-out}
L=$OUT/schedguard
mkdir -p "$L"
L=$(cd "$L" && pwd)
PY=${PYTHON:-python3}
export PATH=$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1
export GPUEXT_CACHE_DIR=${GPUEXT_CACHE_DIR:-$B/cache}
if [ -z "${GPUEXT_SHM_DIR:-}" ]; then
	export GPUEXT_SHM_DIR=/dev/shm/gpuext-schedguard-$$
	trap 'rm -rf "$GPUEXT_SHM_DIR"' EXIT
fi
P=$(cd "$B/share/gpuext/sched" 2>/dev/null && pwd)
GX=$B/bin/gpuext
ok() { echo "ok - schedguard: $*"; }
nok() { echo "not ok - schedguard: $*"; }
T0=$(date +%s)
elapsed() { echo $(($(date +%s) - T0)); }
BUDGET=${GX_SG_BUDGET:-230}
lim() {
	local left=$((BUDGET - $(elapsed)))
	[ "$left" -gt "$1" ] && echo "$1" || echo "$left"
}
have_time() { [ "$(lim "$1")" -gt 5 ] || { nok "$2: skipped, past the script's $BUDGET s budget"; return 1; }; }

# ---- 1. sched_bench, the untuned set ----
if [ -x "$B/bench/sched_bench" ] && [ -f "$B/bench/sched_kernels.ptx" ] && [ -n "$P" ]; then
	timeout -k 5 "$(lim 110)" env CUDA_CACHE_DISABLE=1 SCHED_BENCH_SET=untuned "$B/bench/sched_bench" \
		"$B/bench/sched_kernels.ptx" "$P" "${GX_REPEATS:-15}" >"$L/sched_bench.md" 2>"$L/sched_bench.err"
	rc=$?
	grep -E '^(\||bench: |ok |not ok |Kernels nobody)' "$L/sched_bench.md" |
		sed 's/^ok - /ok - schedguard: /; s/^not ok - /not ok - schedguard: /'
	[ $rc -eq 0 ] && ok "sched_bench (untuned set) ran ($(elapsed) s so far)" ||
		nok "sched_bench exited $rc (124: past its limit): $(tail -2 "$L/sched_bench.err" | tr '\n' ' ')"
else
	nok "$B/bench/sched_bench, sched_kernels.ptx or the policies not built (make gpu-prep)"
fi

# ---- 2. through the shim ----
app=tests/gpu/schedguard_app.py
export CUPY_COMPILE_WITH_PTX=1 CUPY_CACHE_DIR=$L/cupy-cache
# one run: $1 tag, then the command's prefix (empty: native)
one() {
	local tag=$1
	shift
	have_time 20 "the app ($tag)" || return 1
	timeout -k 5 "$(lim 45)" "$@" "$PY" "$app" >"$L/app-$tag.json" 2>"$L/app-$tag.log"
	local rc=$?
	[ $rc -eq 0 ] || { nok "the app ($tag) exited $rc: $(grep -v '^gpuext' "$L/app-$tag.log" | tail -2 | tr '\n' ' ')"; return 1; }
}
if ! "$PY" -c 'import cupy' >/dev/null 2>&1; then
	nok "CuPy is not installed for $PY: the shim's part is skipped"
else
	# the kernels: natively twice, under three policies (their schedule
	# logs); cuFFT in processes of its own (the shim may take a while to
	# rewrite and JIT its modules): natively, under adaptive, and under
	# adaptive with no kernel selected
	one native env APP_PART=kernels
	one native2 env APP_PART=kernels
	# the shim by LD_LIBRARY_PATH (gpuext-run --sched would name the
	# schedule log itself)
	SHIM_LLP="$(cd "$B/lib" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	for p in adaptive greedy max_steals; do
		rm -f "$L/$p.sched.log"
		one "$p" env APP_PART=kernels LD_LIBRARY_PATH="$SHIM_LLP" GPUEXT_LOG=info GPUEXT_SCHED="$P/$p.bpf.o" \
			GPUEXT_SCHED_LOG="$L/$p.sched.log"
	done
	one fft-native env APP_PART=cufft
	one fft-adaptive env APP_PART=cufft LD_LIBRARY_PATH="$SHIM_LLP" GPUEXT_LOG=info GPUEXT_SCHED="$P/adaptive.bpf.o"
	one fft-none env APP_PART=cufft LD_LIBRARY_PATH="$SHIM_LLP" GPUEXT_LOG=info \
		GPUEXT_SCHED="$P/adaptive.bpf.o,kernels=__gx_no_kernel__"
	# per kernel: launches the guard explored (its log lines, in launch
	# order: one kernel name may come with several grids), then the median
	# of the launches after them against native's same launches
	"$PY" - "$L" <<'EOF'
import json, os, re, statistics, sys
L = sys.argv[1]
def load(t):
    try:
        return json.load(open(os.path.join(L, 'app-%s.json' % t)))
    except (OSError, ValueError):
        return None
nat, nat2 = load('native'), load('native2')
if not nat:
    print('not ok - schedguard: no native run of the app'); sys.exit(0)
names = list(nat['kernels'])
kname = {'triangular': 'segsum', 'scattered': 'segsum', 'spmv_asc': 'spmv', 'saxpy': 'saxpy'}
def explored(tag):
    """launches each workload spent in its first exploration, from the log"""
    seen, out = {}, {}
    try:
        lines = open(os.path.join(L, '%s.sched.log' % tag)).read().splitlines()
    except OSError:
        return out
    for l in lines:
        m = re.match(r'D (\S+) guard: its copy .* exploring took (\d+) launches', l)
        if not m:
            continue
        k = m.group(1)
        i = seen.get(k, 0)
        seen[k] = i + 1
        ws = [w for w in names if kname[w] == k]
        if i < len(ws) and ws[i] not in out:
            out[ws[i]] = int(m.group(2))
    return out
def med(v):
    return statistics.median(v) if v else float('nan')
print('| kernel | native us | native, 2nd process | ' + ' | '.join('%s (explored)' % p for p in ('adaptive', 'greedy', 'max_steals')) + ' |')
print('|---|---|---|---|---|---|')
fails = []
for w in names:
    base = nat['kernels'][w]['ms']
    row = ['%s' % w, '%.1f' % (1e3 * med(base[64:]))]
    noise = 0.0
    if nat2:
        noise = 100 * (med(nat2['kernels'][w]['ms'][64:]) / med(base[64:]) - 1)
        row.append('%+.2f %%' % noise)
    else:
        row.append('')
    # two processes differ by themselves: a bound below that is not measurable
    bound = max(1.0, abs(noise))
    for p in ('adaptive', 'greedy', 'max_steals'):
        r = load(p)
        if not r:
            row.append('no run'); continue
        e = explored(p).get(w, 64)
        ms = r['kernels'][w]['ms']
        pct = 100 * (med(ms[e:]) / med(base[e:]) - 1)
        same = r['kernels'][w]['sum'] == nat['kernels'][w]['sum']
        row.append('%+.2f %% (%d)%s' % (pct, e, '' if same else ' OUTPUT DIFFERS'))
        print('bench: schedguard app %s %s %+.2f %% vs native, median launch after its %d exploring launches' % (w, p, pct, e))
        if not same:
            fails.append('%s under %s: checksum differs' % (w, p))
        if p == 'adaptive':
            print('%s - schedguard: app %s under adaptive, after its %d exploring launches: %+.2f %% vs native '
                  '(goal <= 1 %%, or the two native processes\' own %.2f %%)' % ('ok' if pct <= bound else 'not ok', w, e, pct, abs(noise)))
    print('| ' + ' | '.join(row) + ' |')
print('%s - schedguard: the app\'s outputs under every policy equal native\'s%s' % ('not ok' if fails else 'ok', (': ' + '; '.join(fails)) if fails else ''))
# cuFFT's work areas
print('| cuFFT plan (nx/type/batch) | native | adaptive | adaptive, no kernel selected |')
print('|---|---|---|---|')
runs = {t: load('fft-' + t) for t in ('native', 'adaptive', 'none')}
diff = []
for k in (runs['native'] or {}).get('cufft', {}):
    v = [str((runs[t] or {}).get('cufft', {}).get(k, 'no run')) for t in ('native', 'adaptive', 'none')]
    print('| %s | %s |' % (k, ' | '.join(v)))
    if v[1] != v[0]:
        diff.append(k)
print('%s - schedguard: cuFFT reports the same work areas and output under --sched adaptive as natively%s'
      % ('not ok' if diff else 'ok', (' (differ: ' + ', '.join(diff) + ')') if diff else ''))
EOF
	for p in adaptive greedy; do
		[ -s "$L/$p.sched.log" ] || continue
		"$GX" sched "$L/$p.sched.log" >"$L/$p.sched.txt" 2>&1
		if grep -q 'guard: its copy' "$L/$p.sched.txt"; then
			ok "gpuext sched ($p): the guard's decisions and what exploring cost"
		else
			nok "gpuext sched ($p): no guard decision: $(head -3 "$L/$p.sched.txt" | tr '\n' ' ')"
		fi
		grep 'guard: \|launched as' "$L/$p.sched.txt" | head -12 | sed 's/^/# /'
	done
	# the work-area difference's suspects: modules the shim rewrote with
	# copies, and those of them whose SASS the driver's JIT replaced (PTX
	# carried by a cubin); the app's own CuPy module is one of them
	for t in fft-native fft-none fft-adaptive; do
		[ -f "$L/app-$t.log" ] || continue
		echo "# $t: $(grep -c 'persistent copies), reloaded' "$L/app-$t.log") modules rewritten with copies," \
			"$(grep -c 'persistent copies), reloaded .*carried by its cubin' "$L/app-$t.log") from the PTX their cubin carries"
	done
	grep 'carried by its cubin\|fft' "$L/app-fft-none.log" 2>/dev/null | head -6 | sed 's/^/# fft-none: /'
fi
echo "# schedguard.sh took $(elapsed) s"
