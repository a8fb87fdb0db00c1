#!/bin/busybox sh
# /init of the gpuext test VM: load gpuext.ko (sim=1), run the end-to-end
# policy tests, the client test and the ioctl fuzzer, check the kernel log
# and leaks, unload; then load/unload gpuext.ko and a user of its hook table
# (gx_consumer.ko) in both orders; power off. Output: ok/not ok lines on the serial console,
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
# Fuzz with policies attached, so random faults, evictions and queue
# creations also run through BPF handlers.
/bin/gx_lfu >/tmp/lfu.log 2>&1 &
lfu=$!
/bin/gx_prio -m 3 >/tmp/prio.log 2>&1 &
prio=$!
for i in $(seq 1 300); do
	grep -q attached /tmp/lfu.log && grep -q attached /tmp/prio.log && break
	sleep 0.1
done
grep -q attached /tmp/lfu.log && grep -q attached /tmp/prio.log && ok "policies attached for the fuzzer" ||
	nok "policies for the fuzzer did not attach: $(cat /tmp/lfu.log /tmp/prio.log | tr '\n' ' ')"
t1=$(date +%s)
/bin/gx_kmod_fuzz "$fuzz" || nok "gx_kmod_fuzz exited $?"
t2=$(date +%s)
kill -INT $lfu $prio
wait $lfu && wait $prio && grep -q detached /tmp/lfu.log && ok "fuzzer's policies detached cleanly" ||
	nok "fuzzer's policies did not detach: $(tail -2 /tmp/lfu.log /tmp/prio.log | tr '\n' ' ')"
echo "# policy tests $((t1 - t0)) s, fuzzer $((t2 - t1)) s"
# The tenant policies (task_launch, which only the shim calls) load into
# gpuext.ko as they are: the kernel's verifier accepts them, they attach
# and detach; the same object's task_launch stays unused here. SIGTERM, not
# SIGINT: a background job of this shell starts with SIGINT ignored, so an
# INT sent before a slow load (TCG on a busy host) installs the loader's
# handler would be lost and `wait` would never return.
for p in lcfirst tbucket lcslo; do
	/bin/gx_tenant -o /policies/gx_$p.bpf.o >/tmp/t.log 2>&1 &
	tp=$!
	for i in $(seq 1 600); do grep -q attached /tmp/t.log && break; sleep 0.1; done
	kill -TERM $tp
	wait $tp
	rc=$?
	grep -q attached /tmp/t.log && grep -q detached /tmp/t.log && [ $rc = 0 ] &&
		ok "tenant policy gx_$p (task_launch) attaches to gpuext.ko and detaches" ||
		nok "tenant policy gx_$p: $(tr '\n' ' ' </tmp/t.log | cut -c1-300)"
done
if [ -e /sys/kernel/debug/kmemleak ]; then
	echo scan >/sys/kernel/debug/kmemleak; sleep 1; echo scan >/sys/kernel/debug/kmemleak
	if grep -q gpuext /sys/kernel/debug/kmemleak; then nok "kmemleak reports gpuext objects"; else ok "kmemleak: no leaks"; fi
else
	echo "# kmemleak is not built into this kernel: leaks are checked with gpuext's live-object count (fuzzer) and rmmod"
fi
# struct_ops maps drop their module reference from a work item after detach
for i in $(seq 1 50); do rmmod gpuext 2>/dev/null && break; sleep 0.2; done
if [ -e /sys/module/gpuext ]; then nok "rmmod gpuext failed: $(rmmod gpuext 2>&1)"; else ok "rmmod gpuext (no references left)"; fi
# Load/unload order with a user of gx_hooks: gx_consumer.ko stands in for
# nvidia-uvm (takes the table with symbol_get at load, puts it at unload)
# and nvidia.ko (tsg: takes and puts it per call). Both orders, no reference
# left behind: gpuext's refcnt back to 0 and rmmod gpuext succeeds.
refcnt() { cat /sys/module/gpuext/refcnt 2>/dev/null || echo gone; }
hooked() { cat /sys/module/gx_consumer/parameters/hooked 2>/dev/null || echo gone; }
tsg() { echo 1 >/sys/module/gx_consumer/parameters/tsg && cat /sys/module/gx_consumer/parameters/tsg; }
check() { # check MSG CMD...: ok/not ok with gpuext's refcnt and the consumer's state
	local m=$1; shift
	if "$@"; then ok "order $sc: $m"; else nok "order $sc: $m (gpuext refcnt $(refcnt), consumer hooked $(hooked))"; fi
}
unload_order() { # unload_order FIRST SECOND: both modules loaded
	check "rmmod $1 first" rmmod "$1"
	[ "$1" = gx_consumer ] && check "gpuext refcnt 0 once the consumer is gone" [ "$(refcnt)" = 0 ]
	check "rmmod $2 after $1" rmmod "$2"
	check "both modules gone" eval '[ ! -e /sys/module/gpuext ] && [ ! -e /sys/module/gx_consumer ]'
}
sc=1 # gpuext, then the consumer: registered, gpuext pinned until it goes
check "insmod gpuext then gx_consumer" eval 'insmod /gpuext.ko && insmod /gx_consumer.ko'
check "consumer registered with gpuext, gpuext refcnt 1" eval '[ "$(hooked)" = Y ] && [ "$(refcnt)" = 1 ]'
check "rmmod gpuext refused while the consumer holds gx_hooks" eval '! rmmod gpuext 2>/dev/null && [ "$(refcnt)" = 1 ]'
check "per-call use (nvidia.ko's TSG hooks) reaches gpuext and puts it back" eval '[ "$(tsg)" = 1 ] && [ "$(refcnt)" = 1 ]'
# gpuext without sim=1: the consumer is the only backend, and /dev/gpuext's
# queue attributes reach it through its ops (GX_IOC_QUEUE_ATTR, VERSION, TEST).
/bin/gx_vmtest --consumer || nok "gx_vmtest --consumer exited $?"
check "queue attribute change applied by the consumer's queue_attr op" \
	[ "$(cat /sys/module/gx_consumer/parameters/qapplied)" = 1 ]
unload_order gx_consumer gpuext
sc=2 # the consumer alone: the lookup fails and it runs without hooks
check "insmod gx_consumer without gpuext: loads, not hooked" eval 'insmod /gx_consumer.ko && [ "$(hooked)" = N ]'
check "per-call use without gpuext is a no-op" [ "$(tsg)" = 0 ]
check "insmod gpuext after the consumer: refcnt 0" eval 'insmod /gpuext.ko && [ "$(refcnt)" = 0 ]'
check "per-call use after gpuext arrived reaches it, refcnt stays 0" eval '[ "$(tsg)" = 1 ] && [ "$(refcnt)" = 0 ]'
unload_order gpuext gx_consumer
sc=3 # the consumer first again, unloaded first
check "insmod gx_consumer then gpuext" eval 'insmod /gx_consumer.ko && insmod /gpuext.ko && [ "$(refcnt)" = 0 ]'
unload_order gx_consumer gpuext
if dmesg | grep -E 'BUG:|Oops|WARNING:|general protection|Call Trace|refcount_t' >/tmp/bad; then
	nok "kernel log has errors: $(head -3 /tmp/bad | tr '\n' ' ')"
else
	ok "kernel log clean (no oops, BUG or WARNING)"
fi
dmesg | grep gpuext | tail -5 | sed 's/^/# /'
echo GX-VM-DONE
poweroff -f
