#!/usr/bin/env bash
# The rewritten-module cache (shim/mcache.c) against the fake driver: a miss
# stores, a second start hits; options change the key; files 0600 in a 0700
# folder; corrupt entries are ignored with one line and replaced; the size
# cap evicts the least recently used; GPUEXT_CACHE=0 and unsafe folders turn
# it off; planted entries (another user's, writable by others, a symbolic
# link) are refused with one line; concurrent cold starts leave one entry and no temporary file.
# Bench line: first load of a large PTX module, cold vs warm cache.
set -u
B=${BUILD:-build}
FAKE=$PWD/$B/tests/shim/fakecuda/libcuda.so.1
L=$B/tests/shim/mcache_load
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; }
# PTX with KERNEL and N add instructions.
gen() {
	{
		printf '.version 8.0\n.target sm_80\n.address_size 64\n.visible .entry %s(.param .u64 p)\n{\n' "$1"
		printf '\t.reg .b32 %%r<4>;\n\t.reg .b64 %%rd<2>;\n\tld.param.u64 %%rd1, [p];\n\tmov.u32 %%r1, 0;\n'
		awk -v n="$2" 'BEGIN { for (i = 0; i < n; i++) print "\tadd.s32 %r1, %r1, " i ";" }'
		printf '\tst.global.u32 [%%rd1], %%r1;\n\tret;\n}\n'
	} >"$3"
}
C=$tmp/cache
load() { # LOGFILE PTX KERNEL [ENV...]
	local log=$1 ptx=$2 k=$3
	shift 3
	env LD_LIBRARY_PATH="$PWD/$B/lib" GPUEXT_REAL_LIBCUDA="$FAKE" GPUEXT_LOG=info GPUEXT_CACHE_DIR="$C" "$@" \
		"$L" "$ptx" "$k" >"$log.out" 2>"$log"
}
entries() { ls "$C/modules"/*.gxmod 2>/dev/null | wc -l; }
gen small 10 "$tmp/s.ptx"

load "$tmp/1" "$tmp/s.ptx" small
if grep -q 'rewritten (identity), reloaded' "$tmp/1" && ! grep -q 'from the module cache' "$tmp/1" && [ "$(entries)" = 1 ]; then
	ok "cold start: rewritten and stored (1 entry)"
else
	nok "cold start: $(grep gpuext "$tmp/1" | tail -2 | tr '\n' ' ') entries $(entries)"
fi
f=$(ls "$C/modules"/*.gxmod 2>/dev/null | head -1)
F1=$f # the entry of s.ptx with the default options
[ -n "$f" ] && [ "$(stat -c %a "$f")" = 600 ] && [ "$(stat -c %a "$C/modules")" = 700 ] &&
	ok "entry mode 0600, folder mode 0700" || nok "modes: entry $(stat -c %a "$f" 2>/dev/null) folder $(stat -c %a "$C/modules" 2>/dev/null)"
load "$tmp/2" "$tmp/s.ptx" small
grep -q 'rewritten (identity), reloaded from sm_80 PTX ([0-9]* bytes, from the module cache)' "$tmp/2" &&
	ok "second start: the rewritten PTX comes from the module cache" || nok "second start: $(grep gpuext "$tmp/2" | tail -2 | tr '\n' ' ')"
# (The rewriter compiles the empty built-in handlers away, so the output may
# show no hook: the options still make another key.)
load "$tmp/3" "$tmp/s.ptx" small GPUEXT_HOOKS=entry
grep -q 'rewritten (.*), reloaded' "$tmp/3" && ! grep -q 'from the module cache' "$tmp/3" && [ "$(entries)" = 2 ] &&
	ok "other rewrite options (GPUEXT_HOOKS=entry): another key, a miss" || nok "options in the key: $(grep gpuext "$tmp/3" | tail -1) entries $(entries)"
load "$tmp/3b" "$tmp/s.ptx" small GPUEXT_HOOKS=entry
want=$(sed -n 's/.*rewritten (\(.*\)), reloaded from sm_80 PTX (\([0-9]*\) bytes).*/\1 \2/p' "$tmp/3")
got=$(sed -n 's/.*rewritten (\(.*\)), reloaded from sm_80 PTX (\([0-9]*\) bytes, from the module cache).*/\1 \2/p' "$tmp/3b")
[ -n "$want" ] && [ "$want" = "$got" ] &&
	ok "... and a hit the second time, same hooks and size ($got)" || nok "hooked hit: '$want' vs '$got': $(grep gpuext "$tmp/3b" | tail -1)"
# The code-generation A/B switches are rewrite options too: a module built
# with GX_PTX_RECONVERGE=0 must not be served to a run without it.
load "$tmp/3c" "$tmp/s.ptx" small GPUEXT_HOOKS=entry GX_PTX_RECONVERGE=0
grep -q 'rewritten (.*), reloaded' "$tmp/3c" && ! grep -q 'from the module cache' "$tmp/3c" && [ "$(entries)" = 3 ] &&
	ok "GX_PTX_RECONVERGE=0: another key, a miss" || nok "A/B switch in the key: $(grep gpuext "$tmp/3c" | tail -1) entries $(entries)"
load "$tmp/3d" "$tmp/s.ptx" small GPUEXT_HOOKS=entry GX_PTX_ENTRY_TOP=1
grep -q 'rewritten (.*), reloaded' "$tmp/3d" && ! grep -q 'from the module cache' "$tmp/3d" && [ "$(entries)" = 4 ] &&
	ok "GX_PTX_ENTRY_TOP=1: another key, a miss" || nok "A/B switch in the key: $(grep gpuext "$tmp/3d" | tail -1) entries $(entries)"

# Corruption: a flipped byte in the PTX, a broken header, an empty file.
for how in flip header empty; do
	load "$tmp/pre" "$tmp/s.ptx" small
	f=$F1
	case $how in
	flip) sed -i 's/%r1, %r1, 5;/%r1, %r1, 55;/' "$f" ;;
	header) sed -i '1s/.*/gpuext-mcache 9/' "$f" ;;
	empty) : >"$f" ;;
	esac
	load "$tmp/c" "$tmp/s.ptx" small
	n=$(grep -c 'module cache: ignoring corrupt entry' "$tmp/c")
	if [ "$n" = 1 ] && grep -q 'rewritten (identity), reloaded' "$tmp/c" && ! grep -q 'from the module cache' "$tmp/c" &&
		[ "$(wc -c <"$f")" -gt 100 ] && ! grep -q '%r1, %r1, 55;' "$f"; then
		ok "corrupt entry ($how): one log line, ignored, rewritten and stored again"
	else
		nok "corrupt entry ($how): $n lines; $(grep gpuext "$tmp/c" | tail -2 | tr '\n' ' ')"
	fi
