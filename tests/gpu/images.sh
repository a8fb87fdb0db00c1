#!/usr/bin/env bash
# GPU-machine check of the image parser (run by tests/gpu/run.sh; needs no
# GPU, only what that machine has and ours lacks):
#  1. cuobjdump, if the toolkit there has it: the entries `gpuext fatbin list`
#     finds in nvcc outputs (every --compress-mode, -rdc) against
#     `cuobjdump -lelf -lptx`, and PTX from `gpuext fatbin extract` against
#     `cuobjdump -xptx`, byte for byte.
#  2. The CUDA libraries of the machine's Python (PyTorch, CuPy, nvidia-*
#     wheels): `gpuext fatbin list` on each (time, entries), and every entry of
#     the largest ones decompressed with its recorded sizes (test_image FILE).
# Logs under $OUT/images/.
set -u
cd "${GX_ROOT:-$(dirname "$0")/../..}"
B=${GX_BUILD:-build}
G=$(realpath "$B/bin/gpuext")
T=$(realpath "$B/tests/image/test_image")
O=${OUT:-$B/gpu-out}/images
mkdir -p "$O"
export PATH=$PATH:/usr/local/cuda/bin
ok() { echo "ok - images: $1"; }
nok() { echo "not ok - images: $1"; }

# 1. cuobjdump cross-check.
if command -v cuobjdump >/dev/null && command -v nvcc >/dev/null; then
	W=$O/cuobjdump && rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
	S=$GX_ROOT/tests/image/src
	GEN="-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=[sm_90,compute_90] -gencode arch=compute_100,code=[sm_100,compute_100]"
	for m in default size speed none; do
		nvcc -fatbin --compress-mode=$m $GEN -o k_$m.fatbin "$S/kern.cu" 2>>build.log
	done
	nvcc -rdc=true -c -gencode arch=compute_80,code=[sm_80,compute_80] -o rdc_main.o "$S/rdc_main.cu" 2>>build.log
	nvcc -rdc=true -c -gencode arch=compute_80,code=[sm_80,compute_80] -o rdc_lib.o "$S/rdc_lib.cu" 2>>build.log
	nvcc -rdc=true -gencode arch=compute_80,code=[sm_80,compute_80] -o rdcexe rdc_main.o rdc_lib.o 2>>build.log
	# cuobjdump: "ELF file    1: k.1.sm_90.cubin" -> "elf sm_90"
	cuo_entries() { sed -n 's/^\(ELF\|PTX\) file *[0-9]*: .*\.\(sm_[0-9]*[af]\?\)\.\(cubin\|ptx\)$/\1 \2/p' "$1" |
		tr 'A-Z' 'a-z' | sort | tr '\n' ';'; }
	# Ours: "KIND ARCH" of the entries whose CODE column ($10) matches $2.
	our_entries() { "$G" fatbin list "$1" | awk -v c="$2" 'NR > 2 && $10 ~ c { print $3, $4 }' | sort | tr '\n' ';'; }
	for f in k_default.fatbin k_size.fatbin k_speed.fatbin k_none.fatbin rdc_main.o rdcexe; do
		[ -f "$f" ] || { nok "nvcc did not build $f: $(tail -2 build.log)"; continue; }
		cuobjdump -lelf -lptx "$f" >"$f.cuobjdump" 2>&1
		theirs=$(cuo_entries "$f.cuobjdump")
		# Like with like: for an executable or shared library cuobjdump lists
		# the loadable code (.nv_fatbin: CODE "linked"), not the -rdc
		# relocatable inputs nvcc keeps in __nv_relfatbin; for an object (.o)
		# and a bare fatbin, everything.
		what="entries" sel=.
		if readelf -h "$f" 2>/dev/null | grep -qE 'Type: +(EXEC|DYN)'; then
			what="linked entries" sel='^linked$'
		fi
		ours=$(our_entries "$f" "$sel")
		[ -n "$theirs" ] && [ "$theirs" = "$ours" ] && ok "$f: $what match cuobjdump ($theirs)" ||
			nok "$f: ours ($what) '$ours', cuobjdump '$theirs' (see $W/$f.cuobjdump)"
		# The relocatable ones: cuobjdump -all may list them too (informative).
		if [ "$sel" != . ] && [ -n "$(our_entries "$f" '^reloc$')" ]; then
			cuobjdump -all -lelf -lptx "$f" >"$f.all.cuobjdump" 2>&1
			theirs=$(cuo_entries "$f.all.cuobjdump") ours=$(our_entries "$f" .)
			[ "$theirs" = "$ours" ] && ok "$f: all entries (linked + relocatable) match cuobjdump -all ($theirs)" ||
				echo "# images: $f: cuobjdump -all lists '$theirs', ours (all sections) '$ours' (see $W/$f.all.cuobjdump)"
		fi
	done
	for m in default size speed none; do
		mkdir -p x_$m c_$m
		"$G" fatbin extract --ptx -o x_$m k_$m.fatbin >/dev/null
		(cd c_$m && cuobjdump -xptx all ../k_$m.fatbin >/dev/null 2>&1)
		for a in sm_90 sm_100; do
			c=$(ls c_$m/*.$a.ptx 2>/dev/null | head -1)
			if [ -z "$c" ]; then
				nok "cuobjdump -xptx k_$m.fatbin wrote no $a PTX"
			elif cmp -s "$c" x_$m/k_$m.$a.ptx || cmp -s <(tr -d '\0' <"$c") x_$m/k_$m.$a.ptx; then
				ok "compress-mode=$m: $a PTX byte-equal to cuobjdump -xptx"
			else
				nok "compress-mode=$m: $a PTX differs from cuobjdump -xptx ($c)"
			fi
		done
	done
	cd "$GX_ROOT" || exit 1
else
	echo "# images: no cuobjdump here; skipping the cross-check"
fi

# 2. Real libraries from the Python environment.
libs=$(python3 - <<'PY' 2>/dev/null
import importlib, os, glob
seen = set()
for mod in ("torch", "cupy", "cupy_backends", "nvidia"):
    try:
        m = importlib.import_module(mod)
    except Exception:
        continue
    for root in getattr(m, "__path__", []) or [os.path.dirname(m.__file__)]:
        for p in glob.glob(os.path.join(root, "**", "*.so*"), recursive=True):
            if os.path.isfile(p) and os.path.getsize(p) > 1 << 20 and os.path.realpath(p) not in seen:
                seen.add(os.path.realpath(p))
                print(os.path.realpath(p))
PY
)
n=0
: >"$O/libs.txt"
for l in $libs; do
	readelf -SW "$l" 2>/dev/null | grep -q ' \.nv_fatbin ' || continue
	t0=$(date +%s%N)
	if "$G" fatbin list "$l" >"$O/list.tmp" 2>&1; then
		ms=$(( ($(date +%s%N) - t0) / 1000000 ))
		echo "$(stat -c %s "$l") $ms $(head -1 "$O/list.tmp")" >>"$O/libs.txt"
		n=$((n + 1))
	else
		nok "gpuext fatbin list $l: $(head -2 "$O/list.tmp")"
	fi
done
if [ $n -gt 0 ]; then
	big=$(sort -n "$O/libs.txt" | tail -1)
	ok "listed $n CUDA libraries of the Python environment; largest: $(( ${big%% *} >> 20 )) MiB in $(echo "$big" | cut -d' ' -f2) ms ($(echo "$big" | cut -d' ' -f3- | sed 's/^[^:]*: //'))"
	sort -n "$O/libs.txt" | tail -3 | cut -d: -f1 | awk '{ print $3 }' | while read -r l; do
		"$T" "$l" | sed 's/^\(not \)\?ok - /&images: /'
	done
else
	echo "# images: no PyTorch/CuPy CUDA libraries found"
fi
