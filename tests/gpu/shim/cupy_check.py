# cupy_check.py OUT.npz — RawKernel, ElementwiseKernel, ReductionKernel and
# built-in reductions; saves the results and prints a SHA-256 of each so runs
# with and without the shim can be compared bit for bit. Run it with a fresh
# CUPY_CACHE_DIR each time (so kernels are compiled and loaded, not cached)
# and CUPY_COMPILE_WITH_PTX=1 (so the driver gets PTX, which the shim rewrites).
import hashlib
import sys

import cupy as cp
import numpy as np

n = 1 << 16
raw = cp.RawKernel(r'''
extern "C" __global__ void k(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * 2.0f + 1.0f;
}''', "k")
x = cp.arange(n, dtype=cp.float32) * 0.5
y = cp.empty_like(x)
raw((n // 256,), (256,), (x, y, cp.int32(n)))
ew = cp.ElementwiseKernel("float32 a, float32 b", "float32 c", "c = a * b + 0.25f", "gx_ew")(x, y)
red = cp.ReductionKernel("float32 v", "float32 r", "v", "a + b", "r = a", "0", "gx_red")(ew)
out = {
    "raw": cp.asnumpy(y),
    "elementwise": cp.asnumpy(ew),
    "reduction_kernel": cp.asnumpy(red),
    "sum": cp.asnumpy(cp.sum(ew)),
    "max": cp.asnumpy(ew.max()),
    "argmin": cp.asnumpy(cp.argmin(ew - 1000.0)),
    "sqrt_mean": cp.asnumpy(cp.sqrt(ew).mean()),
}
np.savez(sys.argv[1], **out)
for k in sorted(out):
    print(k, hashlib.sha256(np.ascontiguousarray(out[k]).tobytes()).hexdigest()[:16])
