#!/usr/bin/env bash
# Trust boundaries of what the shim finds in shared places (docs/trust.md,
# common/gx_trust.h), against the fake driver with device memory:
#  - the policy JIT cache: a planted entry (a folder of nobody, mode 0777;
#    an entry that is a symbolic link; one writable by others; one owned by
#    nobody) is refused with exactly one line naming it, the policy is
#    verified and JIT'd again, and nothing is written into a folder of
#    another user;
#  - the read-only cache of an install (<shim dir>/../share/gpuext/cache,
#    filled by `gpuext tools prepare --shared`: root's, 0755/0644) is used
#    by a user who is not root (nobody, HOME in a scratch folder) without
#    the JIT library and without a byte written into it; made group-writable
#    it is refused;
#  - tool objects of the tools folder and the folder itself;
#  - the JIT library named by GPUEXT_JITLIB (and a good one still loads,
#    by its real path, its folder checked too);
#  - tool logs: never written into a maps folder of another user.
# Root only (files are handed to nobody); otherwise one note and a skip line.
set -u
# these checks look at the instrumented module itself, so every launch runs
# it (tools default to a sample of launches: test_launch_sample.sh)
export GPUEXT_LAUNCH_SAMPLE=1
B=${BUILD:-build}
B=$(cd "$B" && pwd)
if [ "$(id -u)" != 0 ]; then
	echo "# not root: cannot plant files of another user"
	echo "ok - trust: skipped (not root)"
	exit 0
fi
T=$(mktemp -d "$B/tests/attach/trust.XXXXXX"); trap "[ -n \"${KEEP:-}\" ] || rm -rf $T" EXIT
chmod 755 $T
FAKE=$B/tests/attach/fakecuda/libcuda.so.1
APP=$B/tests/attach/attach_app
PTX=$PWD/tests/ptx-rewrite/golden-passes/vadd.ptx
K=$(sed -n 's/.*\.entry \([A-Za-z0-9_]*\).*/\1/p' $PTX | head -1)
TOOLS=$B/share/gpuext/tools

ok() { echo "ok - trust: $1"; }
nok() { echo "not ok - trust: $1"; [ -n "${2:-}" ] && sed 's/^/#  /' "$2" | tail -8; }
check() { if eval "$2"; then ok "$1"; else nok "$1" "$T/$3.err"; fi; }
# lines NAME STRING [ALSO]: how many "gpuext: " lines of run NAME name STRING (and ALSO).
lines() { grep '^gpuext: ' "$T/$1.err" | grep -F -- "${3:-}" | grep -cF -- "$2"; }

run() { # name, extra env... (threadhist, the JIT library next to the shim)
	local n=$1 mode=${MODE:-policy}; shift # MODE=none: refused, the module runs untouched
	mkdir -p $T/shm-$n
	env -u GPUEXT_TOOL -u GPUEXT_POLICY -u GPUEXT_JITLIB LD_LIBRARY_PATH=$B/lib GPUEXT_REAL_LIBCUDA=$FAKE \
		GPUEXT_LOG=info GPUEXT_TOOLS_DIR=$TOOLS GPUEXT_TOOL=threadhist GPUEXT_SHM_DIR=$T/shm-$n \
		FAKEDEV_PIN_ANON_ONLY=1 FAKECUDA_DEVICES=1 "$@" timeout 60 $APP $PTX $K $mode >$T/$n.out 2>$T/$n.err
	echo $? >$T/$n.rc
}
jitted() { grep -q "policy threadhist: verified and JIT'd" $T/$1.err && grep -q '^ok - attach_app: __gx_devrt written' $T/$1.out && ! grep -q 'from the JIT cache' $T/$1.err &&
	grep -q 'rewritten ([1-9][0-9]* hooks)' $T/$1.err && [ "$(cat $T/$1.rc)" = 0 ]; }

# A good entry, and the attacker's copy of it: one more store in the PTX.
mkdir -p $T/good
$B/bin/gpuext tools prepare --cache-dir $T/good --sm 90 threadhist >$T/prep.err 2>&1
E=$(cd $T/good && ls *.gxpol 2>/dev/null | head -1)
check "a good entry prepared" "[ -n '$E' ]" prep
python3 - $T/good/$E $T/evil.gxpol <<'P'
import sys
t = open(sys.argv[1], 'rb').read()
head, ptx = t.split(b'\nptx ', 1)
n, body = ptx.split(b'\n', 1)
body = body.replace(b'\tret;', b'\tst.global.u32 [%rd1], 1234567;\n\tret;', 1)
open(sys.argv[2], 'wb').write(head + b'\nptx %d\n' % len(body) + body)
P
run control GPUEXT_CACHE_DIR=$T/good
check "control: the good entry is used" "grep -q 'policy threadhist: from the JIT cache ($T/good, sm_90)' $T/control.err" control

