#!/usr/bin/env bash
# dist.sh BUILD VERSION — the install payload and its archives (`make dist`):
#   BUILD/dist/gpuext-VERSION/                   the relocatable tree
#     bin/      gpuext, gpuext-run, gpuext-ptxas, gx_* (host-policy loaders
#               for the kernel module; libbpf linked in)
#     lib/      libcuda.so.1 (the shim), libcuda.so, gpuext-audit.so
#     share/gpuext/{tools,sched,host,tenant}/*.bpf.o, cuda/bin/ptxas,
#               include/gpuext/*.h (to write policies), cache/ (the shipped
#               tools and schedule policies JIT'd for every GPU generation,
#               read by the shim when the machine has no LLVM)
#     share/doc/gpuext/, LICENSE, README.md
#   BUILD/dist/gpuext-VERSION-linux-x86_64.tar.gz
#   BUILD/dist/gpuext-llvm-VERSION-linux-x86_64.tar.gz  the optional JIT add-on
#               (lib/libgxjit.so, lib/gpuext-bpfjit.so and the LLVM 19
#               libraries they need, in lib/gpuext-llvm/): user policies JIT'd on
#               the GPU host itself; unpack it over the install
# Everything is found relative to the programs (no build path inside), and
# scripts/dist-check.sh refuses a payload a stock GPU host could not run.
set -euo pipefail
B=${1:?usage: dist.sh BUILD VERSION}
V=${2:?usage: dist.sh BUILD VERSION}
ROOT=$(pwd)
name=gpuext-$V
out=$B/dist
S=$out/$name
A=$out/addon/$name
rm -rf "$S" "$out/addon" && mkdir -p "$S"/{bin,lib} "$S"/share/gpuext/{tools,sched,host,tenant,cache,include,cuda/bin,exporter} \
	"$S/share/doc/gpuext" "$A/lib/gpuext-llvm"
umask 022

# Programs and libraries, stripped of debug information (it names build paths).
install_elf() { # SRC DESTDIR
	cp "$1" "$2/" && strip --strip-unneeded "$2/$(basename "$1")"
}
for f in gpuext gpuext-run gpuext-ptxas gpuext-exporter; do install_elf "$B/bin/$f" "$S/bin"; done
for f in "$B"/bin/gx_*; do install_elf "$f" "$S/bin"; done
install_elf "$B/lib/libcuda.so.1" "$S/lib"
install_elf "$B/lib/gpuext-audit.so" "$S/lib"
ln -s libcuda.so.1 "$S/lib/libcuda.so"
ln -s ../../../../bin/gpuext-ptxas "$S/share/gpuext/cuda/bin/ptxas"

# Policies and tools (BPF objects keep their BTF: the loaders need it).
cp "$B"/share/gpuext/tools/*.bpf.o "$S/share/gpuext/tools/"
cp "$B"/share/gpuext/sched/*.bpf.o "$S/share/gpuext/sched/"
for p in fifo lfu mru quota seq stride tree prio; do cp "$B/hostbpf/gx_$p.bpf.o" "$S/share/gpuext/host/"; done
for p in lcfirst tbucket lcslo; do cp "$B/hostbpf/gx_$p.bpf.o" "$S/share/gpuext/tenant/"; done
cp include/gpuext/*.h "$S/share/gpuext/include/"
mkdir -p "$S/share/gpuext/include/gpuext" && mv "$S"/share/gpuext/include/*.h "$S/share/gpuext/include/gpuext/"

# The JIT cache for machines without LLVM: every tool and schedule policy
# for every JIT architecture, made here with this build's JIT.
jitlib=$(cd "$B" && pwd)/lib/libgxjit.so
GPUEXT_JITLIB=$jitlib GPUEXT_TOOLS_DIR=$S/share/gpuext/tools \
	"$B/bin/gpuext" tools prepare --shared --cache-dir "$S/share/gpuext/cache" --sm all >"$out/prepare.log"
GPUEXT_JITLIB=$jitlib \
	"$B/bin/gpuext" tools prepare --shared --cache-dir "$S/share/gpuext/cache" --sm all "$S"/share/gpuext/sched/*.bpf.o >>"$out/prepare.log"

cp README.md LICENSE "$S/"
cp docs/*.md "$S/share/doc/gpuext/"
# the exporter's example configs and the Grafana dashboard (docs/metrics.md)
cp deploy/exporter/*.conf deploy/grafana/gpuext.json "$S/share/gpuext/exporter/"
cp -r LICENSES "$S/share/doc/gpuext/"

# The JIT add-on: libgxjit.so and the plugin, with LLVM's
# libraries beside them (found through $ORIGIN/gpuext-llvm).
install_elf "$B/lib/libgxjit.so" "$A/lib"
install_elf "$B/lib/gpuext-bpfjit.so" "$A/lib"
scripts/pack-jit-libs.sh --plain "$A/lib/gpuext-llvm" "$B/lib/libgxjit.so" >/dev/null
# Each finds the others beside itself (Debian's libLLVM says $ORIGIN/../lib,
# which would be the install's lib/, where they must not be: LD_LIBRARY_PATH
# puts that folder before every application's own libraries).
for l in "$A"/lib/gpuext-llvm/*; do patchelf --set-rpath '$ORIGIN' "$l"; done
# their packages' licences beside them
mkdir -p "$A/share/doc/gpuext-llvm"
for l in "$A"/lib/gpuext-llvm/*; do
	pkg=$(dpkg -S "$(basename "$l")" 2>/dev/null | head -n1 | cut -d: -f1) || true
	[ -n "$pkg" ] && [ -f "/usr/share/doc/$pkg/copyright" ] && cp "/usr/share/doc/$pkg/copyright" "$A/share/doc/gpuext-llvm/$pkg.copyright"
done

scripts/dist-check.sh "$S" "$ROOT" || { echo "dist: $S cannot ship (above)" >&2; exit 1; }
scripts/dist-check.sh "$A" "$ROOT" || { echo "dist: the JIT add-on cannot ship (above)" >&2; exit 1; }

# Reproducible archives: sorted, owned by root, dated by the last commit.
when=$(git log -1 --format=%ct 2>/dev/null || echo 0)
tgz() { # ARCHIVE DIR_PARENT NAME
	tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$when" -C "$2" -cf - "$3" | gzip -9n >"$1"
}
tgz "$out/$name-linux-x86_64.tar.gz" "$out" "$name"
tgz "$out/gpuext-llvm-$V-linux-x86_64.tar.gz" "$out/addon" "$name"
size=$(stat -c %s "$out/$name-linux-x86_64.tar.gz")
if [ "$size" -gt $((30 << 20)) ]; then
	echo "dist: $name-linux-x86_64.tar.gz is $((size >> 20)) MB, over the 30 MB goal" >&2
	exit 1
fi
echo "dist: $out/$name-linux-x86_64.tar.gz ($((size >> 10)) KiB), $out/gpuext-llvm-$V-linux-x86_64.tar.gz ($(($(stat -c %s "$out/gpuext-llvm-$V-linux-x86_64.tar.gz") >> 10)) KiB)"
