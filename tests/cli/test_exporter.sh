#!/usr/bin/env bash
# gpuext-exporter against running fake-driver applications and Debian's
# Prometheus (docs/metrics.md):
#  - an LC tenant (with the threadhist tool) and a BE tenant under gx_lcslo
#    publish their stats files; the exporter serves them on a free loopback
#    port; `gpuext exporter` (the CLI) runs the same program;
#  - prometheus, started here on loopback (a free port, its own folder),
#    scrapes every second; its HTTP API returns the expected series: the
#    process's launches, the tenants and classes, the LC latency histogram,
#    the device map of the config (threadhist), the exporter's own;
#  - `promtool check metrics` passes on an exposition;
#  - kill -9 of the BE process: its series are gone at the next scrape;
#  - robustness: garbage, truncated, mutated, foreign-pid, symlinked and
#    other-version files, a garbage tenant table and a garbage map file, a
#    process killed while publishing constantly: the exporter answers every
#    time, skips or refuses them, and its output stays valid.
set -u
B=${BUILD:-build}
ROOT=$PWD
tmp=$(mktemp -d)
chmod 700 "$tmp"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	[ -n "${GX_KEEP_TMP:-}" ] && echo "# kept $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT
ok() { echo "ok - exporter: $*"; }
nok() { echo "not ok - exporter: $*"; }
check() { if eval "$1"; then ok "$2"; else nok "$2${3:+: $3}"; fi; }
EXP=$ROOT/$B/bin/gpuext-exporter
APP=$ROOT/$B/tests/tenant/tn_app
HB=$ROOT/$B/hostbpf
SHM=$tmp/shm
mkdir -m 700 "$SHM"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
get() { python3 - "$1" <<'EOF'
import sys, urllib.request
try:
    print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())
except Exception as e:
    print("ERROR", e)
    sys.exit(1)
EOF
}
# query EXPR: Prometheus instant query -> "labels value" lines
query() { python3 - "$PPORT" "$1" <<'EOF'
import sys, json, urllib.request, urllib.parse
url = "http://127.0.0.1:%s/api/v1/query?query=%s" % (sys.argv[1], urllib.parse.quote(sys.argv[2]))
try:
    r = json.load(urllib.request.urlopen(url, timeout=5))
except Exception as e:
    sys.exit(1)
for s in r.get("data", {}).get("result", []):
    m = s["metric"]
    print(",".join("%s=%s" % (k, m[k]) for k in sorted(m)), s["value"][1])
EOF
}
wait_for() { # SECONDS CMD: until CMD succeeds
	local end=$((SECONDS + $1))
	while [ $SECONDS -lt $end ]; do eval "$2" && return 0; sleep 0.5; done
	return 1
}
run_app() { # NAME ENV... -- ARGS: tn_app under the shim, in the background ($! is its pid)
	local name=$1
	shift
	local envs=()
	while [ "$1" != "--" ]; do envs+=("$1"); shift; done
	shift
	env LD_LIBRARY_PATH="$ROOT/$B/lib" GPUEXT_REAL_LIBCUDA="$ROOT/$B/tests/shim/fakecuda/libcuda.so.1" \
		GPUEXT_CACHE_DIR="$tmp/cache" GPUEXT_SHM_DIR="$SHM" GPUEXT_STATS_MS=200 "${envs[@]}" \
		"$APP" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
	pids+=($!)
}

# ---- the applications ----
POL=$HB/gx_lcslo.bpf.o,target_us=2000
run_app lc GPUEXT_POLICY="$POL" GPUEXT_TOOL=threadhist GPUEXT_TENANT=infer GPUEXT_TENANT_CLASS=lc \
	GPUEXT_TENANT_MEM_LIMIT=1G TN_APP_ALLOC=67108864 FAKECUDA_KERNEL_US=200 -- lc 12000 5000
LCPID=$!
run_app be GPUEXT_POLICY="$POL" GPUEXT_TENANT=train GPUEXT_TENANT_CLASS=be GPUEXT_TENANT_GPU_SHARE=30 \
	FAKECUDA_KERNEL_US=500 -- be 100000000 4
BEPID=$!
check 'wait_for 20 "[ -e $SHM/$LCPID-gpuext.stats ] && [ -e $SHM/$BEPID-gpuext.stats ]"' \
	"both processes publish <pid>-gpuext.stats" "$(ls "$SHM")"

# ---- kernelretsnoop's map (the fake driver runs no device code: counts
# written here, under the LC process's name, as the tool leaves them) ----
check '"$ROOT/$B/tests/cli/krs_map" "$SHM" "$LCPID" work:7:21 0x1234:3:9' \
	"a kernelretsnoop krs_counts map for the LC process (work 7 launches 21 blocks, an unknown kernel 3/9)"
