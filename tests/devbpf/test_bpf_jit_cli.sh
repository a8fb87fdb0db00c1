#!/usr/bin/env bash
# gpuext bpf jit and gpuext map list|dump: golden-ish checks of the output.
B=${BUILD:-build}
G=$B/bin/gpuext
OBJ=$B/tests/devbpf/progs/jit_count.bpf.o
PTXAS=${PTXAS:-/usr/local/cuda/bin/ptxas}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
check() { if eval "$2" >"$T/out" 2>&1; then echo "ok - $1"; else echo "not ok - $1: $2"; sed 's/^/# /' "$T/out" | head -5; fi; }

check "jit --target ptx writes PTX" "$G bpf jit $OBJ -o $T/p.ptx 2>/dev/null && grep -q '^.target sm_90' $T/p.ptx"
check "one .visible .func per program with the hook ABI" \
  "grep -qx '.visible .func  (.param .b32 func_retval0) gxp_count_access(' $T/p.ptx && grep -qx '.visible .func  (.param .b32 func_retval0) gxp_on_entry(' $T/p.ptx && grep -q 'param .b64 gxp_on_entry_param_0' $T/p.ptx"
check "module declares the runtime block __gx_devrt .extern .const (for ptx-rewrite)" "grep -q '^.extern .const .align 8 .b8 __gx_devrt\[[0-9]*\];' $T/p.ptx"
# (hash maps' out-of-line probe functions take the descriptor as a generic
# pointer into the constant window: cvta.const there is expected)
check "inlined map reads load the block with ld.const at immediate offsets (no pointer to chase)" \
  "grep -q 'ld.const.u[0-9]*[[:space:]]*%[a-z0-9]*, \[__gx_devrt+[0-9]*\]' $T/p.ptx && ! grep -q '\[__gx_devrt\];' $T/p.ptx"
check "helpers inlined, hash helpers internal" "! grep -q 'gx_h_' $T/p.ptx && ! grep -q '.visible .func.*gx_hash' $T/p.ptx"
check "ptxas -arch=sm_90 -c accepts the PTX" "$PTXAS -arch=sm_90 -c -o $T/p.o $T/p.ptx"
check "--prefix renames the functions" "$G bpf jit $OBJ --prefix pol7_ 2>/dev/null | grep -q ') pol7_on_entry('"
check "--define-devrt defines the block" "$G bpf jit $OBJ --define-devrt 2>/dev/null | grep -q '^.visible .const .align 8 .b8 __gx_devrt\[[0-9]*\];'"
check "--ir prints LLVM IR of the hook ABI" "$G bpf jit $OBJ --ir 2>/dev/null | grep -q 'define i32 @gxp_count_access(ptr'"
check "--target native compiles every program" "$G bpf jit $OBJ --target native 2>/dev/null | grep -q '2 programs JIT.d for native' && $G bpf jit $OBJ --target native 2>/dev/null | grep -q 'gxp_on_entry .*(callable)'"
check "--target native -o writes x86-64 assembly" "$G bpf jit $OBJ --target native -o $T/n.s 2>/dev/null && grep -q 'gxp_count_access:' $T/n.s"
check "--json summary lists funcs, hooks and globs" "$G --json bpf jit $OBJ -o $T/j.ptx 2>/dev/null | grep -q '\"func\":\"gxp_on_entry\",\"hook\":1,\"kernel_glob\":\"\\*\"'"
check "unknown target is a usage error (2)" "$G bpf jit $OBJ --target arm 2>&1 | grep -q \"unknown target 'arm'\"; test \${PIPESTATUS[0]} -eq 2"
check "missing file fails with a clear message" "! $G bpf jit $T/nope.bpf.o 2>$T/e; grep -q 'cannot load' $T/e"
check "a non-ELF file fails cleanly" "echo garbage > $T/g.bpf.o; ! $G bpf jit $T/g.bpf.o 2>/dev/null"
# ordinary C: a chain of static __noinline void helpers (LLVM's InstCombine,
# when asked to verify its fixpoint, aborted the process on it natively)
cat > $T/chain.bpf.c <<'EOF2'
#include "gpuext/gdev_helpers.h"
__u64 sum;
static __noinline void add(__u64 *c, __u64 by) { *c += by; }
static __noinline void add_twice(__u64 *c, __u64 by) { add(c, by); add(c, by); }
SEC("gdev/probe/k") int chain(struct gdev_ctx *ctx)
{
	__u64 local = 0;
	add_twice(&local, ctx->smid);
	add(&sum, local);
	return 0;
}
GDEV_LICENSE("GPL");
EOF2
check "void helper chain: clang -target bpf" "${CLANG:-clang-19} -target bpf -O2 -g -Iinclude -c $T/chain.bpf.c -o $T/chain.bpf.o"
for tgt in ptx native; do
	check "void helper chain: verified and JIT'd for $tgt" "$G bpf jit $T/chain.bpf.o --target $tgt -o $T/chain.$tgt"