# (a) a cache folder of nobody, open to all, with nobody's altered entry
mkdir -p $T/a && cp $T/evil.gxpol $T/a/$E && chown -R nobody: $T/a && chmod 777 $T/a && chmod 666 $T/a/$E
run a GPUEXT_CACHE_DIR=$T/a
check "folder of nobody (0777): one line" "[ \$(lines a $T/a 'policy cache') = 1 ] && grep -q 'policy cache: not using $T/a: owned by uid 65534' $T/a.err" a
check "folder of nobody (0777): the policy is JIT'd, not read from there" "jitted a" a
check "folder of nobody (0777): nothing written into it (module cache included)" "[ \"\$(ls -A $T/a)\" = '$E' ] && cmp -s $T/a/$E $T/evil.gxpol && grep -q 'module cache: $T/a is not a folder of this user' $T/a.err" a

# (b) the entry is a symbolic link (to an altered file of this user)
mkdir -m 700 $T/b && cp $T/evil.gxpol $T/evil-b && ln -s $T/evil-b $T/b/$E
run b GPUEXT_CACHE_DIR=$T/b
check "entry a symbolic link: one line" "[ \$(lines b $T/b/$E) = 1 ] && grep -q 'not using policy cache entry $T/b/$E: a symbolic link; JIT.ing again' $T/b.err" b
check "entry a symbolic link: JIT'd, and the link replaced by the new entry" "jitted b && [ -f $T/b/$E ] && [ ! -L $T/b/$E ] && cmp -s $T/evil.gxpol $T/evil-b" b

# (c) the entry is writable by others / by its group / owned by nobody
for how in 666 664 nobody; do
	mkdir -m 700 $T/c$how && cp $T/evil.gxpol $T/c$how/$E
	case $how in nobody) chown nobody: $T/c$how/$E; want='owned by uid 65534' ;;
	666) chmod 666 $T/c$how/$E; want='writable by others (mode 0666)' ;;
	*) chmod 664 $T/c$how/$E; want='writable by its group (mode 0664)' ;; esac
	run c$how GPUEXT_CACHE_DIR=$T/c$how
	check "entry $want: one line, JIT'd" "[ \$(lines c$how $T/c$how/$E) = 1 ] && grep -q '$T/c$how/$E: $want' $T/c$how.err && jitted c$how" c$how
done

# (d) an install's read-only cache, used by nobody: no JIT library beside
# the shim copy, HOME a scratch folder of nobody.
mkdir -p $T/inst/lib $T/home-d
for f in $B/lib/libcuda.so*; do cp -P "$f" $T/inst/lib/; done
$B/bin/gpuext tools prepare --shared --cache-dir $T/inst/share/gpuext/cache --sm 90 threadhist >$T/prep-d.err 2>&1
IC=$T/inst/share/gpuext/cache
check "prepare --shared: folder 0755, entry 0644, root's" \
	"[ \$(stat -c %a:%U $IC) = 755:root ] && [ \$(stat -c %a:%U $IC/$E) = 644:root ]" prep-d
chown nobody: $T/home-d
touch $T/stamp-d
rund() { # name: threadhist as nobody through the install's shim
	setpriv --reuid=65534 --regid=65534 --clear-groups env -i PATH=/usr/bin:/bin HOME=$T/home-d \
		LD_LIBRARY_PATH=$T/inst/lib GPUEXT_REAL_LIBCUDA=$FAKE GPUEXT_LOG=info GPUEXT_TOOLS_DIR=$TOOLS \
		GPUEXT_TOOL=threadhist GPUEXT_LAUNCH_SAMPLE=1 GPUEXT_SHM_DIR=$T/home-d/shm FAKEDEV_PIN_ANON_ONLY=1 FAKECUDA_DEVICES=1 \
		timeout 60 $APP $PTX $K policy >$T/$1.out 2>$T/$1.err
	echo $? >$T/$1.rc
}
rund d
check "install cache (root's, 0755/0644) used by nobody: from the JIT cache" \
	"grep -q 'policy threadhist: from the JIT cache ($T/inst/share/gpuext/cache, sm_90)' $T/d.err && grep -q 'rewritten ([1-9][0-9]* hooks)' $T/d.err && [ \$(cat $T/d.rc) = 0 ]" d
check "install cache: nothing written into it, no warning" \
	"[ -z \"\$(find $T/inst -newer $T/stamp-d)\" ] && [ \$(ls -A $IC | wc -l) = 1 ] && ! grep -q 'running without it\|cache: not using' $T/d.err" d
