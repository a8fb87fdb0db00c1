# torch_check.py OUT.pt — matmul, conv, elementwise/reduction and 5 training
# steps, deterministic; saves the results (torch.save) and prints a SHA-256 of
# every tensor so runs with and without the shim can be compared bit for bit.
import hashlib
import os
import sys

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.backends.cudnn.deterministic = True
torch.backends.cudnn.benchmark = False
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.use_deterministic_algorithms(True)
dev = "cuda"

out = {}
a = torch.randn(512, 512, device=dev)
b = torch.randn(512, 512, device=dev)
out["matmul"] = a @ b
out["matmul_half"] = (a.half() @ b.half()).float()
x = torch.randn(8, 3, 32, 32, device=dev)
conv = nn.Conv2d(3, 16, 3, padding=1).to(dev)
out["conv"] = conv(x).detach()
out["elementwise"] = torch.sigmoid(a) * 3 + torch.exp(-b.abs())
out["reduction"] = torch.stack([a.sum(), a.abs().max(), b.mean(dim=0).sum()])

model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 32 * 32, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
target = torch.randint(0, 10, (8,), device=dev)
losses = []
for step in range(5):
    loss = nn.functional.cross_entropy(model(x), target)
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.detach())
out["losses"] = torch.stack(losses)
for i, p in enumerate(model.parameters()):
    out[f"param{i}"] = p.detach()
torch.cuda.synchronize()
out = {k: v.cpu() for k, v in out.items()}
torch.save(out, sys.argv[1])
for k in sorted(out):
    print(k, hashlib.sha256(out[k].numpy().tobytes()).hexdigest()[:16])
print("losses", [round(float(l), 6) for l in out["losses"]])
