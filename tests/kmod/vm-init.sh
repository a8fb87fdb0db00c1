#!/bin/busybox sh
# /init of the gpuext test VM: load gpuext.ko (sim=1), run the end-to-end
# policy tests, the client test and the ioctl fuzzer, check the kernel log
# and leaks, unload, power off. Output: ok/not ok lines on the serial console,
# then GX-VM-DONE.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t tmpfs tmp /tmp
ok() { echo "ok - vm: $*"; }
nok() { echo "not ok - vm: $*"; }
fuzz=100000
for a in $(cat /proc/cmdline); do case $a in gx.fuzz=*) fuzz=${a#gx.fuzz=};; esac; done
echo "# kernel $(uname -r), fuzz $fuzz calls"
if insmod /gpuext.ko sim=1; then ok "insmod gpuext.ko sim=1"; else nok "insmod gpuext.ko sim=1"; fi
[ -e /sys/kernel/btf/gpuext ] && ok "module BTF registered" || nok "no /sys/kernel/btf/gpuext"
[ -c /dev/gpuext ] && ok "/dev/gpuext present" || nok "/dev/gpuext missing"
t0=$(date +%s)
/bin/gx_vmtest /bin || nok "gx_vmtest exited $?"
/bin/gx_client_test || nok "gx_client_test exited $?"
t1=$(date +%s)
/bin/gx_kmod_fuzz "$fuzz" || nok "gx_kmod_fuzz exited $?"
t2=$(date +%s)
echo "# policy tests $((t1 - t0)) s, fuzzer $((t2 - t1)) s"
if [ -e /sys/kernel/debug/kmemleak ]; then
	echo scan >/sys/kernel/debug/kmemleak; sleep 1; echo scan >/sys/kernel/debug/kmemleak
	if grep -q gpuext /sys/kernel/debug/kmemleak; then nok "kmemleak reports gpuext objects"; else ok "kmemleak: no leaks"; fi
else
	echo "# kmemleak is not built into this kernel: leaks are checked with gpuext's live-object count (fuzzer) and rmmod"
fi
if rmmod gpuext; then ok "rmmod gpuext (no references left)"; else nok "rmmod gpuext failed"; fi
if dmesg | grep -E 'BUG:|Oops|WARNING:|general protection|Call Trace|refcount_t' >/tmp/bad; then
	nok "kernel log has errors: $(head -3 /tmp/bad | tr '\n' ' ')"
else
	ok "kernel log clean (no oops, BUG or WARNING)"
fi
dmesg | grep gpuext | tail -5 | sed 's/^/# /'
echo GX-VM-DONE
poweroff -f