chmod 775 $IC
rund d2
check "install cache writable by its group: refused with one line" \
	"[ \$(lines d2 $T/inst/share/gpuext/cache) = 1 ] && grep -q 'policy cache: not using $T/inst/share/gpuext/cache: writable by its group (mode 0775)' $T/d2.err && ! grep -q 'from the JIT cache' $T/d2.err" d2
chmod 755 $IC

# Tool objects: a copy of the tools folder, each case planted in it.
tools() { rm -rf $T/tools; mkdir -m 755 $T/tools; cp $TOOLS/threadhist.bpf.o $T/tools/; }
tools; run t0 GPUEXT_CACHE_DIR=$T/c-t0 GPUEXT_TOOLS_DIR=$T/tools
check "tool object of root in a 0755 folder: attached" "jitted t0" t0
O=$T/tools/threadhist.bpf.o
for how in nobody 666 symlink; do
	tools
	case $how in nobody) chown nobody: $O; want='owned by uid 65534' ;;
	666) chmod 666 $O; want='writable by others (mode 0666)' ;;
	symlink) mv $O $T/th.o && ln -s $T/th.o $O; want='a symbolic link' ;; esac
	MODE=none run t$how GPUEXT_CACHE_DIR=$T/c-t$how GPUEXT_TOOLS_DIR=$T/tools
	check "tool object $want: one line, not attached, the app runs" \
		"[ \$(lines t$how $O) = 1 ] && grep -q 'policy threadhist: not using $O: $want; running without it' $T/t$how.err && [ \$(cat $T/t$how.rc) = 0 ] && ! grep -q 'policy threadhist: verified' $T/t$how.err" t$how
done
tools; chmod 777 $T/tools
MODE=none run tdir GPUEXT_CACHE_DIR=$T/c-tdir GPUEXT_TOOLS_DIR=$T/tools
check "tools folder writable by others: one line, no tool" \
	"[ \$(lines tdir $T/tools) = 1 ] && grep -q 'not using the tools folder $T/tools: writable by others (mode 0777)' $T/tdir.err && ! grep -q 'policy threadhist: verified' $T/tdir.err && [ \$(cat $T/tdir.rc) = 0 ]" tdir

# The JIT library (empty cache: it must be loaded).
mkdir -m 755 $T/jit
run j0 GPUEXT_CACHE_DIR=$T/c-j0 GPUEXT_JITLIB=$B/lib/libgxjit.so
check "GPUEXT_JITLIB of root: loaded and JIT'd" "jitted j0" j0
J=$T/jit/libgxjit.so
for how in nobody 666 symlink; do
	rm -f $J
	case $how in nobody) cp $B/lib/libgxjit.so $J; chown nobody: $J; want='owned by uid 65534' ;;
	666) cp $B/lib/libgxjit.so $J; chmod 666 $J; want='writable by others (mode 0666)' ;;
	symlink) ln -s $B/lib/libgxjit.so $J; want='a symbolic link' ;; esac
	MODE=none run j$how GPUEXT_CACHE_DIR=$T/c-j$how GPUEXT_JITLIB=$J
	check "JIT library $want: one line, not loaded, the app runs" \
		"[ \$(lines j$how $J) = 1 ] && grep -q 'the JIT library cannot be loaded ($J: $want).*running without it' $T/j$how.err && [ \$(cat $T/j$how.rc) = 0 ]" j$how
done
# A good file in a folder others may write: they could swap it before the load.
mkdir -m 777 $T/jitw && cp $B/lib/libgxjit.so $T/jitw/ && chmod 755 $T/jitw/libgxjit.so
MODE=none run jdir GPUEXT_CACHE_DIR=$T/c-jdir GPUEXT_JITLIB=$T/jitw/libgxjit.so
check "JIT library in a folder writable by others: one line, not loaded, the app runs" \
	"[ \$(lines jdir $T/jitw/libgxjit.so) = 1 ] && grep -q 'the JIT library cannot be loaded ($T/jitw/libgxjit.so: its folder: writable by others' $T/jdir.err && [ \$(cat $T/jdir.rc) = 0 ]" jdir

# Tool logs are written only into a maps folder of this user.
mkdir -m 755 $T/shm-nob && chown nobody: $T/shm-nob
# (launchlate's ring build: a tool whose only map is a ring, so the tool log
# is the one file it would write there)
run lognob GPUEXT_CACHE_DIR=$T/good GPUEXT_TOOL=launchlate GX_LL_RING=1 GPUEXT_SHM_DIR=$T/shm-nob
check "maps folder of nobody: tool log not written there, one line, the tool still attached" \
	"[ \$(lines lognob $T/shm-nob) = 1 ] && grep -q 'not writing tool logs into $T/shm-nob: owned by uid 65534' $T/lognob.err && [ -z \"\$(ls -A $T/shm-nob)\" ] && grep -q '^ok - attach_app: __gx_devrt written' $T/lognob.out" lognob
