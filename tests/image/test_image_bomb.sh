#!/usr/bin/env bash
# test_image_bomb — decompression bombs through `gpuext fatbin` (issue 20):
# generated here by gen_bomb (tests/image/bomb.h), never committed. Every
# entry of a file is charged to one budget of max(256 MiB, 64 x the file's
# size): a 64 KiB file declaring 2 GiB, and 16 of those entries, are refused
# before anything is allocated (checked under a 256 MiB address-space limit,
# where allocating the entry fails differently); entries that fit are
# extracted until the budget is spent.
set -u
B=${BUILD:-build}
G=$B/tests/image/gen_bomb
X=$B/bin/gpuext
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Peak RSS in KiB of a command, where /usr/bin/time exists ("?" otherwise).
peak() {
	if [ -x /usr/bin/time ]; then
		/usr/bin/time -f %M -o "$tmp/rss" "$@" >"$tmp/out" 2>"$tmp/err"
		local rc=$?
		rss=$(tail -1 "$tmp/rss")
		return $rc
	fi
	rss="?"
	"$@" >"$tmp/out" 2>"$tmp/err"
}

"$G" "$tmp/one.fatbin" 1 2048 && "$G" "$tmp/many.fatbin" 16 2048 && "$G" "$tmp/fit.fatbin" 3 100 ||
	{ nok "gen_bomb writes the bombs"; exit 1; }
size=$(stat -c %s "$tmp/one.fatbin")

"$X" fatbin list "$tmp/one.fatbin" >"$tmp/list" 2>&1
grep -q ' 2147483648 ' "$tmp/list" && ok "list: a $size-byte fatbin declares a 2147483648-byte entry (headers only)" ||
	nok "list of the bomb: $(head -3 "$tmp/list")"

mkdir "$tmp/o1"
(ulimit -v 262144; peak "$X" fatbin extract -o "$tmp/o1" "$tmp/one.fatbin"; echo "rc=$? peak RSS $rss KiB" >"$tmp/rc")
msg="entry 0 (ptx sm_80, zstd): 2147483648 bytes exceed the decompression budget of this file (256 of 256 MiB left"
if grep -q 'rc=1 ' "$tmp/rc" && grep -qF "$msg" "$tmp/err" && [ "$(wc -l <"$tmp/err")" = 1 ] &&
	[ -z "$(ls "$tmp/o1")" ]; then
	ok "extract of a 2 GiB bomb: refused in one line, nothing written ($(cat "$tmp/rc"))"
else
	nok "extract of a 2 GiB bomb: $(cat "$tmp/rc") $(head -2 "$tmp/err"); written: $(ls "$tmp/o1")"
fi

mkdir "$tmp/o16"
(ulimit -v 262144; peak "$X" fatbin extract -o "$tmp/o16" "$tmp/many.fatbin"; echo "rc=$? peak RSS $rss KiB" >"$tmp/rc")
if grep -q 'rc=1 ' "$tmp/rc" && grep -qF "$msg" "$tmp/err" &&
	grep -q '15 more entries exceed the decompression budget; not extracted' "$tmp/err" &&
	[ "$(wc -l <"$tmp/err")" = 2 ] && [ -z "$(ls "$tmp/o16")" ]; then
	ok "extract of 16 such entries (32 GiB declared): two lines, nothing written ($(cat "$tmp/rc"))"
else
	nok "extract of 16 bomb entries: $(cat "$tmp/rc") $(head -3 "$tmp/err"); written: $(ls "$tmp/o16" | head -3)"
fi

# Three 100 MiB entries from a 4 KiB file: the budget is per file, not per
# entry: two fit into 256 MiB, the third does not.
mkdir "$tmp/o3"
"$X" fatbin extract -o "$tmp/o3" "$tmp/fit.fatbin" >"$tmp/out" 2>"$tmp/err"
rc=$?
n=$(ls "$tmp/o3" | wc -l)
sz=$(cat "$tmp/o3"/* 2>/dev/null | wc -c)
if [ $rc = 1 ] && [ "$n" = 2 ] && [ "$sz" = $((2 * 100 * 1048576)) ] &&
	grep -q 'entry 2 (ptx sm_80, zstd): 104857600 bytes exceed the decompression budget of this file (56 of 256 MiB left' "$tmp/err"; then
	ok "three 100 MiB entries: two extracted ($sz bytes), the third over the file's budget"
else
	nok "three 100 MiB entries: rc $rc, $n files, $sz bytes: $(head -2 "$tmp/err")"
fi
