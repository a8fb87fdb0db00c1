"""A torch.compile training loop for tests/gpu/attach_compile.sh: a small
MLP whose blocks all differ (width, activation), so inductor makes a few
distinct Triton kernels per block, forward and backward (each kernel its
own module, a cubin that carries its PTX): the "hundreds of kernels
loaded" case of a live attach. Deterministic (fixed seed and inputs,
deterministic algorithms), so a run with attaches and detaches in the
middle must print the same checksums as one without.

Prints "kernels N" (Triton kernels inductor made or loaded in this
process), "ready" after AC_WARM iterations (default 2: the compile), then
per iteration "iter I ms T checksum C" (T: the step's wall time, synchronized).
With AC_GRAPH=1 a small eager step (matmul, relu, sum) is captured once into
a CUDA graph before the loop and replayed in every iteration (its result in
the checksum): a graph instantiated before any attach.
Runs AC_ITERS iterations (default: until AC_STOP exists), sleeping
AC_SLEEP_MS (default 0) after each, outside the timed step. The gate file
AC_GATE, when set, holds a number: iteration I runs only once the number
is greater than I; while held the loop prints "held I" once and polls every
5 ms (the test's way to put an attach or a detach exactly between two
iterations)."""
import hashlib, os, sys, time
import torch
import torch.nn as nn
import torch.nn.functional as F

DIMS = [64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 384, 352, 320, 288, 256, 224, 192, 160, 128, 96, 64]
ACTS = [F.gelu, F.silu, torch.tanh, F.relu, F.mish, lambda t: t * torch.sigmoid(1.702 * t), F.softplus]


class Block(nn.Module):
    def __init__(self, din, dout, k):
        super().__init__()
        self.lin, self.norm, self.k = nn.Linear(din, dout), nn.LayerNorm(dout), k

    def forward(self, x):
        h = ACTS[self.k % len(ACTS)](self.norm(self.lin(x)))
        return h + x[..., : h.shape[-1]] if h.shape[-1] <= x.shape[-1] else h


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(Block(a, b, i) for i, (a, b) in enumerate(zip(DIMS, DIMS[1:])))

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return torch.softmax(x, dim=-1)


def gate(path, i):
    if not path:
        return
    said = False
    while True:
        try:
            with open(path) as f:
                if int(f.read().strip() or 0) > i:
                    return
        except (OSError, ValueError):
            pass
        if not said:
            print('held', i, flush=True)
            said = True
        time.sleep(0.005)


def triton_kernels():
    try:
        from torch._inductor import metrics
        return metrics.generated_kernel_count
    except Exception:
        return -1


def main():
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    dev = 'cuda'
    net = Net().to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    x = torch.rand(512, DIMS[0], device=dev)
    target = torch.rand(512, DIMS[-1], device=dev)
    step_model = torch.compile(net)
    graph = None
    if os.environ.get('AC_GRAPH') == '1':
        gx, gw = torch.rand(256, 256, device=dev), torch.rand(256, 256, device=dev)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                gy = torch.relu(gx @ gw).sum(0)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            gy = torch.relu(gx @ gw).sum(0)
    iters = int(os.environ.get('AC_ITERS', '0')) or 10**9
    warm = int(os.environ.get('AC_WARM', '2'))
    stop, gpath = os.environ.get('AC_STOP', ''), os.environ.get('AC_GATE', '')
    pause = float(os.environ.get('AC_SLEEP_MS', '0')) / 1000
    for i in range(iters):
        if i >= warm:
            gate(gpath, i)
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = (step_model(x) - target).pow(2).mean()
        loss.backward()
        opt.step()
        if graph is not None:
            graph.replay()
        torch.cuda.synchronize()
        ms = (time.perf_counter() - t0) * 1000
        h = hashlib.sha256(loss.detach().cpu().numpy().tobytes())
        if graph is not None:
            h.update(gy.cpu().numpy().tobytes())
        for p in (net.blocks[0].lin.weight, net.blocks[-1].lin.weight, net.blocks[len(DIMS) // 2].norm.weight):
            h.update(p.detach().cpu().numpy().tobytes())
        print('iter', i, 'ms', f'{ms:.3f}', 'checksum', h.hexdigest()[:16], flush=True)
        if i + 1 == warm:
            print('kernels', triton_kernels(), flush=True)
            print('ready', flush=True)
        if stop and os.path.exists(stop):
            break
        if pause:
            time.sleep(pause)
    print('done', flush=True)


if __name__ == '__main__':
    main()
