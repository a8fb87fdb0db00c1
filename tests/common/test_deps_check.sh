#!/usr/bin/env bash
# test_deps_check.sh — `scripts/deps.sh --check` (run by make before a build)
# names exactly the missing packages in one line, and stays silent when all
# are there. dpkg-query is replaced by a fake that reports every package
# installed except those in FAKE_MISSING, with libbpf-dev at FAKE_LIBBPF.
set -u
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/dpkg-query" <<'FAKE'
#!/usr/bin/env bash
for p in "$@"; do
	case "$p" in -*) continue ;; esac
	case " $FAKE_MISSING " in *" $p "*) continue ;; esac
	v=1.0; [ "$p" = libbpf-dev ] && v=$FAKE_LIBBPF
	echo "$p install ok installed $v"
done
FAKE
chmod +x "$tmp/dpkg-query"
check() { PATH="$tmp:$PATH" FAKE_MISSING="$1" FAKE_LIBBPF="$2" scripts/deps.sh --check; }
out=$(check "" "1:1.4.6-1~bpo12+1"); rc=$?
[ $rc = 0 ] && [ -z "$out" ] && echo "ok - deps check: silent when everything is installed" ||
	echo "not ok - deps check: rc $rc, output '$out' with everything installed"
out=$(check "libelf-dev clang-19" "1:1.4.6-1~bpo12+1"); rc=$?
[ $rc = 1 ] && [ "$out" = "gpuext: missing packages: libelf-dev clang-19 (run: make deps)" ] &&
	echo "ok - deps check: one line names the missing packages" ||
	echo "not ok - deps check: rc $rc, output '$out'"
out=$(check "" "1:1.1.0-1"); rc=$?
[ $rc = 1 ] && [[ "$out" == *"libbpf-dev(>=1.4)"* ]] && echo "ok - deps check: bookworm's libbpf 1.1 named as too old" ||
	echo "not ok - deps check: rc $rc, output '$out' for libbpf 1.1"
