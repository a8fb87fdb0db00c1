#!/bin/sh
# install.sh TARBALL [HOST_ROOT] — what the gpuext DaemonSet runs on each
# node (daemonset.yaml), and what an operator runs by hand on a host:
#   1. unpack gpuext-VERSION-linux-x86_64.tar.gz into
#      HOST_ROOT/opt/gpuext/VERSION (beside, then renamed: a node never sees
#      a half-unpacked install) and point HOST_ROOT/opt/gpuext/current at it;
#   2. write the CDI spec HOST_ROOT/etc/cdi/gpuext.json (gpuext cdi) that
#      mounts /opt/gpuext/current into containers that ask for
#      gpuext.dev/shim=default and puts its lib/ first in LD_LIBRARY_PATH.
# HOST_ROOT is where the node's root is mounted (/host in the DaemonSet, /
# on a host). Idempotent; a version already installed is kept. POSIX sh:
# the installer image needs only busybox or a minimal Debian.
# GPUEXT_ENV="K=V ..." adds GPUEXT_* settings to every injected container.
set -eu
tgz=${1:?usage: install.sh TARBALL [HOST_ROOT]}
root=${2:-/}
root=${root%/}
base=$root/opt/gpuext
name=$(basename "$tgz" -linux-x86_64.tar.gz)   # gpuext-VERSION
ver=${name#gpuext-}
[ "$ver" != "$name" ] || { echo "install.sh: $tgz is not a gpuext-VERSION-linux-x86_64.tar.gz" >&2; exit 2; }
mkdir -p "$base" "$root/etc/cdi"
if [ ! -x "$base/$ver/bin/gpuext" ]; then
	tmp=$(mktemp -d "$base/.unpack.XXXXXX")
	tar -xzf "$tgz" -C "$tmp" --no-same-owner
	chmod -R go-w "$tmp/$name" && chmod 755 "$tmp"
	rm -rf "$base/$ver"
	mv "$tmp/$name" "$base/$ver"
	rmdir "$tmp"
	echo "install.sh: unpacked gpuext $ver into $base/$ver"
fi
ln -sfn "$ver" "$base/current.new" && mv -T "$base/current.new" "$base/current"
# The spec names host paths: the prefix as the node sees it.
set --
for kv in ${GPUEXT_ENV:-}; do set -- "$@" --env "$kv"; done
"$base/$ver/bin/gpuext" cdi --root "${root:-/}" --prefix /opt/gpuext/current "$@" --output "$root/etc/cdi/gpuext.json"
echo "install.sh: CDI spec $root/etc/cdi/gpuext.json (gpuext.dev/shim=default -> /opt/gpuext/current)"
