#!/usr/bin/env bash
# Rewritten modules loaded as cubins (shim/cubin.c) against the fake driver,
# whose cuLinkComplete returns a "cubin" carrying its PTX's kernels: a cold
# start JIT-compiles and stores a .gxcubin beside the .gxmod; a second start
# loads it without calling the JIT (the fake link then fails); a failing JIT,
# GPUEXT_CUBIN=0 or GPUEXT_CACHE=0 load the PTX; a corrupt or planted entry
# is refused with one line and compiled again;
# the install's shared cache (GPUEXT_SHARED_CACHE_DIR) is read after the
# user's, never written, refused when others can write it; `gpuext cache
# prepare` fills one (--shared: 0755/0644) from a run and from another cache;
# concurrent cold starts leave one entry of each kind.
set -u
B=${BUILD:-build}
FAKE=$PWD/$B/tests/shim/fakecuda/libcuda.so.1
L=$B/tests/shim/mcache_load
G=$B/bin/gpuext
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; }
gen() { # KERNEL N FILE: PTX with N add instructions
	{
		printf '.version 8.0\n.target sm_80\n.address_size 64\n.visible .entry %s(.param .u64 p)\n{\n' "$1"
		printf '\t.reg .b32 %%r<4>;\n\t.reg .b64 %%rd<2>;\n\tld.param.u64 %%rd1, [p];\n\tmov.u32 %%r1, 0;\n'
		awk -v n="$2" 'BEGIN { for (i = 0; i < n; i++) print "\tadd.s32 %r1, %r1, " i ";" }'
		printf '\tst.global.u32 [%%rd1], %%r1;\n\tret;\n}\n'
	} >"$3"
}
C=$tmp/cache S=$tmp/shared
export GPUEXT_SHARED_CACHE_DIR=$tmp/none
run_env() { echo env LD_LIBRARY_PATH="$PWD/$B/lib" GPUEXT_REAL_LIBCUDA="$FAKE" GPUEXT_LOG=info; }
load() { # LOGFILE KERNEL [ENV...]: load $tmp/$KERNEL.ptx, resolve KERNEL
	local log=$1 k=$2
	shift 2
	env LD_LIBRARY_PATH="$PWD/$B/lib" GPUEXT_REAL_LIBCUDA="$FAKE" GPUEXT_LOG=info GPUEXT_CACHE_DIR="$C" "$@" \
		"$L" "$tmp/$k.ptx" "$k" >"$log.out" 2>"$log"
}
cubins() { ls "$C/modules"/*.gxcubin 2>/dev/null | wc -l; }
jitted() { grep -q 'cubin: JIT-compiled in [0-9.]* ms, stored' "$1"; }
hit() { grep -q 'cubin: cached' "$1"; }
last() { grep gpuext "$1" | tail -2 | tr '\n' ' '; }
gen k1 10 "$tmp/k1.ptx"
gen k2 20 "$tmp/k2.ptx"

load "$tmp/1" k1
f=$(ls "$C/modules"/*.gxcubin 2>/dev/null | head -1)
if jitted "$tmp/1" && [ "$(cubins)" = 1 ] && [ "$(stat -c %a "$f")" = 600 ] && grep -q '^load_us' "$tmp/1.out"; then
	ok "cold start: JIT-compiled to a cubin, loaded (its kernel resolves), stored 0600"
else
	nok "cold start: $(last "$tmp/1") cubins $(cubins)"
fi
load "$tmp/2" k1 FAKECUDA_LINK_FAIL=1
hit "$tmp/2" && grep -q 'from the module cache' "$tmp/2" && grep -q '^load_us' "$tmp/2.out" &&
	ok "second start: PTX and cubin from the cache, no JIT (the fake JIT fails now)" || nok "second start: $(last "$tmp/2")"
load "$tmp/3" k2 FAKECUDA_LINK_FAIL=1
! jitted "$tmp/3" && ! hit "$tmp/3" && grep -q 'rewritten (identity), reloaded from sm_80 PTX' "$tmp/3" &&
	grep -q '^load_us' "$tmp/3.out" && [ "$(cubins)" = 1 ] &&
	ok "a failing JIT: the rewritten PTX is loaded as before, nothing stored" || nok "failing JIT: $(last "$tmp/3")"
load "$tmp/4" k2 GPUEXT_CUBIN=0
! jitted "$tmp/4" && ! hit "$tmp/4" && grep -q '^load_us' "$tmp/4.out" && [ "$(cubins)" = 1 ] &&
	ok "GPUEXT_CUBIN=0: the PTX is loaded, no cubin" || nok "GPUEXT_CUBIN=0: $(last "$tmp/4") cubins $(cubins)"

load "$tmp/4b" k2 GPUEXT_CACHE=0
! jitted "$tmp/4b" && ! hit "$tmp/4b" && grep -q '^load_us' "$tmp/4b.out" && [ "$(cubins)" = 1 ] &&
	ok "GPUEXT_CACHE=0: the PTX is loaded (the driver's own cache keeps its JIT), no cubin" || nok "GPUEXT_CACHE=0: $(last "$tmp/4b")"

# An application's JIT option that changes code generation: the PTX load,
# which honours it, not a cubin compiled without it.
rm -f "$C"/modules/*.gxcubin
env LD_LIBRARY_PATH="$PWD/$B/lib" GPUEXT_REAL_LIBCUDA="$FAKE" GPUEXT_LOG=info GPUEXT_CACHE_DIR="$C" \
	"$L" "$tmp/k1.ptx" k1 32 >"$tmp/4d.out" 2>"$tmp/4d"
! jitted "$tmp/4d" && ! hit "$tmp/4d" && grep -q 'rewritten (identity), reloaded' "$tmp/4d" && grep -q '^load_us' "$tmp/4d.out" &&
	[ "$(cubins)" = 0 ] && ok "CU_JIT_MAX_REGISTERS from the application: the rewritten PTX is loaded with it, no cubin" ||
	nok "JIT options: $(last "$tmp/4d") cubins $(cubins)"

# Arch-specific PTX (Triton's sm_90a on an H100): the link's target must be
# sm_90a too (the fake JIT refuses it otherwise, as the driver does).
sed 's/\.target sm_80/.target sm_90a/' "$tmp/k2.ptx" >"$tmp/k90a.ptx"
sed -i 's/entry k2(/entry k90a(/' "$tmp/k90a.ptx"
load "$tmp/4c" k90a
jitted "$tmp/4c" && grep -q '^load_us' "$tmp/4c.out" &&
	ok "sm_90a PTX: JIT-compiled for the arch-specific target, loaded" || nok "sm_90a: $(last "$tmp/4c")"

# Corrupt entries: a flipped byte in the cubin, a broken header, another
# key, a truncated file: one line, JIT-compiled again, the entry replaced.
for how in flip header key trunc; do
	load "$tmp/pre" k1
	case $how in
	flip) sed -i 's/%r1, %r1, 5;/%r1, %r1, 55;/' "$f" ;;
	header) sed -i '1s/.*/gpuext-cubin 9/' "$f" ;;
	key) sed -i '2s/key ./key x/' "$f" ;;
	trunc) truncate -s -10 "$f" ;;
	esac
	load "$tmp/c" k1
	n=$(grep -c "module cache: ignoring corrupt entry $f" "$tmp/c")
	if [ "$n" = 1 ] && jitted "$tmp/c" && grep -q '^load_us' "$tmp/c.out" && ! grep -q '%r1, %r1, 55;' "$f"; then
		ok "corrupt cubin entry ($how): one line, JIT-compiled again, replaced"
	else
		nok "corrupt cubin entry ($how): $n lines; $(last "$tmp/c")"
	fi
