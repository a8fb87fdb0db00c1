#!/usr/bin/env bash
# A schedule policy on modules that come with SASS for the device (the fake
# driver; nvcc fatbins of sm_90 SASS and PTX, uncompressed so the fake can
# read their kernels): the originals must stay the image's own code.
#  - no module variables: the image loads as it came and its persistent
#    copies load beside it in a module of their own; a launch runs a copy,
#    and unloading the application's module unloads both;
#  - a __device__ variable (a copy in a second module would see its own):
#    loaded as it came, no copies, the reason logged; with kernels= naming
#    its kernel, one rewritten module as before (the user asked for it);
#  - the policy's kernels= selecting none of a module's kernels: no copy,
#    the image's SASS (cuFFT's plans changed when its modules were reloaded
#    from their PTX, GPU run 91);
#  - PTX-only modules: without variables the same pair (the driver JITs
#    the application's PTX as natively, the copies beside it); with a
#    variable loaded as it came, or, its kernel selected, one rewritten
#    module loaded as PTX (the driver's whole-module JIT), not through the
#    cubin route, which compiles it as relocatable code; with nothing to
#    change, loaded as it came.
set -u
B=${BUILD:-build}
FAKE=$PWD/$B/tests/shim/fakecuda/libcuda.so.1
P=$B/share/gpuext/sched
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() { env LD_LIBRARY_PATH="$PWD/$B/lib" GPUEXT_REAL_LIBCUDA="$FAKE" GPUEXT_LOG=info GPUEXT_CACHE_DIR="$tmp/cache" \
	GPUEXT_SHM_DIR="$tmp/shm" GPUEXT_JITLIB="$PWD/$B/lib/libgxjit.so" "$@"; }
fatbin() {
	"$NVCC" -fatbin --compress-mode=none -gencode arch=compute_90,code=[sm_90,compute_90] -o "$2" "$1" 2>"$tmp/nvcc.err" ||
		{ nok "nvcc builds $2: $(head -3 "$tmp/nvcc.err" | tr '\n' ' ')"; exit 1; }
}
printf 'extern "C" __global__ void k_ok(float *x) { x[blockIdx.x * blockDim.x + threadIdx.x] *= 2.0f; }\n' >"$tmp/plain.cu"
printf '__device__ float scale;\nextern "C" __global__ void k_ok(float *x) { x[blockIdx.x * blockDim.x + threadIdx.x] *= scale; }\n' >"$tmp/var.cu"
fatbin "$tmp/plain.cu" "$tmp/plain.fatbin"
fatbin "$tmp/var.cu" "$tmp/var.fatbin"
SCHED="$P/greedy.bpf.o,gx_sched_guard=0"

run env GPUEXT_SCHED="$SCHED" FAKECUDA_GLOBALS=1 timeout 60 "$B/tests/blocksched/side_load" "$tmp/plain.fatbin" k_ok >"$tmp/a.out" 2>"$tmp/a.err"
grep -q 'loaded as it came (its kernels run as without gpuext); 1 kernels with persistent copies in a module of their own' "$tmp/a.err" &&
	ok "no variables: the image loads as it came, its copies beside it (logged)" ||
	nok "no variables: $(grep 'gpuext: module' "$tmp/a.err" | head -3 | tr '\n' ' ')"
grep -q '^launched copy$' "$tmp/a.out" && ok "no variables: a launch runs the copy from the module beside it" ||
	nok "no variables: $(tr '\n' ' ' <"$tmp/a.out") $(grep -i 'blocksched\|error' "$tmp/a.err" | head -3 | tr '\n' ' ')"
grep -q '^devrt 1$' "$tmp/a.out" && ok "no variables: the copies' module got its __gx_devrt (the launch named the original)" ||
	nok "no variables: __gx_devrt: $(tr '\n' ' ' <"$tmp/a.out")"
grep -q '^unloads 2$' "$tmp/a.out" && ok "no variables: unloading the module unloads its copies' module too" ||
	nok "no variables: unload: $(tr '\n' ' ' <"$tmp/a.out")"

run env GPUEXT_SCHED="$SCHED" timeout 60 "$B/tests/blocksched/side_load" "$tmp/var.fatbin" k_ok >"$tmp/b.out" 2>"$tmp/b.err"
grep -q 'passed through: 1 module variable its copies could not share' "$tmp/b.err" &&
	grep -q '^launched orig$' "$tmp/b.out" && grep -q '^unloads 1$' "$tmp/b.out" &&
	ok "a __device__ variable: loaded as it came, no copy, the reason logged" ||
	nok "a __device__ variable: $(tr '\n' ' ' <"$tmp/b.out") $(grep 'gpuext: module' "$tmp/b.err" | head -3 | tr '\n' ' ')"
