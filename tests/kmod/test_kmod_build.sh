#!/usr/bin/env bash
# test_kmod_build.sh — gpuext.ko was built against the kernel headers, carries
# BTF with both struct_ops types and the kfuncs (what libbpf needs to attach),
# every policy object has its struct_ops map, and the loaders handle flags.
set -u
B=${BUILD:-build}
KVER=${KVER:-6.12.95+deb12-amd64}
KDIR=${KDIR:-${GX_KERNEL_CACHE:-$HOME/.cache/gpuext/kernel}/usr/src/linux-headers-$KVER}
BPFTOOL=${BPFTOOL:-bpftool}
ko=$B/kmod/gpuext.ko
if [ ! -f "$KDIR/Makefile" ]; then
	echo "not ok - kmod: kernel headers missing in $KDIR (run make deps)"
	exit 0
fi
if [ -f "$ko" ]; then echo "ok - kmod: gpuext.ko built"; else echo "not ok - kmod: $ko missing"; exit 0; fi
if readelf -S "$ko" | grep -q '\.BTF '; then echo "ok - kmod: module has .BTF"; else echo "not ok - kmod: no .BTF section"; fi
btf=$("$BPFTOOL" -B "$KDIR/vmlinux" btf dump file "$ko" 2>&1)
for t in "STRUCT 'gpu_mem_ops'" "STRUCT 'gpu_sched_ops'" "FUNC 'bpf_gpu_move_head'" "FUNC 'bpf_gpu_move_tail'" \
	"FUNC 'bpf_gpu_set_prefetch_region'" "FUNC 'bpf_gpu_migrate_range'" "FUNC 'bpf_gpu_set_attr'" \
	"FUNC 'bpf_gpu_reject_bind'" "FUNC 'bpf_gpu_hold_launch'" "FUNC 'bpf_gpu_set_window'"; do
	if grep -q "$t" <<<"$btf"; then echo "ok - kmod: BTF has $t"; else echo "not ok - kmod: BTF lacks $t"; fi
done
if modinfo -F vermagic "$ko" | grep -q "^$KVER "; then echo "ok - kmod: vermagic $KVER"; else echo "not ok - kmod: vermagic $(modinfo -F vermagic "$ko")"; fi
for p in fifo lfu mru quota seq stride tree prio; do
	o=$B/hostbpf/gx_$p.bpf.o
	if "$BPFTOOL" btf dump file "$o" 2>/dev/null | grep -q "DATASEC '.struct_ops.link'"; then
		echo "ok - hostbpf: $p has a struct_ops map"
	else
		echo "not ok - hostbpf: $o has no .struct_ops.link map"
	fi
	"$B/bin/gx_$p" -h >/dev/null 2>&1; rc=$?
	"$B/bin/gx_$p" -p notanumber >/dev/null 2>&1; rc2=$?
	if [ $rc = 0 ] && [ $rc2 = 2 ]; then echo "ok - hostbpf: gx_$p -h / bad flag"; else echo "not ok - hostbpf: gx_$p -h=$rc badflag=$rc2"; fi
done
"$B/bin/gx_tenant" -h >/dev/null 2>&1; rc=$?
"$B/bin/gx_tenant" >/dev/null 2>&1; rc2=$?
if [ $rc = 0 ] && [ $rc2 = 2 ]; then echo "ok - hostbpf: gx_tenant -h / no -o"; else echo "not ok - hostbpf: gx_tenant -h=$rc no-o=$rc2"; fi
# Policies must not reach into kernel-only types: only gpu_ext.h types and
# kfuncs (the shim runs the same objects in user space).
bad=0
for p in fifo lfu mru quota seq stride tree prio lcfirst tbucket lcslo; do
	if "$BPFTOOL" btf dump file "$B/hostbpf/gx_$p.bpf.o" | grep -E "STRUCT '(task_struct|mm_struct|cgroup|file)'" >/dev/null; then
		echo "not ok - hostbpf: $p uses kernel-only types"; bad=1
	fi
done
[ $bad = 0 ] && echo "ok - hostbpf: policies use only gpu_ext.h types"
exit 0