# both shipped configs in one
CONF=$tmp/exporter.conf
cat "$ROOT/deploy/exporter/threadhist.conf" "$ROOT/deploy/exporter/kernelretsnoop.conf" >"$CONF"

# ---- the exporter ----
EPORT=$(free_port)
"$EXP" --listen 127.0.0.1:$EPORT --dir "$SHM" --config "$CONF" 2>"$tmp/exp.err" &
pids+=($!)
EXPPID=$!
check 'wait_for 10 "get http://127.0.0.1:$EPORT/metrics >$tmp/m1.txt"' "serves /metrics on 127.0.0.1:$EPORT" \
	"$(cat "$tmp/exp.err")"
check 'grep -q "^gpuext_process_launches_total{pid=\"$LCPID\",comm=\"tn_app\"} [1-9]" $tmp/m1.txt' \
	"the LC process's launches" "$(grep launches_total "$tmp/m1.txt" | head -3)"
check 'grep -q "^gpuext_tenant_info{tenant=\"infer\",class=\"lc\"} 1" $tmp/m1.txt &&
	grep -q "^gpuext_tenant_info{tenant=\"train\",class=\"be\"} 1" $tmp/m1.txt' "both tenants and their classes"
check 'grep -q "^gpuext_tenant_memory_limit_bytes{tenant=\"infer\"} 1073741824$" $tmp/m1.txt &&
	grep -q "^gpuext_tenant_memory_used_bytes{tenant=\"infer\"} 67108864$" $tmp/m1.txt &&
	grep -q "^gpuext_tenant_memory_high_water_bytes{tenant=\"infer\"} 67108864$" $tmp/m1.txt &&
	grep -q "^gpuext_tenant_memory_denied_total{tenant=\"infer\"} 0$" $tmp/m1.txt &&
	grep -q "^gpuext_tenant_memory_limit_bytes{tenant=\"train\"} 0$" $tmp/m1.txt' \
	"tenant memory: limit, used, high water, denied" "$(grep gpuext_tenant_memory $tmp/m1.txt | head -8)"
check 'grep -q "^gpuext_tenant_gpu_share_ratio{tenant=\"train\"} 0.3$" $tmp/m1.txt &&
	grep -q "^gpuext_tenant_gpu_share_ratio{tenant=\"infer\"} 0$" $tmp/m1.txt &&
	grep -q "^gpuext_tenant_gpu_seconds_total{tenant=\"infer\"} " $tmp/m1.txt' \
	"tenant GPU share and GPU seconds" "$(grep gpuext_tenant_gpu $tmp/m1.txt | head -6)"
check 'grep -q "^gpuext_process_memory_used_bytes{pid=\"$LCPID\",comm=\"tn_app\",tenant=\"infer\"} 67108864$" $tmp/m1.txt &&
	grep -q "^gpuext_process_memory_high_water_bytes{pid=\"$LCPID\",comm=\"tn_app\",tenant=\"infer\"} 67108864$" $tmp/m1.txt &&
	grep -q "^gpuext_process_gpu_seconds_total{pid=\"$BEPID\",comm=\"tn_app\",tenant=\"train\"} " $tmp/m1.txt' \
	"per tenant process: memory used, high water, GPU seconds" "$(grep -E "gpuext_process_(memory|gpu)" $tmp/m1.txt | head -6)"
check 'grep -q "^gpuext_krs_launches_total{pid=\"$LCPID\",comm=\"tn_app\",gpu=\"0\",kernel=\"work\"} 7$" $tmp/m1.txt &&
	grep -q "^gpuext_krs_blocks_total{pid=\"$LCPID\",comm=\"tn_app\",gpu=\"0\",kernel=\"work\"} 21$" $tmp/m1.txt &&
	grep -q "^gpuext_krs_launches_total{pid=\"$LCPID\",comm=\"tn_app\",gpu=\"0\",kernel=\"other\"} 3$" $tmp/m1.txt' \
	"kernelretsnoop map: the kernel id decoded to its name, an unknown one as kernel=\"other\"" \
	"$(grep gpuext_krs_ $tmp/m1.txt | head -6)"
check 'promtool check metrics <$tmp/m1.txt >$tmp/promtool.out 2>&1' "promtool check metrics passes" \
	"$(head -5 "$tmp/promtool.out" 2>/dev/null)"
check 'get http://127.0.0.1:$EPORT/nothing | grep -qi "not found"' "other paths: 404"
check '"$ROOT/$B/bin/gpuext" exporter --once --dir "$SHM" | grep -q "^gpuext_exporter_processes 2"' \
	"gpuext exporter runs gpuext-exporter (--once)"

# ---- prometheus ----
PPORT=$(free_port)
cat >"$tmp/prom.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: gpuext
    static_configs:
      - targets: ['127.0.0.1:$EPORT']
