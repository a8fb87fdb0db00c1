"""steady(): the steady-state time of a workload, as the ML scripts print it.

One timed pass of a 13-18 ms workload swung +-30 % between runs (runs 29-36),
so each script times REPS passes (7 by default) of ITERS rounds after its
warm-up and prints the median as `time_ms`, the passes as `time_ms_all`."""
import os, statistics, time


def steady(round_fn, sync, iters, reps=None):
    reps = reps or int(os.environ.get('REPS', '7'))
    times = []
    for _ in range(reps):
        sync()
        t0 = time.perf_counter()
        for _ in range(iters):
            round_fn()
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
    print('time_ms %.3f' % statistics.median(times))
    print('time_ms_all ' + ' '.join('%.3f' % t for t in times))


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
