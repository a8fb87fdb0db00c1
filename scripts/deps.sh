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
PKGS_MAIN="build-essential pkg-config libelf-dev libzstd-dev liblz4-dev uthash-dev zlib1g-dev
  llvm-19-dev clang-19 lld-19 libclang-rt-19-dev qemu-system-x86 busybox-static cpio valgrind python3"
PKGS_BPO="libbpf-dev bpftool linux-headers-$KVER"

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

# The kernel image for the QEMU tests: unpacked into a cache, not installed
# (installing runs mkinitramfs for minutes and is not needed).
CACHE=${GPUEXT_CACHE:-$HOME/.cache/gpuext}
if [ ! -f "$CACHE/kernel/boot/vmlinuz-$KVER" ]; then
    add_backports
    mkdir -p "$CACHE/kernel" && tmp=$(mktemp -d)
    (cd "$tmp" && apt-get download "linux-image-$KVER-unsigned" >/dev/null 2>&1 ||
        { $SUDO apt-get update -q && apt-get download "linux-image-$KVER-unsigned"; })
    dpkg-deb -x "$tmp"/linux-image-*.deb "$CACHE/kernel"
    rm -rf "$tmp"
fi
echo "deps: all present"