EOF
timeout 120 prometheus --config.file="$tmp/prom.yml" --storage.tsdb.path="$tmp/prom" \
	--web.listen-address=127.0.0.1:$PPORT >"$tmp/prom.log" 2>&1 &
pids+=($!)
PROMPID=$!
check 'wait_for 40 "get http://127.0.0.1:$PPORT/-/ready >/dev/null 2>&1"' "prometheus ready on 127.0.0.1:$PPORT" \
	"$(tail -3 "$tmp/prom.log")"
check 'wait_for 30 "query \"gpuext_process_launches_total{pid=\\\"$LCPID\\\"} > 0\" | grep -q ."' \
	"query: gpuext_process_launches_total of the LC process > 0" "$(query 'up')"
check 'query "gpuext_tenant_info" | grep -q "class=lc.*tenant=infer" &&
	query "gpuext_tenant_info" | grep -q "class=be.*tenant=train"' "query: gpuext_tenant_info: infer lc, train be"
check 'query "gpuext_tenant_launches_total{tenant=\"train\"} > 0" | grep -q .' "query: BE launches > 0"
check 'query "sum(gpuext_tenant_latency_seconds_count{tenant=\"infer\",class=\"lc\"}) > 0" | grep -q . &&
	query "histogram_quantile(0.99, sum by (le) (gpuext_tenant_latency_seconds_bucket{class=\"lc\"})) > 0" | grep -q .' \
	"query: the LC latency histogram and its p99" "$(query 'gpuext_tenant_latency_seconds_count')"
# (the fake driver runs no device code: the counts are there, and zero)
check 'query "gpuext_threadhist_blocks_total{pid=\"$LCPID\"}" | grep -q "gpu=0.*pid=$LCPID 0$" &&
	query "count(gpuext_threadhist_sm_blocks_total)" | grep -q " [1-9]"' "query: the config's device map (threadhist blocks, per SM)" \
	"$(query 'gpuext_threadhist_blocks_total')"
check 'query "gpuext_process_policies_attached{pid=\"$LCPID\",kind=\"host\"}" | grep -q " 1$" &&
	query "gpuext_process_info{pid=\"$LCPID\"}" | grep -q "policies=threadhist"' "query: policies attached (lcslo host, threadhist device)"
check 'query "gpuext_kernel_launches_total{pid=\"$LCPID\",kernel=\"work\"} > 0" | grep -q .' "query: launches per kernel"
check 'query "gpuext_krs_launches_total{pid=\"$LCPID\",kernel=\"work\"}" | grep -q " 7$" &&
	query "gpuext_krs_blocks_total{pid=\"$LCPID\",kernel=\"work\"} / gpuext_krs_launches_total{pid=\"$LCPID\",kernel=\"work\"}" | grep -q " 3$" &&
	query "sum(gpuext_krs_launches_total{pid=\"$LCPID\"})" | grep -q " 10$"' \
	"query: kernelretsnoop per kernel: work 7 launches, 3 blocks per launch; 10 in all" \
	"$(query 'gpuext_krs_launches_total')"
check 'query "gpuext_tenant_memory_used_bytes{tenant=\"infer\"}" | grep -q " 67108864$" &&
	query "gpuext_tenant_gpu_share_ratio{tenant=\"train\"}" | grep -q " 0.3$"' \
	"query: tenant memory used and GPU share" "$(query 'gpuext_tenant_memory_used_bytes')"

# ---- a process dies: its series go ----
kill -9 "$BEPID"
sleep 1.5
get http://127.0.0.1:$EPORT/metrics >"$tmp/m2.txt"
check '! grep -q "pid=\"$BEPID\"" $tmp/m2.txt && grep -q "pid=\"$LCPID\"" $tmp/m2.txt' \
	"kill -9 of the BE process: its series are gone, the LC's stay" "$(grep -c "pid=\"$BEPID\"" "$tmp/m2.txt")"
kill "$PROMPID" 2>/dev/null

# ---- robustness ----
F=$tmp/fz
mkdir -m 700 "$F"
cp "$SHM/$LCPID-gpuext.stats" "$tmp/good.stats" 2>/dev/null
# stats files: named for the live LC process (so only their content decides)
python3 - "$F" "$LCPID" "$tmp/good.stats" <<'EOF'
import os, random, struct, sys
d, pid, good = sys.argv[1], sys.argv[2], open(sys.argv[3], "rb").read()
random.seed(38)
def put(name, data):
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)
    os.chmod(os.path.join(d, name), 0o600)
