# Sourced by tests/gpu/ml.sh and mlab.sh (with PART set to the log folder's
# name): the folders, a scratch folder W removed at exit, and the environment
# both run the ML stacks in — deterministic cuBLAS, no NVLink multicast, JAX
# allocating as it goes — and RUN, gpuext-run.
ROOT=${GX_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)}
B=${GX_BUILD:-$ROOT/build}
OUT=${OUT:-$B/gpu-out}
L=$OUT/$PART
mkdir -p "$L"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
export GPUEXT_CACHE_DIR=${GPUEXT_CACHE_DIR:-$B/cache}
export GPUEXT_TOOLS_DIR=$B/share/gpuext/tools
export CUBLAS_WORKSPACE_CONFIG=:4096:8 PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export XLA_PYTHON_CLIENT_PREALLOCATE=false
RUN=$B/bin/gpuext-run
