"""torch.compile (Inductor -> Triton) of an MLP block, forward and
backward: deterministic checksums of the output and gradients, then the
steady-state time of ITERS training steps."""
import hashlib, os, time
import torch
from steady import steady
torch.manual_seed(0)
torch.backends.cuda.matmul.allow_tf32 = False
m = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.GELU(), torch.nn.LayerNorm(2048),
                        torch.nn.Linear(2048, 512)).cuda()
f = torch.compile(m)
x = torch.randn(256, 512, device='cuda')
def step():
    out = f(x)
    loss = (out * out).mean()
    loss.backward()
    return out
out = step()
h = hashlib.sha256(out.detach().cpu().numpy().tobytes())
for p in m.parameters():
    h.update(p.grad.detach().cpu().numpy().tobytes())
print('checksum', h.hexdigest()[:16])
iters = int(os.environ.get('ITERS', '200'))
def one_round():
    for p in m.parameters():
        p.grad = None
    step()
steady(one_round, torch.cuda.synchronize, iters)
