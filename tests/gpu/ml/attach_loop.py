"""A training-like loop for tests/gpu/attach.sh: each iteration runs three
hand-written Triton kernels (vector add, row softmax, tiled matmul: their
cubins carry PTX, so gpuext can instrument them) and one deterministic
PyTorch SGD step, then prints "iter N checksum HEX" (a hash of every output,
so a run with attaches and detaches in the middle must print the same
lines as one without). Runs ITERS iterations (env ATTACH_ITERS, default
3000), sleeping ATTACH_SLEEP_MS (default 5) between them, or until the file
ATTACH_STOP exists. Prints "ready" after the warm-up and "blocks_per_iter B"
(the Triton kernels' blocks per iteration, for the threadhist check)."""
import hashlib, os, sys, time
import torch, triton, triton.language as tl

@triton.jit
def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)

@triton.jit
def softmax_kernel(out, inp, stride, ncols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(inp + row * stride + cols, mask=cols < ncols, other=-float('inf'))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out + row * stride + cols, num / tl.sum(num, axis=0), mask=cols < ncols)

@triton.jit
def matmul_kernel(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        av = tl.load(a + rm[:, None] * K + (k + rk)[None, :])
        bv = tl.load(b + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(av, bv)
    tl.store(c + rm[:, None] * N + rn[None, :], acc)

N, ROWS, COLS, M = 1 << 16, 256, 512, 256
GRIDS = [(N // 1024,), (ROWS,), (M // 64, M // 64)]

def main():
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    dev = 'cuda'
    x = torch.rand(N, device=dev); y = torch.rand(N, device=dev)
    s = torch.rand(ROWS, COLS, device=dev)
    a = torch.rand(M, M, device=dev, dtype=torch.float16); b = torch.rand(M, M, device=dev, dtype=torch.float16)
    lin = torch.nn.Linear(COLS, 16).to(dev)
    opt = torch.optim.SGD(lin.parameters(), lr=0.01)
    o = torch.empty_like(x); so = torch.empty_like(s); c = torch.empty(M, M, device=dev, dtype=torch.float32)
    iters = int(os.environ.get('ATTACH_ITERS', '3000'))
    pause = float(os.environ.get('ATTACH_SLEEP_MS', '5')) / 1000
    stop = os.environ.get('ATTACH_STOP', '')
    blocks = sum(g[0] * (g[1] if len(g) > 1 else 1) for g in GRIDS)
    print('blocks_per_iter', blocks, flush=True)
    for i in range(iters):
        add_kernel[GRIDS[0]](x, y, o, N, BLOCK=1024)
        softmax_kernel[GRIDS[1]](so, s, s.stride(0), COLS, BLOCK=512)
        matmul_kernel[GRIDS[2]](a, b, c, M, M, M, BM=64, BN=64, BK=32)
        opt.zero_grad()
        loss = (lin(so) - o[:ROWS * 16].view(ROWS, 16)).pow(2).mean()
        loss.backward()
        opt.step()
        h = hashlib.sha256()
        for t in (o, so, c, lin.weight.detach(), loss.detach()):
            h.update(t.cpu().numpy().tobytes())
        print('iter', i, 'checksum', h.hexdigest()[:16], flush=True)
        if i == 2:
            print('ready', flush=True)
        if stop and os.path.exists(stop):
            break
        time.sleep(pause)
    print('done', flush=True)

if __name__ == '__main__':
    main()