done
for how in 666 symlink; do
	load "$tmp/pre" k1
	cp "$f" "$tmp/evil"
	case $how in
	666) chmod 666 "$f"; want='writable by others (mode 0666)' ;;
	symlink) rm -f "$f" && ln -s "$tmp/evil" "$f"; want='a symbolic link' ;;
	esac
	load "$tmp/t" k1
	if grep -qF "module cache: refusing $f: $want; compiling again" "$tmp/t" && jitted "$tmp/t" && [ ! -L "$f" ] &&
		[ "$(stat -c %a "$f")" = 600 ]; then
		ok "planted cubin entry ($want): refused with one line, JIT-compiled, replaced"
	else
		nok "planted cubin entry ($how): $(last "$tmp/t")"
	fi
done

# The shared cache: prepared by a run (gpuext cache prepare --shared), read
# after the user's (empty) folder with the JIT failing, never written.
rm -rf "$C"
if "$G" cache prepare --shared --cache-dir "$S" -- $(run_env) "$L" "$tmp/k1.ptx" k1 >"$tmp/p.out" 2>&1 &&
	grep -q "$S: 2 entries, shared (0755/0644)" "$tmp/p.out" && [ "$(stat -c %a "$S/modules")" = 755 ] &&
	[ "$(stat -c %a "$(ls "$S"/modules/*.gxcubin)")" = 644 ]; then
	ok "gpuext cache prepare --shared PROGRAM: 2 entries (PTX, cubin), folder 0755, entries 0644"
else
	nok "cache prepare: $(tr '\n' ' ' <"$tmp/p.out")"
fi
before=$(ls -l --time-style=full-iso "$S/modules" | md5sum)
load "$tmp/s1" k1 GPUEXT_SHARED_CACHE_DIR="$S" FAKECUDA_LINK_FAIL=1
if hit "$tmp/s1" && grep -q 'from the module cache' "$tmp/s1" && [ -z "$(ls -A "$C/modules" 2>/dev/null)" ]; then
	[ "$before" = "$(ls -l --time-style=full-iso "$S/modules" | md5sum)" ] &&
		ok "shared cache: PTX and cubin read from it (no JIT), nothing written anywhere" || nok "shared cache was written"
else
	nok "shared cache: $(last "$tmp/s1") user: $(ls -A "$C/modules" 2>/dev/null)"
fi
sf=$(ls "$S"/modules/*.gxcubin)
cp "$sf" "$tmp/good" && chmod u+w "$sf" && sed -i 's/%r1, %r1, 5;/%r1, %r1, 55;/' "$sf" && chmod 644 "$sf"
load "$tmp/s2" k1 GPUEXT_SHARED_CACHE_DIR="$S"
[ "$(grep -c "ignoring corrupt entry $sf" "$tmp/s2")" = 1 ] && jitted "$tmp/s2" && [ -e "$sf" ] && [ "$(cubins)" = 1 ] &&
	ok "a corrupt shared entry: one line, left in place (read-only), JIT-compiled into the user's cache" ||
	nok "corrupt shared: $(last "$tmp/s2")"
cp "$tmp/good" "$sf" && chmod 644 "$sf" && rm -rf "$C"
chmod 777 "$S/modules"
load "$tmp/s3" k1 GPUEXT_SHARED_CACHE_DIR="$S"
[ "$(grep -c "not using the shared cache $S/modules: writable by others" "$tmp/s3")" = 1 ] && jitted "$tmp/s3" &&
	ok "a shared cache others can write: refused with one line, JIT-compiled" || nok "unsafe shared: $(last "$tmp/s3")"
chmod 755 "$S/modules"
rm -rf "$tmp/from"
"$G" cache prepare --cache-dir "$tmp/from" --from "$S" >"$tmp/f.out" 2>&1 && grep -q '2 entries, 2 copied from' "$tmp/f.out" &&
	[ "$(stat -c %a "$(ls "$tmp/from"/modules/*.gxcubin)")" = 600 ] &&
	ok "gpuext cache prepare --from: entries copied (0600 without --shared)" || nok "--from: $(cat "$tmp/f.out")"

# Concurrent cold starts of one module: all load, one entry of each kind.
rm -rf "$C"
pids=()
for i in 1 2 3 4; do
	load "$tmp/cc$i" k2 &
	pids+=($!)
done
bad=0
for p in "${pids[@]}"; do wait "$p" || bad=$((bad + 1)); done
[ $bad = 0 ] && [ "$(cubins)" = 1 ] && [ -z "$(ls -A "$C/modules" | grep '^\.tmp')" ] &&
	ok "4 concurrent cold starts: all loaded, one cubin entry, no temporary file" || nok "concurrent: $bad failed, $(ls -A "$C/modules")"

# The compiler. By default ptxas compiles a rewritten module whole (here the
# tests' fake ptxas, GPUEXT_CUBIN_PTXAS: it logs the arch it was asked for);
# GPUEXT_CUBIN=link the driver's linker, under keys of its own; a
# GPUEXT_CUBIN_PTXAS that is not a program: one line, the PTX load.
rm -rf "$C"
load "$tmp/p1" k90a FAKE_PTXAS_LOG="$tmp/ptxas.log"
jitted "$tmp/p1" && [ "$(cat "$tmp/ptxas.log" 2>/dev/null)" = sm_90a ] && grep -q '^load_us' "$tmp/p1.out" &&
	grep -q "cubins: rewritten modules compiled whole by $GPUEXT_CUBIN_PTXAS" "$tmp/p1" &&
	ok "default: ptxas compiles the module whole, for the PTX's arch-specific target (sm_90a), one line names it" ||
	nok "default ptxas: $(last "$tmp/p1") log $(cat "$tmp/ptxas.log" 2>/dev/null)"
load "$tmp/p2" k90a GPUEXT_CUBIN=link FAKE_PTXAS_LOG="$tmp/ptxas.log"
jitted "$tmp/p2" && [ "$(wc -l <"$tmp/ptxas.log")" = 1 ] && [ "$(cubins)" = 2 ] &&
	ok "GPUEXT_CUBIN=link: the driver's linker, not ptxas; its cubin under its own key" ||
	nok "link: $(last "$tmp/p2") cubins $(cubins)"
load "$tmp/p3" k1 GPUEXT_CUBIN_PTXAS=/nonexistent/ptxas
! jitted "$tmp/p3" && grep -q '^load_us' "$tmp/p3.out" &&
	[ "$(grep -c 'GPUEXT_CUBIN_PTXAS=/nonexistent/ptxas: not an executable ptxas; rewritten modules load as PTX' "$tmp/p3")" = 1 ] &&
	ok "GPUEXT_CUBIN_PTXAS not a program: one line, the rewritten PTX is loaded" || nok "bad ptxas: $(last "$tmp/p3")"
load "$tmp/p4" k90a GPUEXT_CUBIN_PTXAS=/nonexistent/ptxas
hit "$tmp/p4" && grep -q '^load_us' "$tmp/p4.out" &&
	ok "... but a cubin ptxas made before (a prepared cache) is still loaded" || nok "cached without ptxas: $(last "$tmp/p4")"
# The real ptxas, where the toolkit has one: a real cubin of the kernel
# stored (the fake driver cannot run it; the entry is what is checked).
REAL_PTXAS=${PTXAS:-/usr/local/cuda/bin/ptxas}
if [ -x "$REAL_PTXAS" ]; then
	rm -rf "$C"
	load "$tmp/p5" k2 GPUEXT_CUBIN_PTXAS="$REAL_PTXAS"
	e=$(ls "$C"/modules/*.gxcubin 2>/dev/null | head -1)
	jitted "$tmp/p5" && [ -n "$e" ] && grep -aq '.text.k2' "$e" && grep -aq 'ELF' "$e" &&
		ok "the toolkit's ptxas: a real cubin of the module stored ($(stat -c %s "$e") bytes)" ||
		nok "real ptxas: $(last "$tmp/p5")"
else
	ok "the toolkit's ptxas: none here ($REAL_PTXAS), skipped"
fi
# A module whose hooks call a handler (memtrace's sampled record: the
# rewriter keeps it out of line) goes to the linker, which keeps the call;
# ptxas would inline it into the capped kernel (GPU run 109).
cat >"$tmp/kc.ptx" <<'P'
.version 8.0
.target sm_80
.address_size 64
.func (.param .b32 __gx_hw9_r) __gx_hw9(.param .b32 __gx_hw9_q)
{
	.reg .b32 %r<2>;
	ld.param.b32 %r1, [__gx_hw9_q];
	st.param.b32 [__gx_hw9_r], %r1;
	ret;
}
.visible .entry kc(.param .u64 p)
{
	.reg .b32 %r<3>;
	.reg .b64 %rd<2>;
	ld.param.u64 %rd1, [p];
	mov.u32 %r1, 7;
	{
	.param .b32 __gx_cq;
	.param .b32 __gx_cr;
	st.param.b32 [__gx_cq], %r1;
	call (__gx_cr), __gx_hw9, (__gx_cq);
	ld.param.b32 %r2, [__gx_cr];
	}
	st.global.u32 [%rd1], %r2;
	ret;
}
P
rm -f "$tmp/ptxas.log"
load "$tmp/p6" kc FAKE_PTXAS_LOG="$tmp/ptxas.log"
jitted "$tmp/p6" && [ ! -s "$tmp/ptxas.log" ] && grep -q '^load_us' "$tmp/p6.out" &&
	ok "a module calling a hook handler: compiled by the driver's linker (the call kept), not ptxas" ||
	nok "handler call: $(last "$tmp/p6") ptxas log: $(cat "$tmp/ptxas.log" 2>/dev/null)"
