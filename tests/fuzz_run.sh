# fuzz_run.sh — sourced by the fuzz scripts: fuzz_setup gives each the same
# variables and scratch folder; fuzz_run runs one libFuzzer target under
# the limits every target gets (no allocation over 256 MiB, 1 GiB in all,
# 10 s per input) and print one ok / not ok line.
#   fuzz_run NAME BINARY CORPUS SECONDS MAX_LEN WHAT
# Artifacts go to $B/fuzz/crashes; returns 1 on a failure.
fuzz_run() {
	local name=$1 bin=$2 corpus=$3 t=$4 max=$5 what=$6 log
	log=$(mktemp)
	mkdir -p "$B/fuzz/crashes"
	if "$bin" -max_total_time="$t" -max_len="$max" -timeout=10 -rss_limit_mb=1024 -malloc_limit_mb=256 \
		-artifact_prefix="$B/fuzz/crashes/" "$corpus" >"$log" 2>&1; then
		echo "ok - $name: ${t}s$what ($(grep -o 'Done [0-9]* runs' "$log" | tail -1))"
		rm -f "$log"
		return 0
	fi
	tail -n 40 "$log"
	echo "not ok - $name: failure, artifacts in $B/fuzz/crashes"
	rm -f "$log"
	return 1
}

# fuzz_setup TARGET: B (the build), T (GX_FUZZ_TIME seconds, default 5: the
# `make test` run), F (the target's binary) and $work, a scratch folder with
# an empty $work/corpus, removed at exit.
fuzz_setup() {
	B=${BUILD:-build}
	T=${GX_FUZZ_TIME:-5}
	F=$B/fuzz/$1
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	mkdir -p "$work/corpus"
}
