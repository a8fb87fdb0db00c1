"""Issue 40's kernels nobody tuned for, through the shim (tests/gpu/schedguard.sh).

CuPy RawKernels compiled to PTX (CUPY_COMPILE_WITH_PTX=1, so the shim can
rewrite them): a triangular segmented sum (4,224 items, work growing with the
index), 8,448 items with ~4 % scattered 30x-heavy ones, a CSR SpMV with
power-law rows sorted short to long, and a streaming saxpy. Each kernel is
launched LAUNCHES times back to back, every launch between two events, and
the per-launch times are written as JSON with a checksum of one more
launch's output (on zeroed outputs), so that the script can compare a run
under a policy with the native run launch by launch. Then cuFFT's work area
for a few plans (cufftMakePlan1d's answer), which issue 40 saw change under
--sched adaptive (448 bytes where natively none)."""
import ctypes
import hashlib
import json
import os
import sys

import cupy as cp
import numpy as np

N = int(os.environ.get('LAUNCHES', '300'))
# APP_PART=kernels or cufft: one part only (cuFFT's modules may take the
# shim a while to rewrite and JIT: a separate process keeps the kernels' run)
PART = os.environ.get('APP_PART', 'all')
SRC = r'''
extern "C" __global__ void segsum(const float *x, const long long *off, float *out, unsigned long long mask) {
    __shared__ float part[8];
    int s = blockIdx.x;
    long long b = off[s], n = off[s + 1] - b;
    float acc = 0.f;
    for (long long i = threadIdx.x; i < n; i += blockDim.x)
        acc += x[(unsigned long long)(b + i) & mask];
    for (int o = 16; o > 0; o >>= 1)
        acc += __shfl_down_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31) == 0)
        part[threadIdx.x >> 5] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
        float t = 0.f;
        for (int w = 0; w < (int)(blockDim.x >> 5); w++)
            t += part[w];
        out[s] = t;
    }
}
extern "C" __global__ void spmv(const int *rowptr, const int *colidx, const float *val, const float *x,
                                float *y, int nrows) {
    int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x & 31;
    if (row >= nrows)
        return;
    float sum = 0.f;
    for (int j = rowptr[row] + lane; j < rowptr[row + 1]; j += 32)
        sum += val[j] * x[colidx[j]];
    for (int o = 16; o > 0; o >>= 1)
        sum += __shfl_down_sync(0xffffffffu, sum, o);
    if (lane == 0)
        y[row] = sum;
}
extern "C" __global__ void saxpy(float a, const float *x, float *y, unsigned long long n) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}
'''


def kernels(res):
    """the four kernels, LAUNCHES launches each"""
    mod = cp.RawModule(code=SRC)
    segsum, spmv, saxpy = (mod.get_function(k) for k in ('segsum', 'spmv', 'saxpy'))
    rng = np.random.default_rng(1)
    MASK = (1 << 24) - 1
    x = cp.asarray((np.arange(MASK + 1, dtype=np.uint64) * 2654435761 % 1000).astype(np.float32) / 1000)

    def seg(lens):
        off = cp.asarray(np.concatenate([[0], np.cumsum(lens)]).astype(np.int64))
        out = cp.zeros(len(lens), cp.float32)
        return (len(lens),), (256,), (x, off, out, np.uint64(MASK)), out

    work = {}
    work['triangular'] = seg(8 * (np.arange(4224, dtype=np.int64) + 1))
    work['scattered'] = seg(np.where(rng.random(8448) < 0.04, 30 * 2048, 2048).astype(np.int64))
    nrows = 1 << 17
    deg = np.minimum(8.0 / (rng.random(nrows) + 1e-9), 8192).astype(np.int64)
    deg.sort()  # short rows first: the heaviest blocks come last
    rowptr = np.concatenate([[0], np.cumsum(deg)]).astype(np.int32)
    nnz = int(rowptr[-1])
    col = cp.asarray(rng.integers(0, nrows, nnz, dtype=np.int32))
    val = cp.asarray(((np.arange(nnz) % 17) * 0.25 - 2).astype(np.float32))
    xv = cp.asarray(((np.arange(nrows) % 13) * 0.5).astype(np.float32))
    yv = cp.zeros(nrows, cp.float32)
    work['spmv_asc'] = ((nrows // 8,), (256,), (cp.asarray(rowptr), col, val, xv, yv, np.int32(nrows)), yv)
    n = 1 << 25
    sx = cp.arange(n, dtype=cp.float32) * np.float32(1e-6)
    sy = cp.zeros(n, cp.float32)
    work['saxpy'] = ((n // 256,), (256,), (np.float32(2.0), sx, sy, np.uint64(n)), sy)
    kern = {'triangular': segsum, 'scattered': segsum, 'spmv_asc': spmv, 'saxpy': saxpy}

    for name, (grid, block, args, out) in work.items():
        f = kern[name]
        ev = [(cp.cuda.Event(), cp.cuda.Event()) for _ in range(N)]
        for a, b in ev:
            a.record()
            f(grid, block, args)
            b.record()
        cp.cuda.Device().synchronize()
        ms = [cp.cuda.get_elapsed_time(a, b) for a, b in ev]
        out.fill(0)
        f(grid, block, args)
        res['kernels'][name] = {'ms': ms, 'sum': hashlib.sha256(cp.asnumpy(out).tobytes()).hexdigest()[:16]}


def cufft(res):
    """cuFFT: the work area its plans ask for (issue 40: 448 bytes under adaptive)"""
    fft = {}
    lib = None
    for name in (os.environ.get('CUFFT_LIB'), 'libcufft.so.12', '/usr/local/cuda/lib64/libcufft.so.12',
                 'libcufft.so.11', 'libcufft.so'):
        try:
            lib = ctypes.CDLL(name) if name else None
        except OSError:
            lib = None
        if lib:
            break
    if not lib:
        fft['error'] = 'no libcufft'
        res['cufft'] = fft
        return
    try:
        for (nx, typ, batch) in ((1 << 20, 0x29, 1), (4096, 0x2a, 64), (1000, 0x29, 16), (1 << 16, 0x29, 32)):
            h = ctypes.c_int(0)
            ws = ctypes.c_size_t(0)
            r = lib.cufftCreate(ctypes.byref(h))
            r = r or lib.cufftMakePlan1d(h, nx, typ, batch, ctypes.byref(ws))
            fft['%d/%#x/%d' % (nx, typ, batch)] = int(ws.value) if r == 0 else 'error %d' % r
            lib.cufftDestroy(h)
        # and a transform through CuPy (its own plan cache), to check outputs
        v = cp.asarray(np.random.default_rng(2).standard_normal(1 << 16).astype(np.complex64))
        fft['cupy_fft_sum'] = hashlib.sha256(cp.asnumpy(cp.fft.fft(v)).tobytes()).hexdigest()[:16]
    except Exception as e:  # a missing symbol, CuPy's FFT failing: said, not fatal
        fft['error'] = str(e)
    res['cufft'] = fft


res = {'launches': N, 'kernels': {}}
if PART in ('all', 'kernels'):
    kernels(res)
if PART in ('all', 'cufft'):
    cufft(res)
json.dump(res, sys.stdout)
