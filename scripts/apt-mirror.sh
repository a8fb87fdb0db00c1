#!/usr/bin/env bash
# apt-mirror.sh — print the Debian mirror this machine's apt sources use for
# bookworm (deb822 .sources files first, then sources.list), so no registry
# host name is ever written into the repository. Exits 1 if none is found.
set -euo pipefail
uri=""
for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    uri=$(awk '/^URIs:/{u=$2} /^Suites:.*bookworm( |$)/{if(u){print u; exit}}' "$f")
    [ -n "$uri" ] && break
done
if [ -z "$uri" ] && [ -f /etc/apt/sources.list ]; then
    uri=$(awk '$1=="deb" && $3=="bookworm" {print $2; exit}' /etc/apt/sources.list)
fi
[ -n "$uri" ] || { echo "deps: cannot find the Debian mirror in apt sources" >&2; exit 1; }
echo "$uri"
