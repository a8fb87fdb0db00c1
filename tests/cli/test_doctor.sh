#!/usr/bin/env bash
# gpuext doctor against the fake driver (tests/shim/fakecuda: 3 GPUs,
# sm_90/sm_80/sm_90, CUDA 13.0): its lines, its JSON, a folder others may
# write (warn), no driver / a driver without GPUs / the shim named as the
# driver (fail, exit 1), the JIT-less cache check, the Python line.
set -u
B=${BUILD:-build}
B=$(cd "$B" && pwd)
G=$B/bin/gpuext
FAKE=$B/tests/shim/fakecuda/libcuda.so.1
T=$(mktemp -d)
trap 'chmod -R u+w "$T" 2>/dev/null; rm -rf "$T"' EXIT
check() { if eval "$2" >/dev/null 2>&1; then echo "ok - doctor: $1"; else echo "not ok - doctor: $1"; sed 's/^/#  /' "$T/out" 2>/dev/null | tail -30; fi; }
mkdir -m 0700 "$T/cache" "$T/shm"
# A clean environment: the fake driver, our shim first, private folders.
run() { env -i PATH="$PATH" HOME="$T" LD_LIBRARY_PATH="$B/lib" GPUEXT_REAL_LIBCUDA="$FAKE" FAKECUDA_DEVICES=3 \
	GPUEXT_CACHE_DIR="$T/cache" GPUEXT_SHM_DIR="$T/shm" "$@"; }

run "$G" doctor >"$T/out" 2>&1; rc=$?
check "with the fake driver: exit 0" "[ $rc -eq 0 ]"
check "the version and PREFIX" "grep -Eq '^ok +gpuext +gpuext [0-9.]+, PREFIX $B\$' $T/out"
check "the shim is found and loads" "grep -Eq '^ok +shim +$B/lib/libcuda.so.1 loads' $T/out"
check "the driver: path and CUDA version" "grep -Eq '^ok +driver +$FAKE, CUDA 13.0 \\(driver API 13000\\)' $T/out"
check "each GPU: name and sm" "grep -Eq '^ok +gpu0 +fakecuda GPU 0, sm_90' $T/out && grep -Eq '^ok +gpu1 +fakecuda GPU 1, sm_80' $T/out && grep -Eq '^ok +gpu2 +fakecuda GPU 2, sm_90' $T/out"
check "LD_LIBRARY_PATH names the shim first: ok" "grep -Eq '^ok +interpose +LD_LIBRARY_PATH finds $B/lib/libcuda.so.1 first' $T/out"
check "the --audit line" "grep -Eq '^info +audit +.*gpuext-run --audit' $T/out"
check "the JIT loads here" "grep -Eq '^ok +jit +$B/lib/libgxjit.so loads' $T/out"
check "a cache line per JIT target of the GPUs (sm_90, sm_80)" "grep -Eq '^info +cache-sm90 +0/[0-9]+ shipped device policies prepared' $T/out && grep -Eq '^info +cache-sm80 ' $T/out && [ \$(grep -c '^[a-z]* *cache-sm' $T/out) -eq 2 ]"
check "the cache folder: owner, mode, free space" "grep -Eq '^ok +cache-dir +cache $T/cache: owner [^,]+, mode 0700, [0-9]+ [MG]iB free' $T/out"
check "the maps folder" "grep -Eq '^ok +shm-dir +maps $T/shm: owner [^,]+, mode 0700' $T/out"
check "the kernel module line" "grep -Eq '^(ok|info) +kmod ' $T/out"
check "the environment, with values" "grep -Eq '^info +env +GPUEXT_REAL_LIBCUDA=$FAKE\$' $T/out && grep -Eq '^info +env +LD_LIBRARY_PATH=$B/lib\$' $T/out"
check "a summary line" "tail -1 $T/out | grep -Eq '^[0-9]+ ok, [0-9]+ info, [0-9]+ warn, 0 fail\$'"

