#!/usr/bin/env bash
# test_kmod_qemu.sh — builds a minimal initramfs (static busybox, our loaders
# and test programs with their shared libraries, gpuext.ko, gx_consumer.ko,
# tests/kmod/vm-init.sh as /init), boots Debian's 6.12 kernel in QEMU (KVM, else TCG, 512 MiB,
# one CPU) once, and relays the ok/not ok lines printed on the serial
# console. A VM that does not boot or finish in time is a failure.
# GX_KMOD_FUZZ sets the fuzzer's call count (default 100000).
set -u
ROOT=$(pwd)
B=${BUILD:-build}
KVER=${KVER:-6.12.95+deb12-amd64}
KIMG=${GPUEXT_KERNEL:-${GX_KERNEL_CACHE:-$HOME/.cache/gpuext/kernel}/boot/vmlinuz-$KVER}
W=$B/kmod-vm
TIMEOUT=${GX_KMOD_VM_TIMEOUT:-300}
fail() { echo "not ok - vm: $*"; exit 0; }
[ -f "$KIMG" ] || fail "kernel image $KIMG missing (run make deps)"
[ -f "$B/kmod/gpuext.ko" ] || fail "$B/kmod/gpuext.ko not built"
command -v qemu-system-x86_64 >/dev/null || fail "qemu-system-x86_64 missing (run make deps)"
rm -rf "$W" && mkdir -p "$W/root"/{bin,dev,proc,sys,tmp,etc} || fail "cannot make $W"
R=$W/root
cp /bin/busybox "$R/bin/busybox"
bins="$B/tests/kmod/gx_vmtest $B/tests/kmod/gx_kmod_fuzz $B/tests/kmod/gx_client_test $B/tests/kmod/gx_bad"
for p in fifo lfu mru quota seq stride tree prio tenant; do bins="$bins $B/bin/gx_$p"; done
for f in $bins; do
	[ -x "$f" ] || fail "$f not built"
	cp "$f" "$R/bin/"
	# shared libraries (and the loader) at their own paths
	for l in $(ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'); do
		[ -f "$R$l" ] || { mkdir -p "$R$(dirname "$l")"; cp -L "$l" "$R$l"; }
	done
done
cp "$B/kmod/gpuext.ko" "$R/gpuext.ko"
[ -f "$B/tests/kmod/ko/gx_consumer.ko" ] || fail "$B/tests/kmod/ko/gx_consumer.ko not built"
cp "$B/tests/kmod/ko/gx_consumer.ko" "$R/gx_consumer.ko"
# the tenant scheduling policies (task_launch: the shim's; attached here
# with gx_tenant so the kernel's verifier checks the same objects)
mkdir -p "$R/policies"
for p in lcfirst tbucket lcslo; do
	cp "$B/hostbpf/gx_$p.bpf.o" "$R/policies/" || fail "$B/hostbpf/gx_$p.bpf.o not built"
done
cp "$ROOT/tests/kmod/vm-init.sh" "$R/init" && chmod +x "$R/init"
echo "root:x:0:0::/:/bin/sh" >"$R/etc/passwd"
echo "nobody:x:65534:65534::/:/bin/false" >>"$R/etc/passwd"
(cd "$R" && find . | cpio -o -H newc --quiet) >"$W/initrd.cpio" || fail "cpio failed"
# KVM when /dev/kvm is usable, else TCG. Under nested virtualisation KVM can
# abort QEMU before the guest runs (seen: "failed to set MSR 0x10a",
# rc 134): a VM whose guest printed nothing is started again under TCG. A
# broken accelerator is not a test failure; the log says which one ran.
boot() { # boot ACCEL CPU
	local t0
	t0=$(date +%s)
	timeout -k 5 "$TIMEOUT" qemu-system-x86_64 -machine accel="$1" -cpu "$2" -m 512M -smp 1 \
		-kernel "$KIMG" -initrd "$W/initrd.cpio" -nographic -no-reboot \
		-append "console=ttyS0 quiet loglevel=4 panic=-1 oops=panic gx.fuzz=${GX_KMOD_FUZZ:-100000}" \
		</dev/null >"$W/console.log" 2>&1
	rc=$?
	secs=$(($(date +%s) - t0))
}
guest_ran() { grep -Eq '^(ok|not ok) - |GX-VM-DONE' "$W/console.log"; }
accel=tcg
if [ -w /dev/kvm ] && [ "${GX_KMOD_VM_ACCEL:-}" != tcg ]; then
	accel=kvm
	boot kvm max
	if ! guest_ran; then
		echo "# vm: KVM failed before the guest ran (qemu rc $rc: $(grep -m1 -iE 'error|assert|failed' "$W/console.log" | cut -c1-120)); retrying with TCG"
		cp "$W/console.log" "$W/console-kvm.log"
		accel=tcg
	fi
fi
[ "$accel" = tcg ] && boot tcg max
echo "# vm: accelerator $accel"
tr -d '\r' <"$W/console.log" >"$W/console.txt"
grep -E '^(ok|not ok) - |^# ' "$W/console.txt"
if ! grep -q '^GX-VM-DONE' "$W/console.txt"; then
	echo "not ok - vm: did not finish under $accel (qemu rc $rc after $secs s; log $W/console.txt)"
	tail -n 40 "$W/console.txt"
	exit 0
fi
echo "ok - vm: booted ($accel), ran and powered off in $secs s"