put("%s-gpuext.stats" % pid, os.urandom(len(good)))           # garbage
put("1-gpuext.stats", good)                                    # pid 1's name, not its content
put("99999999-gpuext.stats", good[:100])                       # truncated, no such pid
put("tenants.tab", os.urandom(51272))                          # a garbage table
put("%s-threadhist.th_counts" % pid, os.urandom(700))          # a garbage map
put("%s-kernelretsnoop.krs_counts@1" % pid, os.urandom(9000))  # a garbage hash map
put(".%s-gpuext.stats.tmp" % pid, good[:10])                   # an interrupted update
put("%s-gpuext.statsX" % pid, good)
os.symlink(os.path.join(d, "1-gpuext.stats"), os.path.join(d, "2-gpuext.stats"))
EOF
fz_ok=0 fz_runs=0
for i in $(seq 1 60); do
	# mutate the good file: a few bytes flipped, or cut short, or counts huge
	python3 - "$F/$LCPID-gpuext.stats" "$tmp/good.stats" "$i" <<'EOF'
import random, sys
out, good, seed = sys.argv[1], bytearray(open(sys.argv[2], "rb").read()), int(sys.argv[3])
random.seed(seed)
k = seed % 3
if k == 0:
    for _ in range(random.randint(1, 64)):
        good[random.randrange(len(good))] = random.randrange(256)
elif k == 1:
    good = good[:random.randrange(len(good))]
else:
    for off in range(16, len(good) - 8, 8):
        if random.random() < 0.3:
            good[off:off + 8] = b"\xff" * 8
open(out, "wb").write(bytes(good))
EOF
	fz_runs=$((fz_runs + 1))
	if timeout 10 "$EXP" --once --dir "$F" --config "$CONF" >"$tmp/fz.txt" 2>"$tmp/fz.err" &&
		promtool check metrics <"$tmp/fz.txt" >/dev/null 2>&1; then
		fz_ok=$((fz_ok + 1))
	else
		cp "$F/$LCPID-gpuext.stats" "$tmp/fz-failed-$i.stats"
	fi
done
check '[ $fz_ok = $fz_runs ]' "$fz_runs mutated stats files beside garbage ones: exit 0 and valid output each time" \
	"$fz_ok of $fz_runs; $(tail -2 "$tmp/fz.err")"
check 'grep -q "^gpuext_exporter_files_refused_total [1-9]" $tmp/fz.txt && grep -q "^gpuext_exporter_files_skipped_total [1-9]" $tmp/fz.txt &&
	! grep -q "pid=\"1\"" $tmp/fz.txt' "the symbolic link refused, garbage skipped, pid 1's name with another pid's content ignored"
chmod 755 "$F"
"$EXP" --once --dir "$F" >"$tmp/open.txt" 2>"$tmp/open.err"
check 'grep -q "gpuext_exporter_processes 0" $tmp/open.txt && grep -q "writable\|mode" $tmp/open.err' \
	"a folder open to others is not read (one line)" "$(cat "$tmp/open.err")"

# a process killed while publishing all the time (GPUEXT_STATS_MS=1)
D=$tmp/dying
mkdir -m 700 "$D"
env LD_LIBRARY_PATH="$ROOT/$B/lib" GPUEXT_REAL_LIBCUDA="$ROOT/$B/tests/shim/fakecuda/libcuda.so.1" \
	GPUEXT_CACHE_DIR="$tmp/cache" GPUEXT_SHM_DIR="$D" GPUEXT_STATS_MS=1 GPUEXT_TOOL=threadhist GPUEXT_TENANT=d \
	FAKECUDA_KERNEL_US=50 "$APP" be 100000000 2 >/dev/null 2>&1 &
DPID=$!
pids+=($!)
wait_for 10 "[ -e $D/$DPID-gpuext.stats ]"
n_ok=0
for i in $(seq 1 20); do
	"$EXP" --once --dir "$D" 2>/dev/null | grep -q "pid=\"$DPID\"" && n_ok=$((n_ok + 1))
done
kill -9 "$DPID"
wait "$DPID" 2>/dev/null
"$EXP" --once --dir "$D" >"$tmp/dead.txt" 2>&1
check '[ $n_ok = 20 ] && ! grep -q "pid=\"$DPID\"" $tmp/dead.txt && grep -q "gpuext_exporter_processes 0" $tmp/dead.txt' \
	"a process publishing every millisecond: read whole 20 times out of 20; killed, its series are gone" \
	"$n_ok of 20; $(ls -a "$D" | tr '\n' ' ')"
echo 'metric x histogram map=kernelretsnoop.krs_counts label=kernel:key@0:kernel' >"$tmp/bad.conf"
check '! "$EXP" --once --dir "$SHM" --config "$tmp/bad.conf" >/dev/null 2>"$tmp/bad.err" &&
	grep -q "one kernel label, counters and gauges only" "$tmp/bad.err"' \
	"a kernel label on a histogram: the config is refused with the line" "$(cat "$tmp/bad.err" 2>/dev/null)"
check 'kill -0 $EXPPID' "the serving exporter is still up"
