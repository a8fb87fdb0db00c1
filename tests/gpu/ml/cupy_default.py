"""CuPy with its own kernels (RawKernel, ElementwiseKernel, reductions) and
its precompiled libraries (FFT, sort, linalg): checksums, then time."""
import hashlib, os, time
import cupy as cp
from steady import steady, kernel_times
raw = cp.RawKernel(r'''
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}''', 'saxpy')
ew = cp.ElementwiseKernel('float32 x, float32 y', 'float32 z', 'z = x * x + 3 * y', 'sqplus')
rs = cp.random.RandomState(0)
x = rs.standard_normal(1 << 20, dtype=cp.float32)
y = rs.standard_normal(1 << 20, dtype=cp.float32)
A = rs.standard_normal((256, 256), dtype=cp.float32)
def run():
    z = y.copy()
    raw(((1 << 20) // 256,), (256,), (cp.float32(2.0), x, z, cp.int32(1 << 20)))
    w = ew(x, z)
    return [z, w, cp.sort(w), cp.fft.fft(x).real.astype(cp.float32), cp.linalg.inv(A @ A.T + 256 * cp.eye(256, dtype=cp.float32)),
            cp.asarray([w.sum(), w.max()])]
h = hashlib.sha256()
for t in run():
    h.update(cp.asnumpy(t).tobytes())
print('checksum', h.hexdigest()[:16])
iters = int(os.environ.get('ITERS', '100'))
steady(run, cp.cuda.Device().synchronize, iters)
spin = cp.RawKernel(r'''
extern "C" __global__ void gate_spin(long long cycles) {
    long long t0 = clock64();
    while (clock64() - t0 < cycles) ;
}''', 'gate_spin')
z = y.copy()
kernel_times([('saxpy', lambda: raw(((1 << 20) // 256,), (256,), (cp.float32(2.0), x, z, cp.int32(1 << 20)))),
              ('sqplus', lambda: ew(x, z, z))], cp.cuda.Event, cp.cuda.get_elapsed_time,
             cp.cuda.Device().synchronize, lambda: spin((1,), (1,), (cp.int64(10_000_000),)))