done
load "$tmp/4" "$tmp/s.ptx" small
grep -q 'from the module cache' "$tmp/4" && ok "the replaced entry hits again" || nok "after repair: $(grep gpuext "$tmp/4" | tail -1)"

# Planted entries (docs/trust.md): owned by another user (root runs only),
# writable by others, a symbolic link: refused with one line naming the
# file, rewritten again, the entry replaced by one of this user.
for how in nobody 666 symlink; do
	[ $how = nobody ] && [ "$(id -u)" != 0 ] && { echo "# not root: planted entry of nobody skipped"; continue; }
	load "$tmp/pre" "$tmp/s.ptx" small
	cp "$F1" "$tmp/evil" && sed -i 's/%r1, %r1, 5;/%r1, %r1, 55;/' "$tmp/evil"
	case $how in
	nobody) cp "$tmp/evil" "$F1" && chown nobody: "$F1"; want='owned by uid 65534' ;;
	666) cp "$tmp/evil" "$F1" && chmod 666 "$F1"; want='writable by others (mode 0666)' ;;
	symlink) rm -f "$F1" && ln -s "$tmp/evil" "$F1"; want='a symbolic link' ;;
	esac
	load "$tmp/t" "$tmp/s.ptx" small
	n=$(grep '^gpuext: ' "$tmp/t" | grep -cF "$F1")
	if [ "$n" = 1 ] && grep -qF "module cache: refusing $F1: $want; rewriting again" "$tmp/t" &&
		! grep -q 'from the module cache' "$tmp/t" && [ -f "$F1" ] && [ ! -L "$F1" ] &&
		[ "$(stat -c %u:%a "$F1")" = "$(id -u):600" ] && ! grep -q '%r1, %r1, 55;' "$F1"; then
		ok "planted entry ($want): one line, rewritten, replaced by an entry of this user"
	else
		nok "planted entry ($how): $n lines; $(grep gpuext "$tmp/t" | tail -2 | tr '\n' ' ')"
	fi
