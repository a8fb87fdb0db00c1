#!/usr/bin/env bash
# The cluster path in a debootstrapped Debian root (make deps makes it; the
# stand-in for a node and for a container, since container runtimes cannot
# run on these machines): deploy/kubernetes/install.sh, run as the
# DaemonSet runs it (node root at /host), unpacks make dist's tarball and
# writes the CDI spec; the spec's edits, applied as a CDI runtime applies
# them (its mounts bound at their container paths, read-only, its env set),
# put the shim in front of the driver of a program in that root (the fake
# driver), and gpuext-run from the mount attaches a tool from the shipped JIT
# cache. The manifests name the folders install.sh writes.
# Needs root (chroot, mounts, in a private mount namespace where one can be
# made); run after
# tests/dist/test_dist.sh, which builds the tarball.
set -u
B=${BUILD:-build}
B=$(cd "$B" && pwd)
ROOT=$(pwd)
V=$(sed -n 's/^#define GX_VERSION "\([^"]*\)".*/\1/p' common/gx_util.h)
R=${GX_ROOTFS:-$HOME/.cache/gpuext/rootfs-bookworm}
TGZ=$B/dist/gpuext-$V-linux-x86_64.tar.gz
check() {
	if eval "$2"; then echo "ok - deploy: $1"; else
		echo "not ok - deploy: $1"
		[ -n "${3:-}" ] && [ -f "$3" ] && tail -n 8 "$3" | sed 's/^/#  /'
	fi
}
[ "$(id -u)" = 0 ] || { echo "not ok - deploy: needs root (chroot and mounts)"; exit 0; }
[ -x "$R/bin/sh" ] || { echo "not ok - deploy: no Debian root in $R (run make deps)"; exit 0; }
[ -f "$TGZ" ] || { echo "not ok - deploy: $TGZ missing (make dist, or tests/dist/test_dist.sh first)"; exit 0; }

# The manifests: the DaemonSet mounts exactly the folders install.sh writes.
python3 - deploy/kubernetes/daemonset.yaml deploy/kubernetes/Containerfile >"$B/tests/deploy-manifest.log" 2>&1 <<'P'
import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
spec = d["spec"]["template"]["spec"]
c = spec["containers"][0]
mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
vols = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"]}
assert d["kind"] == "DaemonSet"
for name, host in vols.items():
    assert mounts[name] == "/host" + host, (name, mounts[name], host)
assert sorted(vols.values()) == ["/etc/cdi", "/opt/gpuext"], vols
assert "/gpuext/install.sh /gpuext/gpuext-*-linux-x86_64.tar.gz /host" in open(sys.argv[2]).read()
P
check "daemonset.yaml mounts /opt/gpuext and /etc/cdi at /host, as Containerfile's install.sh expects" "[ \$? = 0 ]" \
	"$B/tests/deploy-manifest.log"

T=$(mktemp -d /tmp/gx-deploy.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
mkdir -p "$T/host" "$T/gx/fake" "$T/gx/shm"
cp "$TGZ" deploy/kubernetes/install.sh "$B/tests/attach/attach_app" tests/ptx-rewrite/golden-passes/vadd.ptx "$T/gx/"
cp "$B/tests/attach/fakecuda/libcuda.so.1" "$T/gx/fake/"
K=$(sed -n 's/.*\.entry \([A-Za-z0-9_]*\).*/\1/p' tests/ptx-rewrite/golden-passes/vadd.ptx | head -1)
# Mount points the test binds over (empty folders, left in the cached root).
mkdir -p "$R/host" "$R/gx" "$R/opt/gpuext/current"

# Everything below in a private mount namespace, where one can be made (in a
# chroot whose / is no mount point it cannot: then in this one); either way
# every mount is undone at the end.
ns=(unshare -m --propagation private)
"${ns[@]}" true 2>/dev/null || ns=()
"${ns[@]}" bash -s "$R" "$T" "$V" "$K" >"$T/run.log" 2>&1 <<'IN'
set -u
R=$1 T=$2 V=$3 K=$4
M=()
bind() { mount "$@" && M+=("${@: -1}"); }
trap 'for ((i = ${#M[@]} - 1; i >= 0; i--)); do umount -l "${M[i]}"; done' EXIT
bind --bind "$T/host" "$R/host" && bind --bind "$T/gx" "$R/gx" && bind -t proc proc "$R/proc" || exit 9
# 1. the node installer, twice (idempotent)
chroot "$R" /bin/sh /gx/install.sh "/gx/gpuext-$V-linux-x86_64.tar.gz" /host >"$T/install1.log" 2>&1; echo $? >"$T/install1.rc"
chroot "$R" /bin/sh /gx/install.sh "/gx/gpuext-$V-linux-x86_64.tar.gz" /host >"$T/install2.log" 2>&1; echo $? >"$T/install2.rc"
# 2. a container as a CDI runtime makes it: the spec's mounts and env
python3 - "$T/host/etc/cdi/gpuext.json" >"$T/edits" <<'P' || exit 8
import json, sys
s = json.load(open(sys.argv[1]))
edits = [s.get("containerEdits", {})] + [d.get("containerEdits", {}) for d in s["devices"]]
for e in edits:
    for m in e.get("mounts", []):
        print("mount", m["hostPath"], m["containerPath"], ",".join(m.get("options", [])))
    for kv in e.get("env", []):
        print("env", kv)
P
envs=()
while read -r kind a b opts; do
	case $kind in
	mount) # hostPath names the node's folder: under /host here
		mkdir -p "$R$b" && bind --bind "$T/host$a" "$R$b" || exit 7
		case ",$opts," in *,ro,*) mount -o remount,bind,ro "$R$b" || exit 7 ;; esac ;;
	env) envs+=("$a") ;;
	esac
