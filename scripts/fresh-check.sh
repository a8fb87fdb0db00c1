#!/usr/bin/env bash
# fresh-check.sh — prove the README's two set-up commands on a fresh Debian 12.
#
# A development machine is never fresh: a package once installed by hand hides
# a missing install step. This script makes a bare bookworm root with
# debootstrap (only what a new machine of ours has: gcc, make, git, python3),
# with bookworm's own linux-libc-dev, clones the committed HEAD into it, and
# runs, as a new user would, with a scratch HOME:
#     make deps && make      then      make test
# The CUDA toolkit is bind-mounted from the host (/usr/local/cuda, as on every
# machine of ours), and /dev too, so the QEMU test meets /dev/kvm if the host
# has one. It reports the packages `make deps` installed and the test summary.
#
#   sudo scripts/fresh-check.sh [ROOT]     (default /var/tmp/gpuext-fresh)
#   FRESH_KEEP=1 keeps an existing ROOT's base system (skips debootstrap).
# Needs root (debootstrap, chroot, mounts); installs debootstrap if missing.
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "fresh-check: run as root (debootstrap, chroot)" >&2; exit 2; }
SRC=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
ROOT=${1:-/var/tmp/gpuext-fresh}
CUDA=${CUDA_HOME:-/usr/local/cuda}
LOG=${FRESH_LOG:-$ROOT.log}
[ -d "$CUDA/bin" ] || { echo "fresh-check: no CUDA toolkit at $CUDA" >&2; exit 2; }

mounts=()
cleanup() { for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "${mounts[i]}" 2>/dev/null || true; done; }
trap cleanup EXIT
bind() { mkdir -p "$ROOT$2"; mount --bind "$1" "$ROOT$2"; mounts+=("$ROOT$2"); }

if [ -z "${FRESH_KEEP:-}" ] || [ ! -x "$ROOT/usr/bin/make" ]; then
	command -v debootstrap >/dev/null || apt-get install -y -q debootstrap >/dev/null
	mirror=$("$SRC/scripts/apt-mirror.sh")
	rm -rf "$ROOT"
	echo "fresh-check: debootstrap bookworm into $ROOT"
	debootstrap --variant=minbase --include=gcc,make,git,python3,ca-certificates,libc6-dev \
		bookworm "$ROOT" "$mirror" >"$ROOT.debootstrap.log" 2>&1 ||
		{ tail -n 20 "$ROOT.debootstrap.log"; exit 1; }
	printf 'deb %s bookworm main\ndeb %s bookworm-updates main\n' "$mirror" "$mirror" >"$ROOT/etc/apt/sources.list"
fi
cp /etc/resolv.conf "$ROOT/etc/resolv.conf" 2>/dev/null || true
bind /proc /proc
bind /sys /sys
bind /dev /dev
bind "$CUDA" /usr/local/cuda
rm -rf "$ROOT/src" "$ROOT/home-scratch" && mkdir -p "$ROOT/home-scratch"
git clone -q "$SRC" "$ROOT/src"
dpkg --root="$ROOT" -l | awk '/^ii/{print $2}' | sort >"$ROOT.before"
# What the machine would boot: make deps must leave it alone (no kernel image
# installed, no /vmlinuz re-pointed).
boot_state() { (cd "$ROOT" && ls -la --time-style=+ vmlinuz vmlinuz.old boot 2>&1; dpkg --root="$ROOT" -l 'linux-image*' 2>/dev/null | grep '^ii') || true; }
boot_state >"$ROOT.boot-before"
echo "fresh-check: linux-libc-dev in the root: $(chroot "$ROOT" dpkg-query -W -f='${Version}' linux-libc-dev)"
echo "fresh-check: running the README's commands at $(git -C "$SRC" rev-parse --short HEAD) (log: $LOG)"
set +e
chroot "$ROOT" /usr/bin/env -i HOME=/home-scratch PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin \
	bash -c 'cd /src && make deps && make && make test' >"$LOG" 2>&1
rc=$?
set -e
dpkg --root="$ROOT" -l | awk '/^ii/{print $2}' | sort >"$ROOT.after"
echo "fresh-check: make deps installed $(comm -13 "$ROOT.before" "$ROOT.after" | wc -l) packages (list: $ROOT.after)"
boot_state >"$ROOT.boot-after"
if cmp -s "$ROOT.boot-before" "$ROOT.boot-after"; then
	echo "fresh-check: boot unchanged (no kernel image installed, /vmlinuz and /boot as before)"
else
	echo "fresh-check: BOOT CHANGED:"; diff "$ROOT.boot-before" "$ROOT.boot-after"; rc=1
fi
if [ -f "$ROOT/src/build/kmod-vm/console-kvm.log" ]; then
	echo "fresh-check: the QEMU test's KVM start failed and it ran under TCG: $(head -n 1 "$ROOT/src/build/kmod-vm/console-kvm.log")"
elif [ -e /dev/kvm ]; then echo "fresh-check: /dev/kvm present; the QEMU test ran under KVM"; fi
tail -n 1 "$LOG"
[ $rc = 0 ] && echo "fresh-check: PASS" || echo "fresh-check: FAIL (rc $rc)"
exit $rc
