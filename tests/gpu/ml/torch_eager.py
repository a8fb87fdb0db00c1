"""PyTorch eager: a small GPT-2-like block trained for a few steps (cuBLAS,
cuDNN-free, PyTorch's own SASS kernels): checksum of the losses, time."""
import hashlib, os, time
import torch
from steady import steady
torch.manual_seed(0)
torch.backends.cuda.matmul.allow_tf32 = False
torch.use_deterministic_algorithms(True)
layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, dropout=0.0, batch_first=True).cuda()
opt = torch.optim.SGD(layer.parameters(), lr=0.01)
x = torch.randn(8, 128, 256, device='cuda')
def step():
    opt.zero_grad()
    loss = layer(x).pow(2).mean()
    loss.backward()
    opt.step()
    return loss
losses = [step().item() for _ in range(3)]
print('checksum', hashlib.sha256(repr(losses).encode()).hexdigest()[:16])
iters = int(os.environ.get('ITERS', '100'))
steady(step, torch.cuda.synchronize, iters)
