#!/usr/bin/env bash
# gpuext cdi: a CDI spec (JSON) that mounts the install PREFIX read-only and
# sets LD_LIBRARY_PATH/TRITON_LIBCUDA_PATH; field names as CDI 0.3.0 has them
# (a runtime refuses unknown fields and a device without edits); absolute
# paths, escaping, --env, --output written atomically with mode 0644.
set -u
B=${BUILD:-build}
B=$(cd "$B" && pwd)
G=$B/bin/gpuext
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
check() { if eval "$2" >/dev/null 2>&1; then echo "ok - cdi: $1"; else echo "not ok - cdi: $1"; sed 's/^/#  /' "$T/err" 2>/dev/null | tail -20; fi; }
# spec FILE PREFIX [ENV...]: the spec's shape, its mount of PREFIX, its env.
cat >"$T/check.py" <<'EOF'
import json, os, sys
path, prefix, want_env = sys.argv[1], sys.argv[2], sys.argv[3:]
d = json.load(open(path))
assert set(d) == {"cdiVersion", "kind", "devices"}, d.keys()
assert d["cdiVersion"] == "0.3.0" and d["kind"] == "gpuext.dev/shim", d
assert len(d["devices"]) == 1 and set(d["devices"][0]) == {"name", "containerEdits"}
dev = d["devices"][0]
assert dev["name"] == "default"
ed = dev["containerEdits"]
assert set(ed) == {"env", "mounts"}, ed.keys()
assert len(ed["mounts"]) == 1
m = ed["mounts"][0]
assert set(m) == {"hostPath", "containerPath", "options"}, m
assert m["hostPath"] == prefix and m["containerPath"] == prefix, (m, prefix)
assert os.path.isabs(m["hostPath"]) and os.path.isabs(m["containerPath"])
assert m["options"] == ["ro", "nosuid", "nodev", "bind"], m["options"]
env = dict(e.split("=", 1) for e in ed["env"])
assert len(env) == len(ed["env"]), "a name twice"
exp = {"LD_LIBRARY_PATH": prefix + "/lib", "TRITON_LIBCUDA_PATH": prefix + "/lib"}
exp.update(e.split("=", 1) for e in want_env)
assert env == exp, (env, exp)
assert all(os.path.isabs(env[k]) for k in ("LD_LIBRARY_PATH", "TRITON_LIBCUDA_PATH"))
EOF
"$G" cdi >"$T/a.json" 2>"$T/err"; rc=$?
check "default: exit 0, JSON" "[ $rc -eq 0 ] && python3 -m json.tool $T/a.json"
check "default: kind, device, mount of this PREFIX, env" "python3 $T/check.py $T/a.json $B 2>$T/err"
check "--json changes nothing" "$G --json cdi | cmp - $T/a.json"

"$G" cdi --env GPUEXT_TOOL=threadhist --env 'GPUEXT_POLICY=/p/x.bpf.o,a=1' >"$T/e.json" 2>"$T/err"
check "--env adds variables" "python3 $T/check.py $T/e.json $B GPUEXT_TOOL=threadhist 'GPUEXT_POLICY=/p/x.bpf.o,a=1' 2>$T/err"
"$G" cdi --env LD_LIBRARY_PATH=/opt/x/lib >"$T/r.json" 2>"$T/err"
check "--env of a name already set replaces it" "python3 $T/check.py $T/r.json $B LD_LIBRARY_PATH=/opt/x/lib 2>$T/err"
check "--env without '=': exit 2" "! $G cdi --env GPUEXT_TOOL 2>$T/err; [ \$? -eq 0 ] && grep -q 'expected NAME=VALUE' $T/err"
check "--env with a bad name: exit 2" "! $G cdi --env 'A B=1' 2>$T/err"

# A relative --prefix is made absolute; a prefix with quotes and a backslash is escaped.
mkdir -p "$T/inst/rel/lib" && touch "$T/inst/rel/lib/libcuda.so.1"
(cd "$T/inst" && "$G" cdi --prefix rel) >"$T/rel.json" 2>"$T/err"
check "a relative --prefix becomes absolute" "python3 $T/check.py $T/rel.json \"\$(realpath $T/inst/rel)\" 2>$T/err"
q="$T/in \"quoted\" \\ dir"
mkdir -p "$q/lib" && touch "$q/lib/libcuda.so.1"
"$G" cdi --prefix "$q" >"$T/q.json" 2>"$T/err"
check "a prefix with quotes and a backslash: escaped, read back exactly" "python3 $T/check.py $T/q.json \"\$(realpath \"\$q\")\" 2>$T/err"
check "a prefix that is not an install: exit 2" "! $G cdi --prefix $T 2>$T/err; [ \$? -eq 0 ] && grep -q 'not a gpuext install' $T/err"
mkdir -p "$T/a:b/lib" && touch "$T/a:b/lib/libcuda.so.1"
check "a prefix with ':': exit 2" "! $G cdi --prefix '$T/a:b' 2>$T/err"
check "a missing --prefix: exit 2" "! $G cdi --prefix $T/nowhere 2>$T/err"

# --output: written atomically (tmp + rename), mode 0644 whatever the umask, replaced in place.
mkdir "$T/etc"
(umask 077 && "$G" cdi --output "$T/etc/gpuext.json") 2>"$T/err"; rc=$?
check "--output: exit 0, mode 0644" "[ $rc -eq 0 ] && [ \"\$(stat -c %a $T/etc/gpuext.json)\" = 644 ]"
check "--output: the same spec as stdout" "cmp $T/etc/gpuext.json $T/a.json"
echo old >"$T/etc/gpuext.json"
"$G" cdi --env GPUEXT_LOG=info --output "$T/etc/gpuext.json" 2>"$T/err"
check "--output replaces a file, no temporary left" "python3 $T/check.py $T/etc/gpuext.json $B GPUEXT_LOG=info 2>$T/err && [ \"\$(ls $T/etc)\" = gpuext.json ]"
check "--output into a missing folder: exit 1, an error" "! $G cdi --output $T/none/x.json 2>$T/err; [ \$? -eq 0 ] && grep -q 'cannot write' $T/err"
check "an unknown argument: exit 2" "! $G cdi --frob 2>$T/err; [ \$? -eq 0 ] && grep -q 'usage: gpuext cdi' $T/err"
# --root: an installer container sees the node's root at a mount point;
# PREFIX is checked under it and written as the node's path.
mkdir -p "$T/node/opt/gx/lib" && touch "$T/node/opt/gx/lib/libcuda.so.1"
"$G" cdi --root "$T/node" --prefix /opt/gx/ >"$T/root.json" 2>"$T/err"
check "--root: PREFIX checked under the root, written as the node's path" \
	"python3 $T/check.py $T/root.json /opt/gx 2>$T/err && ! grep -q '$T/node' $T/root.json"
check "--root: a PREFIX missing under the root: exit 2" "! $G cdi --root $T/node --prefix /opt/nowhere 2>$T/err"
check "--root with a relative --prefix: exit 2" "! $G cdi --root $T/node --prefix opt/gx 2>$T/err"
