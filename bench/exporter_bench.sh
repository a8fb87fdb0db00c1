#!/usr/bin/env bash
# exporter_bench.sh — gpuext-exporter's start time and the time of a scrape
# of 100 processes (issue 38's goals: < 100 ms, < 20 ms). The processes are
# 100 `sleep`s with a stats file each, copied from a real tenant process
# (tn_app under the shim and the fake driver, with threadhist: 32 kernels'
# worth of slots, a tenant latency histogram) with pid and start time
# rewritten; and a tenant table. Not a test: prints figures.
# Usage: BUILD=build bench/exporter_bench.sh [N]
set -eu
B=${BUILD:-build}
ROOT=$PWD
N=${1:-100}
tmp=$(mktemp -d)
chmod 700 "$tmp"
sl=()
trap 'for p in "${sl[@]}"; do kill $p 2>/dev/null; done; kill $app 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir -m 700 "$tmp/shm"
env LD_LIBRARY_PATH="$ROOT/$B/lib" GPUEXT_REAL_LIBCUDA="$ROOT/$B/tests/shim/fakecuda/libcuda.so.1" \
	GPUEXT_CACHE_DIR="$tmp/cache" GPUEXT_SHM_DIR="$tmp/shm" GPUEXT_STATS_MS=100 GPUEXT_TOOL=threadhist \
	GPUEXT_TENANT=lc GPUEXT_TENANT_CLASS=lc FAKECUDA_KERNEL_US=100 "$B/tests/tenant/tn_app" lc 100000 1000 >/dev/null 2>&1 &
app=$!
for i in $(seq 50); do [ -e "$tmp/shm/$app-gpuext.stats" ] && break; sleep 0.1; done
sleep 0.3
cp "$tmp/shm/$app-gpuext.stats" "$tmp/one.stats"
for i in $(seq "$N"); do sleep 600 & sl+=($!); done
python3 - "$tmp/shm" "$tmp/one.stats" "${sl[@]}" <<'PY'
import os, struct, sys
d, one, pids = sys.argv[1], open(sys.argv[2], "rb").read(), sys.argv[3:]
for p in pids:
    b = bytearray(one)
    struct.pack_into("<I", b, 16, int(p))   # pid
    struct.pack_into("<Q", b, 24, 0)        # start time: not checked
    f = os.path.join(d, "%s-gpuext.stats" % p)
    open(f, "wb").write(b)
    os.chmod(f, 0o600)
PY
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 - "$ROOT/$B/bin/gpuext-exporter" "$port" "$tmp/shm" "$ROOT/deploy/exporter/threadhist.conf" <<'PY'
import subprocess, sys, time, urllib.request, statistics
exe, port, d, conf = sys.argv[1:]
url = "http://127.0.0.1:%s/metrics" % port
starts = []
for _ in range(10):
    t0 = time.perf_counter()
    p = subprocess.Popen([exe, "--listen", "127.0.0.1:" + port, "--dir", d, "--config", conf], stderr=subprocess.DEVNULL)
    while True:
        try:
            urllib.request.urlopen("http://127.0.0.1:%s/" % port, timeout=1).read()
            break
        except Exception:
            time.sleep(0.001)
    starts.append((time.perf_counter() - t0) * 1e3)
    if _ < 9:
        p.terminate(); p.wait()
body = urllib.request.urlopen(url).read().decode()
procs = [l for l in body.splitlines() if l.startswith("gpuext_exporter_processes ")]
scr, inner = [], []
for _ in range(50):
    t0 = time.perf_counter()
    b = urllib.request.urlopen(url).read().decode()
    scr.append((time.perf_counter() - t0) * 1e3)
    inner += [float(l.split()[1]) * 1e3 for l in b.splitlines() if l.startswith("gpuext_exporter_scrape_duration_seconds ")]
p.terminate(); p.wait()
print("exporter start to first answer: median %.1f ms, max %.1f ms (10 starts)" % (statistics.median(starts), max(starts)))
print("scrape of %s (%d series lines, %d KiB): median %.2f ms, p90 %.2f ms over HTTP; %.2f ms inside the exporter (median)" %
      (procs[0] if procs else "?", sum(1 for l in body.splitlines() if l and l[0] != "#"), len(body) >> 10,
       statistics.median(scr), sorted(scr)[44], statistics.median(inner)))
PY