done <"$T/edits"
printf '%s\n' "${envs[@]}" >"$T/env.list"
run() { chroot "$R" env -i PATH=/usr/bin:/bin HOME=/root "${envs[@]}" GPUEXT_REAL_LIBCUDA=/gx/fake/libcuda.so.1 \
	FAKECUDA_DEVICES=1 GPUEXT_SHM_DIR=/gx/shm GPUEXT_FLUSH_MS=10 "$@"; }
run GPUEXT_LOG=info timeout 60 /gx/attach_app /gx/vadd.ptx "$K" none >"$T/app.out" 2>"$T/app.err"; echo $? >"$T/app.rc"
run timeout 60 /opt/gpuext/current/bin/gpuext-run -v --every-launch --tool threadhist -- /gx/attach_app /gx/vadd.ptx "$K" policy \
	>"$T/tool.out" 2>"$T/tool.err"; echo $? >"$T/tool.rc"
touch "$R/opt/gpuext/current/x" 2>/dev/null && echo writable >"$T/ro" || echo read-only >"$T/ro"
IN
rc=$?
check "the Debian root runs (private mounts, chroot)" "[ $rc = 0 ]" "$T/run.log"
check "install.sh unpacks into /opt/gpuext/$V and points current at it" \
	"[ \$(cat $T/install1.rc) = 0 ] && [ -x $T/host/opt/gpuext/$V/bin/gpuext ] && [ \$(readlink $T/host/opt/gpuext/current) = $V ]" \
	"$T/install1.log"
check "install.sh again: nothing unpacked twice, exit 0" \
	"[ \$(cat $T/install2.rc) = 0 ] && ! grep -q unpacked $T/install2.log && [ \$(ls $T/host/opt/gpuext | wc -l) = 2 ]" \
	"$T/install2.log"
python3 - "$T/host/etc/cdi/gpuext.json" >"$T/spec.log" 2>&1 <<'P'
import json, sys
s = json.load(open(sys.argv[1]))
assert s["kind"] == "gpuext.dev/shim", s["kind"]
assert [d["name"] for d in s["devices"]] == ["default"]
text = json.dumps(s)
assert "/opt/gpuext/current" in text and "/host" not in text, "the spec must name the node's paths"
P
check "the CDI spec: kind gpuext.dev/shim, device default, the node's paths (not /host)" "[ \$? = 0 ]" "$T/spec.log"
check "the spec's env puts the mounted lib/ first in LD_LIBRARY_PATH" \
	"grep -q '^LD_LIBRARY_PATH=/opt/gpuext/current/lib' $T/env.list 2>/dev/null" "$T/run.log"
check "in the container: the program's CUDA calls go through the shim" \
	"[ \$(cat $T/app.rc 2>/dev/null) = 0 ] && grep -q 'gpuext: shim active' $T/app.err" "$T/app.err"
check "in the container: gpuext-run --tool threadhist from the shipped cache, report printed" \
	"[ \$(cat $T/tool.rc 2>/dev/null) = 0 ] && grep -q 'policy threadhist: from the JIT cache (/opt/gpuext/current/share/gpuext/cache' $T/tool.err && grep -q 'threadhist: .* 2 blocks, 4 warps, 128 threads' $T/tool.out $T/tool.err" \
	"$T/tool.err"
check "in the container: the install is mounted read-only" "[ \"\$(cat $T/ro 2>/dev/null)\" = read-only ]"
