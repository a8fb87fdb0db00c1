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
# shellcheck source=tests/blocksched/fake_lib.sh
. "$(dirname "$0")/fake_lib.sh"
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
fatbin() {
	"$NVCC" -fatbin --compress-mode=none -gencode 'arch=compute_90,code=[sm_90,compute_90]' -o "$2" "$1" 2>"$tmp/nvcc.err" ||
		{ nok "nvcc builds $2: $(head -3 "$tmp/nvcc.err" | tr '\n' ' ')"; exit 1; }
}
printf 'extern "C" __global__ void k_ok(float *x) { x[blockIdx.x * blockDim.x + threadIdx.x] *= 2.0f; }\n' >"$tmp/plain.cu"
printf '__device__ float scale;\nextern "C" __global__ void k_ok(float *x) { x[blockIdx.x * blockDim.x + threadIdx.x] *= scale; }\n' >"$tmp/var.cu"
fatbin "$tmp/plain.cu" "$tmp/plain.fatbin"
fatbin "$tmp/var.cu" "$tmp/var.fatbin"
SCHED="$P/greedy.bpf.o,gx_sched_guard=0"
BESIDE='loaded as it came (its kernels run as without gpuext); 1 kernels with persistent copies in a module of their own'
VARS='passed through: 1 module variable its copies could not share'
# side NAME WHAT SPEC FILE LOG_REGEX OUT_LINE...: side_load FILE under
# GPUEXT_SCHED=SPEC; ok when its log matches LOG_REGEX and it printed every
# OUT_LINE ("launched copy|orig", "devrt N": modules whose __gx_devrt was
# written, "unloads N": modules its unload unloaded)
side() {
	local name=$1 what=$2 spec=$3 file=$4 re=$5 good=1 l
	shift 5
	run env GPUEXT_SCHED="$spec" FAKECUDA_GLOBALS=1 timeout 60 "$B/tests/blocksched/side_load" "$file" k_ok \
		>"$tmp/$name.out" 2>"$tmp/$name.err"
	grep -q "$re" "$tmp/$name.err" || good=0
	for l in "$@"; do grep -qx "$l" "$tmp/$name.out" || good=0; done
	[ $good = 1 ] && ok "$what" ||
		nok "$what: $(tr '\n' ' ' <"$tmp/$name.out") $(grep 'gpuext: module' "$tmp/$name.err" | head -3 | tr '\n' ' ')"
}

side a "no variables: the image as it came, its copies beside it (logged), launched, their __gx_devrt written (the launch named the original), unloaded with it" \
	"$SCHED" "$tmp/plain.fatbin" "$BESIDE" 'launched copy' 'devrt 1' 'unloads 2'
side b "a __device__ variable: loaded as it came, no copy, the reason logged" \
	"$SCHED" "$tmp/var.fatbin" "$VARS" 'launched orig' 'devrt 0' 'unloads 1'
side c "a __device__ variable, its kernel selected by kernels=: one rewritten module, the copy launched" \
	"$SCHED,kernels=k_ok" "$tmp/var.fatbin" 'rewritten (.*1 kernels with persistent copies), reloaded' 'launched copy' 'devrt 1'
side d "kernels= selecting none of a module's kernels: its SASS, no copy" \
	"$SCHED,kernels=nothing" "$tmp/plain.fatbin" 'passed through: has SASS for sm_90 and nothing to change in its PTX' \
	'launched orig' 'unloads 1'

# PTX-only modules (what CuPy, Triton and nvcc's compute_XX builds give)
"$NVCC" -arch=sm_90 -ptx -o "$tmp/plain.ptx" "$tmp/plain.cu" && "$NVCC" -arch=sm_90 -ptx -o "$tmp/var.ptx" "$tmp/var.cu" ||
	nok "nvcc -ptx"
side e "PTX only, no variables: the image as it came, its copies beside it, launched, unloaded with it" \
	"$SCHED" "$tmp/plain.ptx" "$BESIDE" 'launched copy' 'devrt 1' 'unloads 2'
side f "PTX only, a variable: loaded as it came, no copy" \
	"$SCHED" "$tmp/var.ptx" "$VARS" 'launched orig'
side h "PTX only, a variable, kernels= naming its kernel: one rewritten module, loaded as PTX (no cubin route), the copy launched" \
	"$SCHED,kernels=k_ok" "$tmp/var.ptx" 'rewritten (.*1 kernels with persistent copies), reloaded from sm_90 PTX ([0-9]* bytes)$' \
	'launched copy'
side g "PTX only, no kernel selected: loaded as it came" \
	"$SCHED,kernels=nothing" "$tmp/plain.ptx" 'passed through: nothing to change in its PTX' 'launched orig'
