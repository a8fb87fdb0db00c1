#!/usr/bin/env bash
# test_image_nvcc — the image parser and `gpuext fatbin` on real nvcc 13
# output built here (cached in $BUILD/image-nvcc, rebuilt when the sources,
# this script or nvcc change): several -gencode sets, every --compress-mode,
# PTX-only, -rdc device-linked code, host objects, executables and a shared
# library. Cross-checks (cuobjdump is not part of this toolkit): entry lists
# against the -gencode sets, decompressed PTX byte-equal across compression
# modes, decompressed cubins byte-equal to `nvcc -cubin`; then golden CLI
# output, malformed files (under ASan) and the CLI's errors.
set -u
B=${BUILD:-build}
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
FATBINARY=${FATBINARY:-$(dirname "$NVCC")/fatbinary}
CLANG=${CLANG:-clang-19}
CUDA_LIB=$(dirname "$(dirname "$NVCC")")/lib64
G=$(realpath "$B/bin/gpuext")
TA=$(realpath "$B/tests/image/test_image_asan")
S=$(realpath tests/image/src)
GOLD=$(realpath tests/image/golden)
W=$B/image-nvcc
ok() { echo "ok - $1"; }
nok() { echo "not ok - $1"; }
check() { if eval "$2" >/dev/null 2>&1; then ok "$1"; else nok "$1: $2"; fi; }

if ! [ -x "$NVCC" ] || ! [ -x "$FATBINARY" ]; then
	nok "nvcc/fatbinary not found at $NVCC (install the CUDA 13 toolkit or set NVCC)"
	exit 1
fi

# 80 SASS + LTO-IR; 90 SASS+PTX; 90a SASS; 100 SASS+PTX
GEN="-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=[sm_90,compute_90]
     -gencode arch=compute_90a,code=sm_90a -gencode arch=compute_100,code=[sm_100,compute_100]
     -gencode arch=compute_80,code=lto_80"