done
# ordinary C: a lookup factored into a static __noinline helper whose
# returned value pointer the caller checks and writes through (issue 42)
cat > $T/retlk.bpf.c <<'EOF2'
#include "gpuext/gdev_helpers.h"
struct {
	__uint(type, GDEV_MAP_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} hits SEC(".maps");
static __noinline __u64 *hit_of(__u32 k) { return bpf_map_lookup_elem(&hits, &k); }
SEC("gdev/probe/k") int retlk(struct gdev_ctx *ctx)
{
	__u64 *h = hit_of(ctx->smid & 3);
	if (h)
		*h += 1;
	return 0;
}
GDEV_LICENSE("GPL");
EOF2
check "returned lookup: clang -target bpf" "${CLANG:-clang-19} -target bpf -O2 -g -Iinclude -c $T/retlk.bpf.c -o $T/retlk.bpf.o"
for tgt in ptx native; do
	check "returned lookup: verified and JIT'd for $tgt" "$G bpf jit $T/retlk.bpf.o --target $tgt -o $T/retlk.$tgt"
done
check "returned lookup: ptxas -arch=sm_90 -c accepts the PTX" "$PTXAS -arch=sm_90 -c -o $T/retlk.o $T/retlk.ptx"
# a once-accepted exploit (a bpf_loop callback that runs past a 64-byte map
# value after 8 iterations) never reaches either back end
LOOPX=$B/tests/devbpf/verifier/loop_cb.bpf.o
for tgt in ptx native; do
	check "jit --target $tgt refuses the bpf_loop overrun the verifier refuses" \
	  "! $G bpf jit $LOOPX --target $tgt -o $T/x.$tgt 2>$T/e; grep -q 'prog loop_cb_advance insn [0-9]*: map value access out of bounds' $T/e && test ! -s $T/x.$tgt"
done

# maps from outside the process
D=$T/shm
check "fixture maps created" "$B/tests/devbpf/test_maps --fixture $D"
export GPUEXT_SHM_DIR=$D
check "map list shows the six maps, three of them constant" "test \$($G map list | grep -c -- '-fix\.') -eq 6 && test \$($G map list | grep -c -- '-fix\..* const\$') -eq 3"
check "map list --json" "$G --json map list | grep -q '\"name\":\"fix.counts\",\"pid\":[0-9]*,\"alive\":false,\"type\":\"array\"'"
check "map dump array" "$G map dump counts | grep -qx '  \[1\] 200'"
check "map dump hash" "$G map dump kernels | grep -qx '  key 11259375 value 3'"
check "map dump per-SM: merged view and shards" "$G map dump persm | grep -qx '  \[1\] merged 6 shards 0=1 1=2 2=3'"
check "map dump --json" "$G --json map dump fix.counts | grep -q '\"key\":0,\"value\":\"6400000000000000\"'"
check "map update array entry" "$G map update counts 1 250 | grep -qx 'updated 1 map' && $G map dump counts | grep -qx '  \[1\] 250'"
check "map update hash: existing key in place" "$G map update kernels 11259375 7 >/dev/null && $G map dump kernels | grep -qx '  key 11259375 value 7'"
check "map update hash: a new key is added" "$G map update kernels 0x42 9 >/dev/null && $G map dump kernels | grep -qx '  key 66 value 9'"
check "map update --offset/--size writes one field, keeps the rest" "$G map update counts 0 0x12345678 --offset 4 --size 4 >/dev/null && $G --json map dump fix.counts | grep -q '\"key\":0,\"value\":\"6400000078563412\"'"
check "map update: field outside the value is refused" "! $G map update counts 0 1 --offset 6 --size 4 2>$T/e; grep -q 'outside the 8-byte value' $T/e"
check "map update: index outside the array is refused" "! $G map update counts 999999 1 2>$T/e; grep -q 'outside the array' $T/e"
check "map update: sharded maps are refused" "! $G map update persm 1 1 2>$T/e; grep -q 'cannot be updated from outside' $T/e"
check "map update: bad numbers are a usage error (2)" "$G map update counts x 1 2>$T/e; test \$? -eq 2 && grep -q 'unsigned integers' $T/e"
# Constants (gx_map__seal) are refused under any name: .rodata, .rodata.cfg
# (issue 20: a knob there was written, and the next native call crashed),
# and a name that says nothing; dumping them still works.
for c in fix.rodata fix.rodata.cfg fix.knobs; do
	check "map update: $c is refused (constants the verifier folded)" "! $G map update $c 0 1 2>$T/e && grep -q ': read-only: its bytes are constants the verifier folded' $T/e && $G map dump $c | grep -qx '  \[0\] 64'"
done
check "map list --json marks constants" "$G --json map list | grep -q '\"name\":\"fix.knobs\".*\"const\":true' && $G --json map list | grep -q '\"name\":\"fix.counts\".*\"const\":false'"
check "constant map files are 0400" "test \$(stat -c %a $D/*-fix.rodata.cfg) = 400"
check "map update unknown name fails" "! $G map update nosuch 1 1 2>$T/e; grep -q \"no map named 'nosuch'\" $T/e"
check "map dump unknown name fails" "! $G map dump nosuch 2>$T/e; grep -q \"no map named 'nosuch'\" $T/e"

# the GPU test's inputs: driver-style link of the kernels with the JIT'd PTX
GD=$B/tests/devbpf/gpu
NVLINK=$(dirname "$PTXAS")/nvlink
check "GPU test kernels + policy PTX link (ptxas -c, nvlink)" \
  "$PTXAS -arch=sm_90 -c $GD/kernels_check.ptx -o $T/k.o && $PTXAS -arch=sm_90 -c $GD/policy.ptx -o $T/p.o && $NVLINK -arch=sm_90 $T/k.o $T/p.o -o $T/c.cubin"
check "GPU bench kernels + bench PTX link" \
  "$PTXAS -arch=sm_90 -c $GD/kernels_bench.ptx -o $T/kb.o && $PTXAS -arch=sm_90 -c $GD/bench.ptx -o $T/b.o && $NVLINK -arch=sm_90 $T/kb.o $T/b.o -o $T/b.cubin"
check "GPU harness built against the driver API" "test -x $GD/devbpf_harness && readelf -d $GD/devbpf_harness | grep -q libcuda.so"

# end to end on the CPU: JIT'd policy PTX linked into a rewritten module
check "ptx-rewrite links the JIT's PTX into an application module" \
  "$G ptx rewrite --hooks entry,mem --policy-ptx $T/p.ptx --bind mem:gxp_count_access --bind 'entry:gxp_on_entry:vec*' tests/devbpf/progs/vec_add.ptx -o $T/app.ptx"
check "ptxas -arch=sm_90 accepts the instrumented module (whole program)" "$PTXAS -arch=sm_90 $T/app.ptx -o $T/app.cubin"
