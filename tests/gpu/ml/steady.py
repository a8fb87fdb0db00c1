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