# --json: one object, an array of {name, status, detail, fix}.
run "$G" doctor --json >"$T/j" 2>"$T/out"
check "--json is JSON (python3 -m json.tool)" "python3 -m json.tool $T/j"
check "--json: checks {name,status,detail,fix}, no fail, 3 GPUs" "python3 -c '
import json, re
d = json.load(open(\"$T/j\"))
assert d[\"prefix\"] == \"$B\" and d[\"fail\"] == 0
for c in d[\"checks\"]:
    assert set(c) == {\"name\", \"status\", \"detail\", \"fix\"}, c
    assert c[\"status\"] in (\"ok\", \"info\", \"warn\", \"fail\"), c
    assert c[\"status\"] == \"info\" or (c[\"fix\"] is None) == (c[\"status\"] == \"ok\"), c
g = [c for c in d[\"checks\"] if re.fullmatch(\"gpu[0-9]+\", c[\"name\"])]
assert [c[\"detail\"].split(\",\")[1].split()[0] for c in g] == [\"sm_90\", \"sm_80\", \"sm_90\"], g
'"
run "$G" --json doctor >"$T/j2" 2>/dev/null
check "gpuext --json doctor is the same" "cmp $T/j $T/j2"

# Folders others could write, or not ours, or a symlink where the shim refuses one.
mkdir -m 0777 "$T/gw"
run env GPUEXT_CACHE_DIR="$T/gw" "$G" doctor >"$T/out" 2>&1; rc=$?
check "a group-writable cache folder: warn with chmod, exit 0" "[ $rc -eq 0 ] && grep -Eq '^warn +cache-dir +cache $T/gw: mode 0777 is group- and other-writable' $T/out && grep -q 'fix: chmod go-w $T/gw' $T/out"
chmod 0770 "$T/gw"
run env GPUEXT_CACHE_DIR="$T/gw" "$G" doctor >"$T/out" 2>&1
check "group-writable only: warn" "grep -Eq '^warn +cache-dir +.*mode 0770 is group-writable' $T/out"
if [ "$(id -u)" = 0 ]; then
	mkdir -m 0700 "$T/other" && chown 65534 "$T/other"
	run env GPUEXT_CACHE_DIR="$T/other" "$G" doctor >"$T/out" 2>&1
	check "a cache folder owned by someone else: warn" "grep -Eq '^warn +cache-dir +.*owned by .* \\(uid 65534\\), not by you' $T/out"
fi
ln -s "$T/shm" "$T/shmlink"
run env GPUEXT_SHM_DIR="$T/shmlink" "$G" doctor >"$T/out" 2>&1; rc=$?
check "a symlink as the maps folder: fail, exit 1" "[ $rc -eq 1 ] && grep -Eq '^fail +shm-dir +maps $T/shmlink is not a folder \\(a symlink\\)' $T/out"
run env GPUEXT_CACHE_DIR="$T/new/cache" "$G" doctor >"$T/out" 2>&1
check "a cache folder not made yet: ok" "grep -Eq '^ok +cache-dir +cache $T/new/cache: not created yet' $T/out"

# No driver, a driver that sees no GPU, the shim named as the driver.
run env GPUEXT_REAL_LIBCUDA="$T/none/libcuda.so.1" "$G" doctor >"$T/out" 2>&1; rc=$?
check "no driver: fail with the fix, exit 1" "[ $rc -eq 1 ] && grep -Eq '^fail +driver +GPUEXT_REAL_LIBCUDA=$T/none/libcuda.so.1 cannot be used' $T/out && grep -q \"fix: install NVIDIA's driver or set GPUEXT_REAL_LIBCUDA\" $T/out && grep -Eq '^fail +gpus ' $T/out"
run env GPUEXT_REAL_LIBCUDA="$T/none/libcuda.so.1" "$G" doctor --json >"$T/j" 2>"$T/out"; rc=$?
check "no driver, --json: still JSON, exit 1, fail counted" "[ $rc -eq 1 ] && python3 -c 'import json; d = json.load(open(\"$T/j\")); assert d[\"fail\"] >= 1; assert [c for c in d[\"checks\"] if c[\"name\"] == \"driver\"][0][\"status\"] == \"fail\"'"
run env FAKECUDA_INIT_FAIL=100 "$G" doctor >"$T/out" 2>&1; rc=$?
check "cuInit fails: fail with the CUDA error name, exit 1" "[ $rc -eq 1 ] && grep -Eq '^fail +gpus +cuInit: CUDA_ERROR_NO_DEVICE \\(100\\)' $T/out"
run env GPUEXT_REAL_LIBCUDA="$B/lib/libcuda.so.1" "$G" doctor >"$T/out" 2>&1; rc=$?
check "the shim named as the driver: fail" "[ $rc -eq 1 ] && grep -Eq '^fail +driver +.*cannot be used: it is the shim itself' $T/out"

# Interposition: another libcuda.so.1 first in LD_LIBRARY_PATH, GPUEXT_DISABLE.
run env LD_LIBRARY_PATH="$(dirname "$FAKE"):$B/lib" "$G" doctor >"$T/out" 2>&1
check "another libcuda.so.1 first in LD_LIBRARY_PATH: warn with the fix" "grep -Eq '^warn +interpose +LD_LIBRARY_PATH finds $FAKE before the shim' $T/out && grep -q 'fix: start programs with $B/bin/gpuext-run' $T/out"
run env GPUEXT_DISABLE=1 XLA_FLAGS=--xla_foo "$G" doctor >"$T/out" 2>&1
check "GPUEXT_DISABLE: warn" "grep -Eq '^warn +disable +GPUEXT_DISABLE=1: the shim only forwards' $T/out"
check "XLA_FLAGS listed" "grep -Eq '^info +env +XLA_FLAGS=--xla_foo\$' $T/out"
run env TRITON_LIBCUDA_PATH=/usr/lib "$G" doctor >"$T/out" 2>&1
check "TRITON_LIBCUDA_PATH elsewhere: warn" "grep -Eq '^warn +triton +TRITON_LIBCUDA_PATH=/usr/lib' $T/out"

# Without the JIT: cache only; a prepared entry counts, the rest are named.
"$G" tools prepare --cache-dir "$T/cache" --sm 80 threadhist >"$T/out" 2>&1
run env GPUEXT_JITLIB="$T/none.so" "$G" doctor >"$T/out" 2>&1; rc=$?
check "no JIT: cache only (info), exit 0" "[ $rc -eq 0 ] && grep -Eq '^info +jit +cache only' $T/out"
check "no JIT: the prepared entry counts, the missing ones are named (warn)" "grep -Eq '^warn +cache-sm80 +1/[0-9]+ shipped device policies prepared for sm_80; cannot attach here: .*tools/memtrace' $T/out && ! grep -E '^warn +cache-sm80' $T/out | grep -Eq 'tools/threadhist(,|$)' && grep -q 'fix: gpuext tools prepare --sm 80' $T/out"
check "no JIT: an unprepared target warns" "grep -Eq '^warn +cache-sm90 +0/' $T/out"

# Python: the versions python3 reports; no python3, no line.
mkdir "$T/py"
cat >"$T/py/python3" <<'EOF'
#!/bin/sh
echo python 3.99.1
echo torch 9.1.0
echo triton 9.2.0
EOF
chmod +x "$T/py/python3"
run env PATH="$T/py:$PATH" "$G" doctor >"$T/out" 2>&1
check "the Python stacks line" "grep -Eq '^info +python +python 3.99.1; torch 9.1.0; triton 9.2.0\$' $T/out"
printf '#!/bin/sh\nexit 3\n' >"$T/py/python3"
run env PATH="$T/py:$PATH" "$G" doctor >"$T/out" 2>&1
check "a python3 that fails: no line" "! grep -Eq '^[a-z]+ +python ' $T/out"
run env PATH="$T/nopath" "$B/bin/gpuext" doctor >"$T/out" 2>&1; rc=$?
check "no python3 at all: no line, no crash" "[ $rc -eq 0 ] && ! grep -Eq '^[a-z]+ +python ' $T/out"

check "an unknown argument: exit 2" "! $G doctor --frob 2>$T/out; [ \$? -eq 0 ] && grep -q 'usage: gpuext doctor' $T/out"

# The kernel module's version, from the two forms of /proc/driver/nvidia/version.
printf 'NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (dvs-builder@U22)  Thu Jul 17 2025\nGCC version:  gcc 12\n' >"$T/v-open"
printf 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n' >"$T/v-prop"
run GX_TEST_NVIDIA_VERSION="$T/v-open" "$G" doctor >"$T/out" 2>&1
check "kernel module version, open module" "grep -Eq '^ok +kernel-driver +NVIDIA kernel module 580.159.04 \\(open\\)\$' $T/out"
run GX_TEST_NVIDIA_VERSION="$T/v-prop" "$G" doctor >"$T/out" 2>&1
check "kernel module version, proprietary module" "grep -Eq '^ok +kernel-driver +NVIDIA kernel module 550.54.15\$' $T/out"
