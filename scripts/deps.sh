#!/usr/bin/env bash
# Install everything gpuext needs on a clean Debian 12 (bookworm). Idempotent.
# bookworm-backports is added by deriving the mirror from the machine's own
# Debian sources, so no registry host name is written into the repository.
# `deps.sh --check` installs nothing: it prints one line naming what is
# missing (the Makefile runs it before building) and exits 1, or prints nothing.
set -euo pipefail
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo

# The Debian mirror this machine's apt already uses (scripts/apt-mirror.sh).
add_backports() {
    grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/ && return 0
    local uri
    uri=$("$(dirname "$0")/apt-mirror.sh") || exit 1
    echo "deb $uri bookworm-backports main" | $SUDO tee /etc/apt/sources.list.d/gpuext-backports.list >/dev/null
}

KVER=6.12.95+deb12-amd64
# pahole and gcc-12 (in build-essential) are what Debian's kbuild package needs.
PKGS_MAIN="build-essential pkg-config libelf-dev libzstd-dev liblz4-dev uthash-dev zlib1g-dev
  llvm-19-dev clang-19 clang-format-19 lld-19 libclang-rt-19-dev qemu-system-x86 busybox-static cpio valgrind python3
  pahole libssl3 kmod debootstrap python3-venv python3-pip python3-yaml patchelf
  libmicrohttpd-dev prometheus"
PKGS_BPO="libbpf-dev bpftool"
# The 6.12 kernel's headers, kbuild and image are unpacked into KCACHE, not
# installed: the headers package depends on the image, whose install would make
# it this machine's boot kernel (update-initramfs, /vmlinuz re-pointed).
KCACHE=${GX_KERNEL_CACHE:-$HOME/.cache/gpuext/kernel}
KDEBS="linux-headers-$KVER linux-headers-${KVER%-amd64}-common linux-kbuild-${KVER%-amd64} linux-image-$KVER-unsigned"

# One dpkg-query for all packages; a package it does not know prints nothing.
installed=$(dpkg-query -W -f='${Package} ${Status} ${Version}\n' $PKGS_MAIN $PKGS_BPO 2>/dev/null || true)
missing=""
for p in $PKGS_MAIN $PKGS_BPO; do
    grep -q "^$p install ok installed" <<<"$installed" || missing="$missing $p"
done
# libbpf-dev must be >= 1.4 (bookworm itself has 1.1).
if grep -q '^libbpf-dev install ok installed 1:1\.[0-3]' <<<"$installed"; then missing="$missing libbpf-dev(>=1.4)"; fi

if [ "${1:-}" = --check ]; then
    command -v dpkg-query >/dev/null || exit 0   # not Debian: the compiler will tell
    [ -f "$KCACHE/usr/src/linux-headers-$KVER/Makefile" ] || missing="$missing kernel-headers-$KVER(in $KCACHE)"
    # (made only as root: test_deploy.sh needs root anyway and says so)
    [ "$(id -u)" != 0 ] || [ -x "${GX_ROOTFS:-$HOME/.cache/gpuext/rootfs-bookworm}/bin/sh" ] ||
        missing="$missing debian-root(for tests/dist)"
    [ -z "$missing" ] && exit 0
    echo "gpuext: missing packages:$missing (run: make deps)"
    exit 1
fi
missing=${missing//(>=1.4)/}

if [ -n "$missing" ]; then
    add_backports
    $SUDO apt-get update -q
    # shellcheck disable=SC2086
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $PKGS_MAIN
    # shellcheck disable=SC2086
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(for p in $PKGS_BPO; do echo "$p/bookworm-backports"; done)
fi

# The kernel headers (for kbuild) and image (for the QEMU tests), unpacked.
if [ ! -f "$KCACHE/boot/vmlinuz-$KVER" ] || [ ! -f "$KCACHE/usr/src/linux-headers-$KVER/Makefile" ]; then
    add_backports
    mkdir -p "$KCACHE" && tmp=$(mktemp -d) && chmod 755 "$tmp"
    # shellcheck disable=SC2086
    (cd "$tmp" && { apt-get download $KDEBS >/dev/null 2>&1 ||
        { $SUDO apt-get update -q && apt-get download $KDEBS; }; })
    for d in "$tmp"/*.deb; do dpkg-deb -x "$d" "$KCACHE"; done
    rm -rf "$tmp"
    # Debian's headers Makefile includes the common tree by its absolute path.
    sed -i "s|^include /usr/src/|include $KCACHE/usr/src/|" "$KCACHE/usr/src/linux-headers-$KVER/Makefile"
fi
# A Debian root for the cluster test (tests/dist/test_deploy.sh): the stand-in
# for a node and a container, with the libraries gpuext's CLI needs.
ROOTFS=${GX_ROOTFS:-$HOME/.cache/gpuext/rootfs-bookworm}
if [ ! -x "$ROOTFS/bin/sh" ] && [ "$(id -u)" = 0 ]; then
    rm -rf "$ROOTFS.tmp" && mkdir -p "$(dirname "$ROOTFS")"
    debootstrap --variant=minbase --include=libelf1,libzstd1,liblz4-1 bookworm "$ROOTFS.tmp" \
        "$("$(dirname "$0")/apt-mirror.sh")" >"$ROOTFS.log" 2>&1 ||
        { echo "deps: debootstrap failed (log: $ROOTFS.log)" >&2; exit 1; }
    mv "$ROOTFS.tmp" "$ROOTFS"
fi
echo "deps: all present"
