"""steady(): the steady-state time of a workload, as the ML scripts print it.

One timed pass of a 13-18 ms workload swung +-30 % between runs (runs 29-36),
so each script times REPS passes (7 by default) of ITERS rounds after its
warm-up and prints the median as `time_ms`, the passes as `time_ms_all`.

Processes of these Python-bound loops run at one of two speeds for their
whole life, native ones too (bench/results/2026-12-04-gpu-run62.md: 11 to
22 ms per pass in one run; not the core, the hash seed or the address
layout), so each pass is preceded by a fixed CPU-only Python workload
(calib(): dictionary and string work, no GPU, no CUDA call, so the shim
cannot reach it) and its median is printed as `calib_ms`: mlab also compares
the processes that ran at full host speed (calibration within 1.15x of the
workload's fastest), and each pass's calibration as `calib_ms_all`, so
that mlab can compare the passes that ran at full host speed."""
import os, statistics, time


_CALIB = {i: 'k%d' % i for i in range(4096)}


def calib():
    """Milliseconds of a fixed pure-Python workload (the interpreter's own
    speed in this process: what the two modes differ in)."""
    t0 = time.perf_counter()
    s = 0
    for _ in range(24):
        for k, v in _CALIB.items():
            s += len(v) + (k & 7)
    return (time.perf_counter() - t0) * 1e3


def steady(round_fn, sync, iters, reps=None):
    reps = reps or int(os.environ.get('REPS', '7'))
    times, cal = [], []
    for _ in range(reps):
        sync()
        cal.append(calib())
        t0 = time.perf_counter()
        for _ in range(iters):
            round_fn()
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
    print('time_ms %.3f' % statistics.median(times))
    print('time_ms_all ' + ' '.join('%.3f' % t for t in times))
    print('calib_ms %.3f' % statistics.median(cal))
    print('calib_ms_all ' + ' '.join('%.3f' % c for c in cal))


def kernel_times(kernels, event, elapsed_ms, sync, gate, launches=50, reps=11):
    """Each kernel's GPU time per launch (CUDA events around `launches`
    launches, median of `reps`), printed as `kernel_us NAME US`: the device
    side of an overhead, which process-to-process host noise does not reach.
    kernels: [(name, fn)]; event() makes a timing event with record() and
    synchronize(); elapsed_ms(e0, e1) the milliseconds between two; gate()
    holds the stream on the GPU for a few milliseconds (a spinning kernel)
    while the launches are queued behind it, so that the events time the
    kernels back to back, not the host's launch rate (these stacks' Python
    launch paths cost 5-15 us, longer than their small kernels)."""
    for name, fn in kernels:
        fn()
        sync()
        times = []
        for _ in range(reps):
            e0, e1 = event(), event()
            gate()
            e0.record()
            for _ in range(launches):
                fn()
            e1.record()
            e1.synchronize()
            times.append(elapsed_ms(e0, e1) * 1e3 / launches)
        print('kernel_us %s %.3f' % (name, statistics.median(times)))
