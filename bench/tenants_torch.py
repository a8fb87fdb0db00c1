#!/usr/bin/env python3
# tenants_torch.py — the PyTorch pair of the multi-tenant benchmark
# (tests/gpu/tenants.sh, docs/tenants.md): a latency-critical inference
# service (a small MLP, batch 1, requests at a fixed rate, latency per
# request = host time from the request's first operation to its result
# being ready) next to a best-effort training loop (a wider MLP, batch 512,
# Adam, iterations back to back). Eager mode: every kernel is a launch the
# shim sees (CUDA graphs would replay without launch calls).
#   tenants_torch.py --role lc --period-ms 10 --secs S --barrier DIR --lat-file F
#   tenants_torch.py --role be --secs S --barrier DIR
# Same barrier protocol as bench/tenants.cu. Prints
#   RESULT role=lc pid=P n=N p50_us=.. p99_us=.. p999_us=.. max_us=..
#   RESULT role=be pid=P iters=K secs=S ips=K/S
import argparse
import os
import time

import torch


def barrier(d, role):
    if not d:
        return time.time()
    open(os.path.join(d, "ready.%s.%d" % (role, os.getpid())), "w").close()
    go = os.path.join(d, "go")
    for _ in range(120 * 200):
        try:
            with open(go) as f:
                ns = int(f.read().strip() or 0)
            if ns > 0:
                start = ns * 1e-9
                while time.time() < start:
                    time.sleep(0.0002)
                return start
        except (OSError, ValueError):
            pass
        time.sleep(0.005)
    raise SystemExit("tenants_torch: no go file after 120 s")


def lc(a):
    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(512, 1024), torch.nn.GELU(), torch.nn.LayerNorm(1024),
        torch.nn.Linear(1024, 1024), torch.nn.GELU(), torch.nn.LayerNorm(1024),
        torch.nn.Linear(1024, 1024), torch.nn.GELU(), torch.nn.LayerNorm(1024),
        torch.nn.Linear(1024, 10)).to(dev).eval()
    x = torch.randn(1, 512, device=dev)
    with torch.no_grad():
        for _ in range(100):
            y = model(x)
        torch.cuda.synchronize()
        start = barrier(a.barrier, "lc")
        t0 = time.monotonic() - (time.time() - start)
        lat = []
        k = 0
        while True:
            at = t0 + k * a.period_ms * 1e-3
            k += 1
            if at - t0 > a.secs:
                break
            now = time.monotonic()
            if now < at:
                time.sleep(max(0.0, at - now - 0.0002))
                while time.monotonic() < at:
                    pass
            elif now - at > a.period_ms * 1e-3:
                continue  # behind: skip a slot
            s = time.monotonic()
            y = model(x)
            y.sum().item()  # the answer back on the host: the request is done
            e = time.monotonic()
            if s - t0 >= a.warm:
                lat.append((e - s) * 1e6)
    if a.lat_file:
        with open(a.lat_file, "w") as f:
            f.write("".join("%.1f\n" % v for v in lat))
    lat.sort()
    n = len(lat)

    def q(p):
        return lat[min(n - 1, int(p * n))] if n else 0.0

    print("RESULT role=lc pid=%d n=%d p50_us=%.1f p99_us=%.1f p999_us=%.1f max_us=%.1f"
          % (os.getpid(), n, q(0.5), q(0.99), q(0.999), lat[-1] if n else 0.0), flush=True)


def be(a):
    dev = torch.device("cuda")
    torch.manual_seed(1)
    model = torch.nn.Sequential(
        torch.nn.Linear(2048, 4096), torch.nn.ReLU(),
        torch.nn.Linear(4096, 4096), torch.nn.ReLU(),
        torch.nn.Linear(4096, 2048)).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    x = torch.randn(512, 2048, device=dev)
    t = torch.randn(512, 2048, device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x), t)
        loss.backward()
        opt.step()

    for _ in range(10):
        step()
    torch.cuda.synchronize()
    start = barrier(a.barrier, "be")
    frm, end = start + a.warm, start + a.secs
    iters = k = 0
    while True:
        step()
        k += 1
        if k % 8 == 0:
            torch.cuda.synchronize()  # bounded run-ahead, as a training loop logging its loss
        now = time.time()
        if now >= end:
            break
        if now >= frm:
            iters += 1
    torch.cuda.synchronize()
    print("RESULT role=be pid=%d iters=%d secs=%.2f ips=%.2f" % (os.getpid(), iters, end - frm, iters / (end - frm)),
          flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--role", default="lc")
    p.add_argument("--secs", type=float, default=10)
    p.add_argument("--warm", type=float, default=1)
    p.add_argument("--period-ms", type=float, default=10)
    p.add_argument("--barrier")
    p.add_argument("--lat-file")
    a = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = True
    (lc if a.role == "lc" else be)(a)


if __name__ == "__main__":
    main()