done

# Off switches.
rm -rf "$C"
load "$tmp/5" "$tmp/s.ptx" small GPUEXT_CACHE=0
[ ! -e "$C/modules" ] && grep -q 'rewritten (identity)' "$tmp/5" && ok "GPUEXT_CACHE=0: nothing stored" || nok "GPUEXT_CACHE=0 stored $(entries)"
mkdir -p "$C/modules" && chmod 777 "$C/modules"
load "$tmp/6" "$tmp/s.ptx" small
[ "$(entries)" = 0 ] && grep -q 'closed to others.*cache not used' "$tmp/6" && grep -q 'rewritten (identity)' "$tmp/6" &&
	ok "a folder writable by others is not used (one line)" || nok "unsafe folder: $(entries) entries; $(grep 'module cache' "$tmp/6")"
rm -rf "$C"

# Size cap: ~0.3 MiB entries, 1 MiB cap. Store 1, 2, 3, use 1 again, store
# 4: over the cap, the least recently used go (2, then 3) down to 3/4 of it.
for k in big1 big2 big3 big4; do gen $k 12000 "$tmp/$k.ptx"; done
# (PTX entries only: the cubins have their own test, test_cubin_cache.sh)
cap() { load "$tmp/$1" "$tmp/$2.ptx" "$2" GPUEXT_CACHE_MAX_MB=1 GPUEXT_CUBIN=0; sleep 0.05; }
cap b1 big1; cap b2 big2; cap b3 big3; cap b1h big1; cap b4 big4
cap b1x big1; cap b2x big2
hit() { grep -q 'from the module cache' "$tmp/$1"; }
sz=$(du -sk "$C/modules" | cut -f1)
if grep -q 'removed 2 least recently used' "$tmp/b4" && hit b1h && hit b1x && ! hit b2x; then
	ok "size cap (1 MiB): the least recently used entries were evicted, the recently used one kept (${sz} KiB now)"
else
	nok "size cap: '$(grep 'module cache' "$tmp/b4")' b1h $(hit b1h && echo hit) b1x $(hit b1x && echo hit) b2x $(hit b2x && echo hit) ($(ls -l "$C/modules" | tr '\n' ' '))"
fi
rm -rf "$C"

# Concurrent cold starts of the same module.
gen conc 2000 "$tmp/conc.ptx"
for i in 1 2 3 4; do load "$tmp/p$i" "$tmp/conc.ptx" conc & done
wait
bad=0
for i in 1 2 3 4; do grep -q 'rewritten (identity)' "$tmp/p$i" || bad=$((bad + 1)); done
[ $bad = 0 ] && [ "$(entries)" = 1 ] && [ -z "$(ls -A "$C/modules" | grep '^\.tmp')" ] &&
	ok "4 concurrent cold starts: all loaded, one entry, no temporary file left" || nok "concurrent: $bad failed, $(entries) entries, $(ls -A "$C/modules")"
rm -rf "$C"

# Bench line: first load of a ~1.5 MiB PTX module (the fake driver's load is
# free, so this is parse + rewrite vs reading the entry), medians of 3.
gen bench 60000 "$tmp/bench.ptx"
cold=() warm=()
for r in 1 2 3; do
	rm -rf "$C"
	load "$tmp/bc" "$tmp/bench.ptx" bench && cold+=("$(awk '{print $2}' "$tmp/bc.out")")
	load "$tmp/bw" "$tmp/bench.ptx" bench && warm+=("$(awk '{print $2}' "$tmp/bw.out")")
done
med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
c=$(med "${cold[@]}") w=$(med "${warm[@]}")
echo "# bench: first load of a $(($(wc -c <"$tmp/bench.ptx") >> 10)) KiB PTX module through the shim (fake driver): cold cache $((c / 1000)) ms, warm cache $((w / 1000)) ms"
[ "${#warm[@]}" = 3 ] && [ "$w" -lt "$c" ] && ok "warm module cache loads faster than cold ($w us < $c us)" ||
	nok "warm cache not faster: cold ${cold[*]} warm ${warm[*]}"