run env GPUEXT_SCHED="$SCHED,kernels=k_ok" timeout 60 "$B/tests/blocksched/side_load" "$tmp/var.fatbin" k_ok >"$tmp/c.out" 2>"$tmp/c.err"
grep -q 'rewritten (.*1 kernels with persistent copies), reloaded' "$tmp/c.err" && grep -q '^launched copy$' "$tmp/c.out" &&
	ok "a __device__ variable, its kernel selected by kernels=: one rewritten module, the copy launched" ||
	nok "kernels=k_ok on a module with a variable: $(tr '\n' ' ' <"$tmp/c.out") $(grep 'gpuext: module' "$tmp/c.err" | head -3 | tr '\n' ' ')"
run env GPUEXT_SCHED="$SCHED,kernels=nothing" timeout 60 "$B/tests/blocksched/side_load" "$tmp/plain.fatbin" k_ok >"$tmp/d.out" 2>"$tmp/d.err"
grep -q 'passed through: has SASS for sm_90 and nothing to change in its PTX' "$tmp/d.err" && grep -q '^launched orig$' "$tmp/d.out" &&
	grep -q '^unloads 1$' "$tmp/d.out" && ok "kernels= selecting none of a module's kernels: its SASS, no copy" ||
	nok "kernels=nothing: $(tr '\n' ' ' <"$tmp/d.out") $(grep 'gpuext: module' "$tmp/d.err" | head -3 | tr '\n' ' ')"

# PTX-only modules (what CuPy, Triton and nvcc's compute_XX builds give)
"$NVCC" -arch=sm_90 -ptx -o "$tmp/plain.ptx" "$tmp/plain.cu" && "$NVCC" -arch=sm_90 -ptx -o "$tmp/var.ptx" "$tmp/var.cu" ||
	nok "nvcc -ptx"
run env GPUEXT_SCHED="$SCHED" timeout 60 "$B/tests/blocksched/side_load" "$tmp/plain.ptx" k_ok >"$tmp/e.out" 2>"$tmp/e.err"
grep -q 'loaded as it came (its kernels run as without gpuext); 1 kernels with persistent copies in a module of their own' "$tmp/e.err" &&
	grep -q '^launched copy$' "$tmp/e.out" && grep -q '^unloads 2$' "$tmp/e.out" &&
	ok "PTX only, no variables: the image as it came, its copies beside it, launched, unloaded with it" ||
	nok "PTX only, no variables: $(tr '\n' ' ' <"$tmp/e.out") $(grep 'gpuext: module' "$tmp/e.err" | head -3 | tr '\n' ' ')"
run env GPUEXT_SCHED="$SCHED" timeout 60 "$B/tests/blocksched/side_load" "$tmp/var.ptx" k_ok >"$tmp/f.out" 2>"$tmp/f.err"
grep -q 'passed through: 1 module variable its copies could not share' "$tmp/f.err" && grep -q '^launched orig$' "$tmp/f.out" &&
	ok "PTX only, a variable: loaded as it came, no copy" ||
	nok "PTX only, a variable: $(tr '\n' ' ' <"$tmp/f.out") $(grep 'gpuext: module' "$tmp/f.err" | head -3 | tr '\n' ' ')"
run env GPUEXT_SCHED="$SCHED,kernels=k_ok" timeout 60 "$B/tests/blocksched/side_load" "$tmp/var.ptx" k_ok >"$tmp/h.out" 2>"$tmp/h.err"
grep -q 'rewritten (.*1 kernels with persistent copies), reloaded from sm_90 PTX ([0-9]* bytes)$' "$tmp/h.err" &&
	grep -q '^launched copy$' "$tmp/h.out" &&
	ok "PTX only, a variable, kernels= naming its kernel: one rewritten module, loaded as PTX (no cubin route), the copy launched" ||
	nok "PTX only, a variable, kernels=k_ok: $(tr '\n' ' ' <"$tmp/h.out") $(grep 'gpuext: module' "$tmp/h.err" | head -3 | tr '\n' ' ')"
run env GPUEXT_SCHED="$SCHED,kernels=nothing" timeout 60 "$B/tests/blocksched/side_load" "$tmp/plain.ptx" k_ok >"$tmp/g.out" 2>"$tmp/g.err"
grep -q 'passed through: nothing to change in its PTX' "$tmp/g.err" && grep -q '^launched orig$' "$tmp/g.out" &&
	ok "PTX only, no kernel selected: loaded as it came" ||
	nok "PTX only, kernels=nothing: $(tr '\n' ' ' <"$tmp/g.out") $(grep 'gpuext: module' "$tmp/g.err" | head -3 | tr '\n' ' ')"