RDC="-gencode arch=compute_80,code=[sm_80,compute_80] -gencode arch=compute_90,code=sm_90"
# The cache key: sources, toolkit, and the build recipe (between the markers).
key=$( { cat "$S"/*; echo "$GEN $RDC"; sed -n '/^# >>> build/,/^# <<< build/p' "$0"; "$NVCC" --version; } | md5sum | cut -c1-16)
mkdir -p "$W"
W=$(realpath "$W")
# The cache holds while the key is the same and every output it listed is
# still there (a `find build -name '*.o' -delete` took kern.o and left the
# stamp).
cached() {
	[ "$(cat "$W/stamp" 2>/dev/null)" = "$key" ] && [ -s "$W/files" ] || return 1
	local f
	while read -r f; do [ -e "$W/out/$f" ] || return 1; done <"$W/files"
}
# >>> build
if ! cached; then
	echo "# building nvcc outputs into $W (cached)"
	rm -rf "$W/out" && mkdir -p "$W/out"
	(
		cd "$W/out" || exit 1
		set -e
		n() { "$NVCC" "$@" 2>>nvcc.log; }
		for m in default size speed none; do
			n -fatbin --compress-mode=$m $GEN -o k_$m.fatbin "$S/kern.cu" &
			[ $m = size ] && wait
		done
		wait
		n -cubin -arch=sm_90 -o ref.sm_90.cubin "$S/kern.cu" &
		n -cubin -arch=sm_100 -o ref.sm_100.cubin "$S/kern.cu"
		wait
		n -fatbin -gencode arch=compute_90,code=compute_90 -o ptxonly.fatbin "$S/kern.cu" &
		n -c -gencode arch=compute_90,code=[sm_90,compute_90] -o kern.o "$S/kern.cu"
		wait
		n -o kexe kern.o "$S/host_main.cpp" &
		n -shared -Xcompiler -fPIC -gencode arch=compute_80,code=[sm_80,compute_80] -o libkern.so "$S/kern.cu"
		wait
		n -rdc=true -c $RDC -o rdc_main.o "$S/rdc_main.cu" &
		n -rdc=true -c $RDC -o rdc_lib.o "$S/rdc_lib.cu"
		wait
		n -rdc=true $RDC -o rdcexe rdc_main.o rdc_lib.o
		# lld leaves wrapper pointers 0 in place (only the RELATIVE relocation has them).
		"$CLANG" -fuse-ld=lld -o kexe_lld kern.o "$S/host_main.cpp" -L"$CUDA_LIB" -lcudart_static \
			-lstdc++ -ldl -lpthread -lrt 2>>nvcc.log
		"$FATBINARY" --create=golden.fatbin -64 --compress-mode=none --ident=golden.cu \
			--cmdline=-O3 --image3=kind=ptx,sm=80,file="$S/golden.ptx" \
			--image3=kind=ptx,sm=90a,file="$S/golden90a.ptx"
		"$FATBINARY" --create=golden_lz4.fatbin -64 --compress-mode=speed \
			--image3=kind=ptx,sm=80,file="$S/golden.ptx"
		# Cubins that carry their PTX (ptxas -lineinfo, as Triton builds
		# them) and that do not; a SASS-only fatbin of the former.
		n -ptx -arch=sm_90 -o li.ptx "$S/kern.cu"
		"$(dirname "$NVCC")/ptxas" -arch=sm_90 -lineinfo -o li.cubin li.ptx
		"$(dirname "$NVCC")/ptxas" -arch=sm_90 -o noli.cubin li.ptx
		n -fatbin -lineinfo -gencode arch=compute_90,code=sm_90 -o li.fatbin "$S/kern.cu"
	) || { nok "building nvcc outputs: $(tail -3 "$W/out/nvcc.log" 2>/dev/null)"; exit 1; }
	(cd "$W/out" && ls) >"$W/files"
	echo "$key" >"$W/stamp"
fi
# <<< build
cd "$W/out" || exit 1

# What `gpuext fatbin list` shows: "KIND ARCH COMP" per entry.
entries() { "$G" fatbin list "$1" | awk 'NR > 2 { print $3, $4, $5 }' | tr '\n' ';'; }

# 1. -gencode sets × compression modes.
for m in default size speed none; do
	case $m in
	default) p=zstd e=none n=6 ;;
	size) p=zstd e=zstd n=6 ;;
	speed) p=lz4 e=none n=6 ;;
	none) p=none e=none n=7 ;;
	esac
	# LTO-IR: compressed like PTX, then encoded (flag 0x10000) unless stored plain.
	want="lto sm_80 $p;elf sm_80 $e;elf sm_90 $e;ptx sm_90 $p;elf sm_90a $e;elf sm_100 $e;ptx sm_100 $p;"
	got=$(entries k_$m.fatbin)
	[ "$got" = "$want" ] && ok "compress-mode=$m: entries match the -gencode set" ||
		nok "compress-mode=$m: entries: got '$got', want '$want'"
	rm -rf x_$m && "$G" fatbin extract -o x_$m k_$m.fatbin >/dev/null 2>x_$m.err
	check "compress-mode=$m: extract writes $n files (encoded LTO-IR skipped with a note)" \
		"[ \$(ls x_$m | wc -l) = $n ] && { [ $n = 7 ] || grep -q 'entry 0 (LTO-IR) is encoded for nvJitLink; not extracted' x_$m.err; }"
done
for m in default size speed; do
	for a in sm_90 sm_100; do
		check "compress-mode=$m: $a PTX byte-equal to the uncompressed one" \
			"cmp x_$m/k_$m.$a.ptx x_none/k_none.$a.ptx"
		check "compress-mode=$m: $a cubin byte-equal to nvcc -cubin" "cmp x_$m/k_$m.$a.cubin ref.$a.cubin"
	done
done
check "uncompressed cubin byte-equal to nvcc -cubin" "cmp x_none/k_none.sm_90.cubin ref.sm_90.cubin"
check "plain LTO-IR extracted as .ltoir" "[ -s x_none/k_none.sm_80.ltoir ]"
check "extracted PTX is text with .version and .target sm_100" \
	"grep -q '^.version 9' x_size/k_size.sm_100.ptx && grep -q '^.target sm_100\$' x_size/k_size.sm_100.ptx"
check "extract --ptx writes only PTX" \
	"rm -rf xp && $G fatbin extract --ptx -o xp k_size.fatbin && [ \$(ls xp | grep -c ptx) = 2 ] && [ \$(ls xp | wc -l) = 2 ]"
check "bare cubin is listed as one sm_90 entry" "[ '$(entries ref.sm_90.cubin)' = 'elf sm_90 none;' ]"
check "bare PTX file is listed as one sm_100 entry" "[ '$(entries x_none/k_none.sm_100.ptx)' = 'ptx sm_100 none;' ]"

# 2. PTX-only.
check "PTX-only (code=compute_90): one zstd PTX entry" "[ '$(entries ptxonly.fatbin)' = 'ptx sm_90 zstd;' ]"

# 3. Host files.
check "host object: its .nv_fatbin entries" "[ '$(entries kern.o)' = 'elf sm_90 none;ptx sm_90 zstd;' ]"
check "executable: the object's container among the linked ones" \
	"$G fatbin list kexe | grep -q 'ptx  sm_90    zstd'"
# (cudart_static brings a container of its own, built for the lowest arch asked for.)
check "executable (GNU ld): our container registered by a version-1 wrapper" \
	"$G --json fatbin list kexe | grep -q '\"section\":\".nv_fatbin\",\"wrapper\":1,\"kind\":\"ptx\"'"
check "executable (lld): wrapper found through its RELATIVE relocation" \
	"$G --json fatbin list kexe_lld | grep -q '\"section\":\".nv_fatbin\",\"wrapper\":1,\"kind\":\"ptx\"'"
check "shared library: sm_80 SASS and PTX in the last container" \
	"$G fatbin list libkern.so | awk '\$2 == 1 { print \$3, \$4, \$5 }' | tr '\\n' ';' | grep -qx 'elf sm_80 none;ptx sm_80 zstd;'"
check "--json list is one JSON object with the entries" \
	"$G --json fatbin list libkern.so | grep -q '^{\"file\":\"libkern.so\",\"format\":\"host-elf\",\"containers\":2,\"entries\":\[{\"index\":0,'"

# 4. -rdc: device-linked SASS in .nv_fatbin, relocatable code in __nv_relfatbin.
check "-rdc object: relocatable SASS and PTX (--compile-only)" \
	"[ \$($G fatbin list rdc_main.o | awk 'NR > 2 && \$10 == \"reloc\"' | wc -l) = 3 ] && $G --json fatbin list rdc_main.o | grep -q '\"options\":\"--compile-only\"'"
got=$("$G" fatbin list rdcexe | awk 'NR > 2 { print $2, $3, $4, ($10 == "reloc") ? "rel" : "linked" }' | tr '\n' ';')
want="0 elf sm_80 linked;0 elf sm_90 linked;1 elf sm_80 rel;1 ptx sm_80 rel;1 elf sm_90 rel;2 elf sm_80 rel;2 ptx sm_80 rel;2 elf sm_90 rel;"
check "-rdc executable: the linked container is registered by a version-2 wrapper" \
	"$G --json fatbin list rdcexe | grep -q '{\"index\":0,\"container\":0,\"section\":\".nv_fatbin\",\"wrapper\":2,'"
[ "$got" = "$want" ] && ok "-rdc executable: linked container + 2 prelinked" || nok "-rdc executable: got '$got', want '$want'"

# 5. Every file parses and decompresses under ASan (library, not CLI).
out=$("$TA" k_*.fatbin ptxonly.fatbin ref.*.cubin kern.o kexe kexe_lld libkern.so rdc_*.o rdcexe golden*.fatbin 2>&1)
echo "$out" | grep -q '^not ok' && echo "$out" | grep '^not ok' || ok "all nvcc outputs parse and decompress under ASan ($(echo "$out" | grep -c '^ok') files)"

# 6. Golden CLI output on a small fixed fatbin.
for f in golden golden_lz4; do
	"$G" fatbin list $f.fatbin >$f.list.txt 2>&1
	"$G" --json fatbin list $f.fatbin >$f.list.json 2>&1
	for t in txt json; do
		if [ "${GX_UPDATE_GOLDEN:-0}" = 1 ]; then cp $f.list.$t "$GOLD/$f.list.$t"; fi
		check "golden: fatbin list ($t) of $f.fatbin" "diff -u '$GOLD/$f.list.$t' $f.list.$t"
	done
done
rm -rf xg && "$G" fatbin extract -o xg golden.fatbin >/dev/null
check "golden: extracted sm_80 PTX is the input, minified (no comments)" \
	"grep -q '^.visible .entry golden_kernel' xg/golden.sm_80.ptx && ! grep -q '^//' xg/golden.sm_80.ptx"
check "golden: extract names from the file, arch suffix 'a'" "[ -f xg/golden.sm_90a.ptx ]"

# 7. Malformed files: clean errors, no crash (ASan library run + CLI exit codes).
sz=$(stat -c %s k_default.fatbin)
mk() { cp k_default.fatbin "$1"; printf "$2" | dd of="$1" bs=1 seek="$3" conv=notrunc status=none; }
head -c 100 k_default.fatbin >bad_trunc.fatbin
head -c $((sz - 1)) k_default.fatbin >bad_trunc2.fatbin
mk bad_magic.fatbin '\x00\x00\x00\x00' 0
mk bad_fatsize.fatbin '\xff\xff\xff\xff\xff\xff' 8
mk bad_hsize.fatbin '\x08\x00\x00\x00' 20
mk bad_psize.fatbin '\xff\xff\xff\xff\xff\x00' 24
head -c 200 kexe >bad_elf
printf 'garbage that is not an image at all' >bad_garbage
printf '\xb1\x43\x62\x46\x01\x00\x00\x00' >bad_wrapper
: >bad_empty
for f in bad_trunc.fatbin bad_trunc2.fatbin bad_magic.fatbin bad_fatsize.fatbin bad_hsize.fatbin \
	bad_psize.fatbin bad_elf bad_garbage bad_wrapper; do
	err=$("$G" fatbin list $f 2>&1 >/dev/null)
	rc=$?
	if [ $rc = 1 ] && echo "$err" | grep -q '^gpuext: error: '; then
		ok "malformed $f: exit 1, '${err#gpuext: error: }'"
	else
		nok "malformed $f: rc $rc, '$err'"
	fi
done
check "empty file: clear error" "$G fatbin list bad_empty 2>&1 | grep -q \"error: 'bad_empty' is empty\""
check "wrapper file: hint to use the binary" "$G fatbin list bad_wrapper 2>&1 | grep -q 'try the executable or library'"
check "truncated fatbin: names the container and sizes" \
	"$G fatbin list bad_trunc.fatbin 2>&1 | grep -q 'fatbin container 0 at offset 0: size [0-9]* exceeds the 100 bytes available'"
"$TA" -e bad_* >asan.log 2>&1
rc=$?
[ $rc = 0 ] && ! grep -q 'ERROR: AddressSanitizer\|runtime error' asan.log && ok "malformed files under ASan: no crash" ||
	nok "malformed files under ASan: rc $rc: $(grep -m3 'ERROR\|runtime error' asan.log)"
# Corrupt compressed payload: listing works, extraction fails cleanly.
cp k_default.fatbin bad_zstd.fatbin
off=$("$G" --json fatbin list bad_zstd.fatbin | grep -o '"kind":"ptx"[^}]*"compression":"zstd"[^}]*"data_offset":[0-9]*' | head -1 | sed 's/.*://')
printf '\xff\xff\xff\xff\xff\xff\xff\xff' | dd of=bad_zstd.fatbin bs=1 seek=$((off + 8)) conv=notrunc status=none
check "corrupt zstd payload: list still works" "$G fatbin list bad_zstd.fatbin"
check "corrupt zstd payload: extract fails with a reason" \
	"! $G fatbin extract -o xbad bad_zstd.fatbin && $G fatbin extract -o xbad bad_zstd.fatbin 2>&1 | grep -q 'cannot decompress: Bad message'"

# The CLI itself under valgrind: no invalid access, no leak, on good and bad input.
if command -v valgrind >/dev/null; then
	for args in "fatbin extract -o xv k_speed.fatbin" "fatbin extract -o xv2 k_size.fatbin" \
		"--json fatbin list rdcexe" "fatbin list bad_trunc.fatbin" "fatbin extract -o xb bad_zstd.fatbin"; do
		valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
			"$G" $args >/dev/null 2>vg.log
		[ $? != 99 ] && ! grep -q '^==' vg.log && ok "valgrind clean: gpuext $args" ||
			nok "valgrind: gpuext $args: $(grep -m3 '^==' vg.log)"
	done
fi

# 7b. The PTX a -lineinfo cubin carries (.nv_debug_ptx_txt): what the shim
# loads in place of such cubins under a device policy. It is the PTX that
# was compiled, comments and indentation aside, and ptxas accepts it.
check "lineinfo cubin: extract --ptx writes its PTX" \
	"$G fatbin extract --ptx -o xli li.cubin && [ -s xli/li.sm_90.lineinfo.ptx ]"
check "lineinfo cubin: the carried PTX is the compiled PTX (comments, blank lines, indentation aside)" \
	"diff <(grep -v '^[[:space:]]*//' li.ptx | sed 's/^[[:space:]]*//' | grep -v '^\$') <(grep -v '^\$' xli/li.sm_90.lineinfo.ptx)"
check "lineinfo cubin: ptxas accepts the carried PTX" \
	"$(dirname "$NVCC")/ptxas -arch=sm_90 -o /dev/null xli/li.sm_90.lineinfo.ptx"
check "plain cubin: no carried PTX, nothing to extract with --ptx" \
	"! $G fatbin extract --ptx -o xnoli noli.cubin 2>/dev/null && [ ! -e xnoli/noli.sm_90.lineinfo.ptx ]"
check "nvcc -lineinfo fatbin (SASS only): its cubin's PTX is extracted too" \
	"$G fatbin extract --ptx -o xlf li.fatbin && [ -s xlf/li.sm_90.lineinfo.ptx ]"

# 8. CLI errors with hints.
check "missing file: error names it" "$G fatbin list nosuch 2>&1 | grep -q \"cannot open 'nosuch': No such file\""
check "list without FILE: usage hint" "! $G fatbin list && $G fatbin list 2>&1 | grep -q \"try 'gpuext fatbin help'\""
check "unknown subcommand: hint" "$G fatbin frob 2>&1 | grep -q \"unknown command 'fatbin frob'\""
check "extract bad option: exit 2 with a hint" \
	"$G fatbin extract --bogus k_none.fatbin; [ \$? = 2 ] && $G fatbin extract --bogus k_none.fatbin 2>&1 | grep -q \"bad option '--bogus' (try 'gpuext fatbin help')\""
check "extract --elf on PTX-only: nothing to extract" \
	"! $G fatbin extract --elf -o xe ptxonly.fatbin && $G fatbin extract --elf -o xe ptxonly.fatbin 2>&1 | grep -q 'nothing to extract (no ELF entries)'"
check "host binary without device code: note, exit 0" \
	"$G fatbin list $G 2>&1 | grep -q 'holds no CUDA device code'"
check "fatbin help" "$G fatbin help | grep -q 'gpuext fatbin extract'"

# 9. Speed on a big real library (mapped, headers only).
big=$(ls "$(dirname "$(dirname "$NVCC")")"/lib64/libcublasLt.so.* 2>/dev/null | head -1)
if [ -n "$big" ]; then
	t0=$(date +%s%N)
	n=$("$G" fatbin list "$big" | tail -n +3 | wc -l)
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	[ "$n" -gt 1000 ] && [ $ms -lt 20000 ] && ok "list $(basename "$big") ($(( $(stat -c %s "$big") >> 20 )) MiB): $n entries in $ms ms" ||
		nok "list $(basename "$big"): $n entries in $ms ms"
fi
